/**
 * A crash of `npm start` loses nothing it acknowledged: the whole process group is killed with
 * SIGKILL in the middle of a burst of metered requests, then started again on the same data folder
 * and database. One file per local runtime (crash.e2e.test.ts: Miniflare, crash-workerd.e2e.test.ts:
 * plain workerd), so the two run side by side.
 *
 * - every chat completion that got its answer (a JSON 200, or a stream that reached `[DONE]`) is
 *   in the Postgres ledger exactly once, and the tenant's balance equals the ledger's sum;
 * - a stream cut by the crash is billed for what it had delivered (its last checkpoint);
 * - an agent run survives with its events: status, and replay from the client's cursor;
 * - the per-minute rate window still counts the requests made before the crash.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'drizzle-orm'
import { afterAll, describe, expect, inject, it } from 'vitest'
import WebSocket from 'ws'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { type FakeOpenAIUpstream, startFakeOpenAIUpstream } from '../fakes/openai-upstream.ts'
import { createScratchDatabase } from '../support/scratch-postgres.ts'
import { launchStack, type RunningStack } from '../support/stack-process.ts'

const fixture = inject('stack')
const SLOW_TAG = 'crash-slow-stream'
const BURST = 160
const CONCURRENCY = 32

interface Acknowledged {
  readonly requestId: string
  readonly promptTokens: number
  readonly completionTokens: number
  /** When the client sent it (the server stamps the request at or after this). */
  readonly sentAt: number
}

function providers(upstream: FakeOpenAIUpstream): string {
  return JSON.stringify({
    version: 1,
    providers: [
      {
        id: 'fake',
        kind: 'openai-compatible',
        baseUrl: upstream.baseUrl,
        apiKeySecret: 'PROVIDER_FAKE_API_KEY',
        models: { 'svc-cell': 'fake-cell' },
      },
    ],
    routes: { 'svc-cell': ['fake'] },
  })
}

/** One chat completion; resolves with its usage when the client got the whole answer, else null. */
async function complete(
  stack: RunningStack,
  requestId: string,
  stream: boolean,
): Promise<Acknowledged | null> {
  const sentAt = Date.now()
  try {
    const res = await fetch(`${stack.baseUrl}/svc/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.credentials.liveKey}`,
        'content-type': 'application/json',
        'x-request-id': requestId,
      },
      body: JSON.stringify({
        model: 'svc-cell',
        messages: [{ role: 'user', content: `Say something about request ${requestId}` }],
        max_tokens: 64,
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      }),
    })
    if (res.status !== 200) return null
    if (!stream) {
      const body = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }
      return {
        requestId,
        promptTokens: body.usage.prompt_tokens,
        completionTokens: body.usage.completion_tokens,
        sentAt,
      }
    }
    const text = await res.text()
    if (!text.trimEnd().endsWith('data: [DONE]')) return null
    const usage = text
      .split('\n\n')
      .filter((event) => event.startsWith('data: {'))
      .map(
        (event) =>
          JSON.parse(event.slice(6)) as { usage?: { prompt_tokens: number; completion_tokens: number } },
      )
      .find((chunk) => chunk.usage)?.usage
    if (!usage) throw new Error(`stream ${requestId} ended without a usage chunk`)
    return { requestId, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, sentAt }
  } catch {
    // The crash cut the connection: not acknowledged.
    return null
  }
}

interface AgentLine {
  seq: number
  type: string
}

async function postTurn(stack: RunningStack, body: Record<string, unknown>): Promise<AgentLine[]> {
  const res = await fetch(`${stack.baseUrl}/svc/code/v1/turns`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.credentials.testKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  expect(res.status).toBe(200)
  return (await res.text())
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as AgentLine)
    .filter((line) => line.type !== 'heartbeat')
}

async function ledger(stack: RunningStack, tenantId: string) {
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(stack.database, { max: 1 })
  try {
    const rows = await database.db.execute<{
      request_id: string
      mode: string
      prompt_tokens: number
      completion_tokens: number
      estimated: boolean
    }>(
      sql`select request_id, mode, prompt_tokens, completion_tokens, estimated from usage_ledger where tenant_id = ${tenantId}`,
    )
    const balance = await database.db.execute<{ tokens_used: string | number }>(
      sql`select tokens_used from tenant_balances where tenant_id = ${tenantId}`,
    )
    return { rows: rows.rows, tokensUsed: Number(balance.rows[0]?.tokens_used ?? 0) }
  } finally {
    await database.close()
  }
}

