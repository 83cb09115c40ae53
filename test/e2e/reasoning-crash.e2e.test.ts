/**
 * A crash of `npm start` in the middle of reasoning jobs loses no acknowledged job and bills none
 * twice: jobs are created (202 = acknowledged) with a live key against a slow fake upstream, the
 * whole process group is killed with SIGKILL while they are generating candidates, and the stack is
 * started again on the same data folder and database. Then:
 *
 * - every acknowledged job completes, on its own (its object's alarm resumes it), with its content;
 * - its Idempotency-Key still names it (the same request answers 200 with the same job);
 * - the usage ledger holds each job's usage exactly once (request `reasoning-job:<id>`), equal to
 *   what the job reports, and no reservation is left open.
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
const JOBS = 6
const TERMINAL = ['completed', 'classical_fallback', 'failed', 'cancelled']

interface Job {
  id: string
  status: string
  prompt?: string
  result?: string
  usage: { prompt_tokens: number; completion_tokens: number; model_calls: number }
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
        models: { 'svc-hive': 'fake-hive' },
      },
    ],
    routes: { 'svc-hive': ['fake'] },
  })
}

async function ledger(stack: RunningStack, tenantId: string) {
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(stack.database, { max: 1 })
  try {
    const rows = await database.db.execute<{
      request_id: string
      prompt_tokens: number
      completion_tokens: number
      estimated: boolean
    }>(
      sql`select request_id, prompt_tokens, completion_tokens, estimated from usage_ledger
          where tenant_id = ${tenantId} and request_id like 'reasoning-job:%'`,
    )
    return rows.rows
  } finally {
    await database.close()
  }
}

describe(`SIGKILL of npm start with reasoning jobs in flight (${fixture.kind})`, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-reasoning-crash-'))
  let stack: RunningStack | null = null
  let upstream: FakeOpenAIUpstream | null = null
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | null = null

  afterAll(async () => {
    await stack?.stop()
    await upstream?.stop()
    await scratch?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('every acknowledged job completes after the restart, its key still names it, its usage is billed once', async () => {
    upstream = await startFakeOpenAIUpstream()
    // Slow candidates: the kill falls while the jobs are generating them.
    upstream.script({ match: { contains: 'crash-reasoning' }, fault: { kind: 'slow', delayMs: 1500 } })
    scratch = fixture.kind === 'postgres' ? await createScratchDatabase() : null
    const launch = () =>
      launchStack({
        dataDir,
        ...(scratch ? { databaseUrl: scratch.url } : {}),
        env: {
          MODEL_PROVIDERS: providers(upstream!),
          PROVIDER_FAKE_API_KEY: upstream!.apiKey ?? '',
          RATE_LIMIT_ORPHAN_AFTER_MS: '2000',
          REASONING_RETRY_BASE_MS: '200',
        },
      })
    stack = await launch()
    const first = stack
    const key = first.credentials.liveKey
    const jobsUrl = (s: RunningStack) => `${s.baseUrl}/svc/quantum-reasoning/jobs`
    const request = (i: number) =>
      JSON.stringify({
        prompt: `crash-reasoning ${i}: which is larger, 2^10 or 10^3?`,
        model: 'svc-hive',
        product: 'simulation_cloud',
      })
    const post = (s: RunningStack, i: number, idempotencyKey: string) =>
      fetch(jobsUrl(s), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': idempotencyKey,
        },
        body: request(i),
      })
    const read = async (s: RunningStack, id: string) =>
      (
        (await (
          await fetch(`${jobsUrl(s)}/${id}`, { headers: { authorization: `Bearer ${key}` } })
        ).json()) as {
          job: Job
        }
      ).job

    const acknowledged: { id: string; idempotencyKey: string; i: number }[] = []
    for (let i = 0; i < JOBS; i++) {
      const idempotencyKey = `crash-reasoning-${crypto.randomUUID()}`
      const res = await post(first, i, idempotencyKey)
      expect(res.status).toBe(202)
      acknowledged.push({ id: ((await res.json()) as { job: Job }).job.id, idempotencyKey, i })
    }
    // Kill once some candidates reached the upstream, after a random further 0-400 ms.
    const reached = () =>
      upstream!.requests.filter((r) => JSON.stringify(r.body).includes('crash-reasoning')).length
    for (let i = 0; i < 100 && reached() < 2; i++) await new Promise((r) => setTimeout(r, 50))
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 400)))
    const before = await Promise.all(acknowledged.map((a) => read(first, a.id)))
    await first.kill()
    // At least one job was cut off mid-way (not finished when the process group died).
    expect(before.some((j) => !TERMINAL.includes(j.status))).toBe(true)

    stack = await launch()
    const second = stack
    const done: Job[] = []
    for (const a of acknowledged) {
      let job = await read(second, a.id)
      for (let t = 0; t < 600 && !TERMINAL.includes(job.status); t++) {
        await new Promise((r) => setTimeout(r, 100))
        job = await read(second, a.id)
      }
      expect(job.status, a.id).toBe('completed')
      expect(job.prompt).toBe(JSON.parse(request(a.i)).prompt)
      expect(job.result).toBeTypeOf('string')
      expect(job.usage.model_calls).toBe(4)
      done.push(job)
      // The key survived the crash: the same request is a replay of this job.
      const replay = await post(second, a.i, a.idempotencyKey)
      expect(replay.status).toBe(200)
      expect(((await replay.json()) as { job: Job }).job.id).toBe(a.id)
    }

    // Each job's usage in the ledger once, exactly what the job reports.
    const tenantId = second.credentials.tenantId
    await expect
      .poll(async () => (await ledger(second, tenantId)).length, { timeout: 30_000, interval: 500 })
      .toBeGreaterThanOrEqual(JOBS)
    const rows = await ledger(second, tenantId)
    for (const job of done) {
      const mine = rows.filter((r) => r.request_id.startsWith(`reasoning-job:${job.id}`))
      expect(mine, job.id).toHaveLength(1)
      expect(mine[0]).toMatchObject({
        prompt_tokens: job.usage.prompt_tokens,
        completion_tokens: job.usage.completion_tokens,
        estimated: false,
      })
    }
    expect(rows).toHaveLength(JOBS)
  }, 300_000)
})