export function crashScenario(runtime: 'miniflare' | 'workerd'): void {
  describe(`SIGKILL of npm start (${runtime}, ${fixture.kind})`, () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), `svc-e2e-crash-${runtime}-`))
    let stack: RunningStack | null = null
    let upstream: FakeOpenAIUpstream | null = null
    let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | null = null

    afterAll(async () => {
      await stack?.stop()
      await upstream?.stop()
      await scratch?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    })

    it('loses no acknowledged usage, no run and no rate window', async () => {
      upstream = await startFakeOpenAIUpstream()
      upstream.script({ match: { contains: SLOW_TAG }, fault: { kind: 'slow', delayMs: 150 } })
      scratch = fixture.kind === 'postgres' ? await createScratchDatabase() : null
      const launch = () =>
        launchStack({
          dataDir,
          runtime,
          ...(scratch ? { databaseUrl: scratch.url } : {}),
          env: {
            MODEL_PROVIDERS: providers(upstream!),
            PROVIDER_FAKE_API_KEY: upstream!.apiKey ?? '',
            RATE_LIMIT_ORPHAN_AFTER_MS: '2000',
          },
        })
      stack = await launch()
      const first = stack
      const tenantId = first.credentials.tenantId

      // An agent run, completed before the crash.
      const runId = crypto.randomUUID()
      const turn = {
        protocol: 'svc.code.v1',
        session_id: 'crash',
        run_id: runId,
        turn_id: 'turn-1',
        model: 'svc-comb',
        mode: 'edit',
        request: 'Say hello',
        workspace: {},
        transcript: [],
        capabilities: {},
      }
      const events = await postTurn(first, turn)
      const lastSeq = events.at(-1)!.seq
      expect(events.at(-1)!.type).toBe('turn.completed')

      // A slow stream, cut by the crash after it has delivered text for a few checkpoints.
      const slowId = `crash-${runtime}-slow`
      const slow = await fetch(`${first.baseUrl}/svc/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${first.credentials.liveKey}`,
          'content-type': 'application/json',
          'x-request-id': slowId,
        },
        body: JSON.stringify({
          model: 'svc-cell',
          messages: [{ role: 'user', content: `${SLOW_TAG}: ${'and then '.repeat(40)}the end` }],
          max_tokens: 400,
          stream: true,
        }),
      })
      expect(slow.status).toBe(200)
      const slowReader = slow.body!.getReader()
      let slowText = ''
      const slowStarted = Date.now()
      while (Date.now() - slowStarted < 3_000) {
        const { value, done } = await slowReader.read()
        if (done) break
        slowText += new TextDecoder().decode(value)
      }
      expect(slowText).not.toContain('[DONE]')

      // The burst, with SIGKILL at a random moment inside it: once a few requests were
      // acknowledged (however slow the machine), after a random further 0-800 ms.
      const acknowledged: Acknowledged[] = []
      let next = 0
      let armKill: () => void = () => {}
      const killed = new Promise<void>((resolve) => {
        armKill = () => {
          armKill = () => {}
          setTimeout(() => void first.kill().then(resolve), Math.floor(Math.random() * 800))
        }
      })
      const worker = async () => {
        while (next < BURST) {
          const i = next++
          const result = await complete(first, `crash-${runtime}-${i}`, i % 2 === 1)
          if (result) acknowledged.push(result)
          if (acknowledged.length >= 8) armKill()
        }
        // Everything answered before the kill: kill now (the check still holds).
        armKill()
      }
      await Promise.all([...Array.from({ length: CONCURRENCY }, worker), killed])
      await slowReader.cancel().catch(() => {})
      expect(acknowledged.length).toBeGreaterThan(0)

      stack = await launch()
      const second = stack

      // The run and its events, replayable from the client's cursor.
      const status = await fetch(`${second.baseUrl}/svc/agents/runs/${runId}`, {
        headers: { authorization: `Bearer ${second.credentials.testKey}` },
      })
      expect(status.status).toBe(200)
      expect(await status.json()).toMatchObject({ id: runId, state: 'completed', last_seq: lastSeq })
      const replay = await postTurn(second, { ...turn, cursor: 2 })
      expect(replay.map((e) => e.seq)).toEqual(events.filter((e) => e.seq > 2).map((e) => e.seq))

      // The rate window still holds at least the acknowledged requests of the last minute: those
      // sent within it (with 5 s of slack for the server's clock reading after ours). On a
      // machine so loaded that the restart took most of a minute this checks fewer rows.
      const probe = await complete(second, `crash-${runtime}-probe`, false)
      expect(probe).not.toBeNull()
      const windowSentAt = Date.now()
      const inWindow = acknowledged.filter((a) => a.sentAt > windowSentAt - 55_000).length
      const windowRes = await fetch(`${second.baseUrl}/svc/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${second.credentials.liveKey}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({
          model: 'svc-cell',
          messages: [{ role: 'user', content: 'window' }],
          max_tokens: 8,
        }),
      })
      const limit = Number(windowRes.headers.get('x-ratelimit-limit-requests'))
      const remaining = Number(windowRes.headers.get('x-ratelimit-remaining-requests'))
      expect(limit - remaining).toBeGreaterThanOrEqual(inWindow + 2)

      // Every acknowledged request exactly once in Postgres, the cut stream billed, balance = sum.
      const expected = new Map(acknowledged.map((a) => [a.requestId, a]))
      let seen: Awaited<ReturnType<typeof ledger>> = { rows: [], tokensUsed: 0 }
      for (let attempt = 0; attempt < 120; attempt++) {
        seen = await ledger(second, tenantId)
        const ids = new Set(seen.rows.map((r) => r.request_id))
        if ([...expected.keys(), slowId].every((id) => ids.has(id))) break
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
      for (const [requestId, usage] of expected) {
        const rows = seen.rows.filter((r) => r.request_id === requestId)
        expect(rows, requestId).toHaveLength(1)
        expect(rows[0]).toMatchObject({
          mode: 'live',
          prompt_tokens: usage.promptTokens,
          completion_tokens: usage.completionTokens,
          estimated: false,
        })
      }
      // A second row for one request would be recorded under a renamed id (`<id>~<time>`).
      expect(seen.rows.filter((r) => r.request_id.includes('~'))).toEqual([])
      const cut = seen.rows.filter((r) => r.request_id === slowId)
      expect(cut).toHaveLength(1)
      expect(cut[0]!.estimated).toBe(true)
      expect(cut[0]!.completion_tokens).toBeGreaterThan(0)
      // Read together: requests the crash interrupted after their row was stored may still flush.
      await expect
        .poll(
          async () => {
            const now = await ledger(second, tenantId)
            const sum = now.rows
              .filter((r) => r.mode === 'live')
              .reduce((total, r) => total + r.prompt_tokens + r.completion_tokens, 0)
            return now.tokensUsed - sum
          },
          { timeout: 15_000 },
        )
        .toBe(0)
    }, 300_000)
  })
}
