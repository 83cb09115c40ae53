/**
 * The agent plane against the running stack (gateway -> code worker -> AgentRun objects), driven
 * the way users drive it: the reference client (scripts/agent-cli.ts, in-process and as the
 * `npm run agent` command) and plain HTTP. Test keys: the simulated model, the built-in search.
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  type AgentEvent,
  NdjsonEventParser,
  readEvents,
  sequenceProblems,
} from '../../durable-objects/agent-run/agent-events.ts'
import { AgentClient, type AgentClientOptions } from '../../scripts/agent-cli/agent-client.ts'
import { ROOT } from '../../scripts/workers.ts'
import { upstreamControl } from './fakes/openai-upstream.fake.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack()
const url = (p: string) => `${stack.baseUrl}${p}`
const upstream = upstreamControl(String(stack.fakes['openai-upstream']?.controlUrl))
const tag = () => `[agent-${crypto.randomUUID().slice(0, 8)}]`
const workspaces: string[] = []

afterAll(() => {
  for (const dir of workspaces) rmSync(dir, { recursive: true, force: true })
})

/** A fresh workspace folder, always named `project` (its name reaches the model's prompt). */
function workspace(files: Record<string, string> = { 'README.md': '# demo\n' }): string {
  const parent = mkdtempSync(path.join(os.tmpdir(), 'svc-agent-ws-'))
  workspaces.push(parent)
  const dir = path.join(parent, 'project')
  mkdirSync(dir)
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content)
  return dir
}

function client(options: Partial<AgentClientOptions> = {}): AgentClient {
  return new AgentClient({
    baseUrl: stack.baseUrl,
    apiKey: stack.tenantA.testKey,
    workspace: workspace(),
    approve: 'always',
    reconnectDelayMs: 0,
    sessionId: 'e2e-session',
    ...options,
  })
}

function turnBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    protocol: 'svc.code.v1',
    session_id: 'e2e',
    run_id: crypto.randomUUID(),
    turn_id: 'turn-1',
    model: 'svc-comb',
    mode: 'edit',
    request: 'Say hello',
    workspace: {},
    transcript: [],
    capabilities: {},
    ...overrides,
  }
}

async function post(body: Record<string, unknown>, key = stack.tenantA.testKey): Promise<Response> {
  return fetch(url('/svc/code/v1/turns'), {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

async function eventsOf(response: Response): Promise<AgentEvent[]> {
  const out: AgentEvent[] = []
  for await (const event of readEvents(response.body!)) out.push(event)
  return out
}

/** What must be equal between two runs of the same script: ids of runs and turns and times differ. */
function comparable(events: AgentEvent[]): unknown[] {
  return events.map((e) => {
    const data = { ...(e.data as Record<string, unknown>) }
    delete data.expires_at
    return { seq: e.seq, type: e.type, data }
  })
}

/** Mulberry32: reproducible cut points (the seed is in the test name). */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * A fetch whose turn responses break off after a random number of bytes (at most `maxCuts`
 * times per turn body), like a connection dropped by a proxy or a phone changing networks.
 */
function cuttingFetch(rng: () => number, maxCuts: number): { fetch: typeof fetch; cuts: () => number } {
  let cuts = 0
  const perTurn = new Map<string, number>()
  const wrapped: typeof fetch = async (input, init) => {
    const response = await fetch(input, init)
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { turn_id?: string }) : {}
    const turnId = body.turn_id
    if (!turnId || !response.ok || !response.body) return response
    const done = perTurn.get(turnId) ?? 0
    if (done >= maxCuts || rng() < 0.25) return response
    perTurn.set(turnId, done + 1)
    cuts += 1
    const cutAt = Math.floor(rng() * 3_000)
    const reader = response.body.getReader()
    let sent = 0
    const cut = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done: finished, value } = await reader.read()
        if (finished) return controller.close()
        if (sent + value.byteLength >= cutAt) {
          controller.enqueue(value.slice(0, Math.max(0, cutAt - sent)))
          await reader.cancel()
          controller.error(new TypeError('connection reset by peer (injected)'))
          return
        }
        sent += value.byteLength
        controller.enqueue(value)
      },
      cancel: (reason) => reader.cancel(reason),
    })
    return new Response(cut, { status: response.status, headers: response.headers })
  }
  return { fetch: wrapped, cuts: () => cuts }
}

/** Two requests: an edit that needs approval, then a read the client runs at once. */
async function script(c: AgentClient): Promise<void> {
  const first = await c.send('Please use write_file to save the notes')
  expect(first.terminal).toMatchObject({ type: 'turn.completed', data: { stop_reason: 'end_turn' } })
  const second = await c.send('Now call read_file on README.md')
  expect(second.terminal).toMatchObject({ type: 'turn.completed', data: { stop_reason: 'end_turn' } })
}

describe(`agent turns through the gateway (${stack.kind})`, () => {
  it('runs a multi-turn run with an approved edit and a client tool, and the edit lands in the workspace', async () => {
    // The simulated model writes "test content" to "test path": here that file exists already.
    const dir = workspace({ 'README.md': '# demo\n', 'test path': 'old content\n' })
    const asked: string[] = []
    const c = client({
      workspace: dir,
      approve: async (request) => {
        asked.push(`${request.name}: ${request.reason}`)
        return true
      },
    })
    await script(c)
    expect(asked).toEqual([
      'write_file: write_file (edits files) needs approval: edit mode runs read-only tools at once and asks before anything else',
    ])
    expect(sequenceProblems(c.events)).toEqual([])
    const types = c.events.map((e) => e.type)
    expect(types.filter((t) => t === 'turn.started')).toHaveLength(4)
    expect(types.filter((t) => t === 'turn.completed')).toHaveLength(4)
    const sha = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`
    const diff =
      '--- a/test path\n+++ b/test path\n@@ -1 +1 @@\n-old content\n+test content\n\\ No newline at end of file\n'
    const delta = c.events.find((e) => e.type === 'file.delta')!
    expect(delta.data).toEqual({
      call_id: expect.stringMatching(/^call_\d+$/),
      path: 'test path',
      op: 'modify',
      diff,
      base_hash: sha('old content\n'),
      new_hash: sha('test content'),
    })
    expect(readFileSync(path.join(dir, 'test path'), 'utf8')).toBe('test content')
    expect(c.events.find((e) => e.type === 'turn.diff')?.data).toEqual({
      diff,
      files: [{ path: 'test path', op: 'modify' }],
    })

    const status = await fetch(url(`/svc/agents/runs/${c.runId}`), {
      headers: { authorization: `Bearer ${stack.tenantA.testKey}` },
    })
    expect(status.status).toBe(200)
    const record = (await status.json()) as Record<string, unknown>
    expect(record).toMatchObject({
      object: 'agent.run',
      id: c.runId,
      state: 'completed',
      last_seq: c.lastSeq,
      turn_count: 4,
      test_mode: true,
      pending_approvals: [],
      pending_tool_calls: [],
      usage: { cost_usd: 0 },
    })
  })

  it.each([
    ['manual', 'awaiting_approval', 'required'],
    ['plan', 'end_turn', 'none'],
    ['edit', 'awaiting_approval', 'required'],
    ['auto', 'awaiting_client_tool', 'none'],
  ])('%s mode decides write_file: %s', async (mode, stop, approval) => {
    const response = await post(
      turnBody({
        mode,
        request: 'call write_file',
        client_tools: [
          {
            name: 'write_file',
            description: 'Writes a file',
            input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
            tags: ['edit'],
          },
        ],
      }),
    )
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8')
    const events = await eventsOf(response)
    expect(events.find((e) => e.type === 'tool_call.requested')?.data).toMatchObject({ approval })
    expect(events.at(-1)).toMatchObject({ type: 'turn.completed', data: { stop_reason: stop } })
    if (mode === 'plan') {
      expect(events.find((e) => e.type === 'tool_call.updated')?.data).toMatchObject({
        status: 'denied',
        error: { code: 'refused_by_mode' },
      })
    }
  })

  it('reassembles the exact event log when connections are cut at random points (30 runs)', async () => {
    const reference = client()
    await script(reference)
    expect(sequenceProblems(reference.events)).toEqual([])
    let totalCuts = 0
    for (let seed = 1; seed <= 30; seed++) {
      const cutter = cuttingFetch(random(seed), 3)
      const c = client({ fetch: cutter.fetch })
      await script(c)
      totalCuts += cutter.cuts()
      expect(sequenceProblems(c.events), `seed ${seed}`).toEqual([])
      // No gap, no duplicate: exactly what the server stored (timestamps included)...
      expect(c.events, `seed ${seed}`).toEqual(await c.replay(fetch))
      // ...and the same run as one that was never cut.
      expect(comparable(c.events), `seed ${seed}`).toEqual(comparable(reference.events))
    }
    expect(totalCuts).toBeGreaterThan(30)
  })

  it('answers a reattach from any cursor with exactly the events after it', async () => {
    const body = turnBody()
    const full = await eventsOf(await post(body))
    expect(full.at(-1)?.type).toBe('turn.completed')
    for (const cursor of [0, 1, Math.floor(full.length / 2), full.length]) {
      const replay = await eventsOf(await post({ ...body, cursor }))
      expect(replay).toEqual(full.filter((e) => e.seq > cursor))
    }
    const past = await post({ ...body, cursor: full.length + 1 })
    expect(past.status).toBe(400)
    expect(await past.json()).toMatchObject({ error: { code: 'cursor_out_of_range', param: 'cursor' } })
    const reused = await post({ ...body, request: 'Something else' })
    expect(reused.status).toBe(409)
    expect(await reused.json()).toMatchObject({ error: { code: 'turn_id_reused', type: 'conflict_error' } })
  })

  it('keeps runs to their account: another tenant gets the same 404 as for a run that does not exist', async () => {
    const body = turnBody()
    await eventsOf(await post(body))
    const runId = body.run_id as string
    for (const key of [stack.tenantB.testKey, stack.tenantB.liveKey, stack.tenantA.liveKey]) {
      const other = await fetch(url(`/svc/agents/runs/${runId}`), {
        headers: { authorization: `Bearer ${key}` },
      })
      const missing = await fetch(url(`/svc/agents/runs/${crypto.randomUUID()}`), {
        headers: { authorization: `Bearer ${key}` },
      })
      expect(other.status).toBe(404)
      expect(missing.status).toBe(404)
      const a = (await other.json()) as { error: Record<string, unknown> }
      const b = (await missing.json()) as { error: Record<string, unknown> }
      expect(a.error).toEqual(b.error)
      const cancel = await fetch(url(`/svc/agents/runs/${runId}`), {
        method: 'DELETE',
        headers: { authorization: `Bearer ${key}` },
      })
      expect(cancel.status).toBe(404)
    }
    // Another account posting a turn with that run_id gets a run of its own, not this one.
    const theirs = await eventsOf(await post({ ...body, request: 'mine' }, stack.tenantB.testKey))
    expect(theirs.map((e) => e.seq)[0]).toBe(1)
    const mine = await fetch(url(`/svc/agents/runs/${runId}`), {
      headers: { authorization: `Bearer ${stack.tenantA.testKey}` },
    })
    expect(((await mine.json()) as { turn_count: number }).turn_count).toBe(1)
  })

  it('cancels a waiting run (200) and refuses to cancel it again or a completed one (409)', async () => {
    const waiting = turnBody({
      request: 'call write_file',
      client_tools: [
        { name: 'write_file', description: 'w', input_schema: { type: 'object' }, tags: ['edit'] },
      ],
    })
    const events = await eventsOf(await post(waiting))
    expect(events.at(-1)?.data).toMatchObject({ stop_reason: 'awaiting_approval' })
    const del = () =>
      fetch(url(`/svc/agents/runs/${waiting.run_id}`), {
        method: 'DELETE',
        headers: { authorization: `Bearer ${stack.tenantA.testKey}` },
      })
    const first = await del()
    expect(first.status).toBe(200)
    expect(await first.json()).toMatchObject({ state: 'cancelled', pending_approvals: [] })
    const second = await del()
    expect(second.status).toBe(409)
    expect(await second.json()).toMatchObject({
      error: { code: 'run_terminal', message: 'the run is already cancelled and cannot be cancelled' },
    })
    const next = await post({ ...waiting, turn_id: 'turn-2', request: 'go on' })
    expect(next.status).toBe(409)
    expect(await next.json()).toMatchObject({ error: { code: 'run_cancelled' } })

    const done = turnBody()
    await eventsOf(await post(done))
    const completed = await fetch(url(`/svc/agents/runs/${done.run_id}`), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${stack.tenantA.testKey}` },
    })
    expect(completed.status).toBe(409)
  })

  it('refuses bad requests with the spec statuses and clear messages', async () => {
    const bad = await post(turnBody({ protocol: 'svc.code.v2' }))
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { code: 'invalid_turn_request', param: 'protocol' } })

    const thinking = await post(turnBody({ model: 'svc-cell', enable_thinking: true }))
    expect(thinking.status).toBe(400)
    expect(await thinking.json()).toMatchObject({
      error: { code: 'thinking_not_supported', param: 'enable_thinking' },
    })

    const noKey = await fetch(url('/svc/code/v1/turns'), { method: 'POST', body: '{}' })
    expect(noKey.status).toBe(401)

    // Tenant B is on Pro, which does not include svc-hive: 403 with the action-required body.
    const model = await post(turnBody({ model: 'svc-hive' }), stack.tenantB.testKey)
    expect(model.status).toBe(403)
    expect(await model.json()).toMatchObject({
      error: { code: 'model_access_required', type: 'permission_error' },
      svc_upgrade: {
        schema_version: '2026-07-31',
        reason: 'model_access_required',
        current_plan: 'pro',
        required_plan: 'team',
      },
    })

    const badRunId = await fetch(url('/svc/agents/runs/not-a-uuid'), {
      headers: { authorization: `Bearer ${stack.tenantA.testKey}` },
    })
    expect(badRunId.status).toBe(400)
    expect(await badRunId.json()).toMatchObject({ error: { code: 'invalid_run_id', param: 'runId' } })
  })

  it('documents its routes in /openapi.json from the schemas it validates with', async () => {
    const doc = (await (await fetch(url('/openapi.json'))).json()) as {
      paths: Record<
        string,
        Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>
      >
    }
    const turns = doc.paths['/svc/code/v1/turns']?.post
    expect(JSON.stringify(turns?.requestBody)).toContain('svc.code.v1')
    expect(Object.keys(doc.paths['/svc/agents/runs/{runId}'] ?? {}).sort()).toEqual(['delete', 'get'])
    expect(doc.paths['/svc/code/v1/search']?.post).toBeDefined()
    expect(Object.keys(doc.paths['/svc/code/v1/transcribe']?.post?.requestBody?.content ?? {})).toEqual([
      'multipart/form-data',
    ])
  })

  it('puts the rate-limit headers of the tenant on a turn response', async () => {
    const response = await post(turnBody())
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('600')
    expect(Number(response.headers.get('x-ratelimit-remaining-requests'))).toBeLessThan(600)
    await eventsOf(response)
  })
})

describe(`live-key turns through the fake model provider (${stack.kind})`, () => {
  /** Reads a stream event by event. */
  function eventReader(response: Response) {
    const parser = new NdjsonEventParser()
    const reader = response.body!.getReader()
    const queue: AgentEvent[] = []
    const seen: AgentEvent[] = []
    return {
      seen,
      async next(): Promise<AgentEvent | null> {
        while (queue.length === 0) {
          const { done, value } = await reader.read()
          if (done) return null
          queue.push(...parser.push(value))
        }
        const event = queue.shift()!
        seen.push(event)
        return event
      },
      async until(type: AgentEvent['type']): Promise<AgentEvent> {
        for (;;) {
          const event = await this.next()
          if (!event) throw new Error(`the stream ended before ${type}`)
          if (event.type === type) return event
        }
      },
    }
  }

  it('cancels a turn while it streams: 200, the stream ends with turn.cancelled, the upstream call is aborted', async () => {
    const marker = tag()
    await upstream.script({ match: { contains: marker }, fault: { kind: 'slow', delayMs: 400 }, times: 1 })
    const body = turnBody({ model: 'svc-cell', request: `Write a long answer ${marker}` })
    const response = await post(body, stack.tenantA.liveKey)
    expect(response.status).toBe(200)
    const stream = eventReader(response)
    await stream.until('message.delta')
    const cancel = await fetch(url(`/svc/agents/runs/${body.run_id}`), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${stack.tenantA.liveKey}` },
    })
    expect(cancel.status).toBe(200)
    expect(await cancel.json()).toMatchObject({ state: 'cancelled', last_turn: { state: 'cancelled' } })
    const last = await stream.until('turn.cancelled')
    expect(last.data).toEqual({
      reason: 'cancelled with DELETE /svc/agents/runs/{runId}',
      cancelled_by: 'user',
    })
    expect(await stream.next()).toBeNull()
    expect(sequenceProblems(stream.seen)).toEqual([])
    await expect
      .poll(async () => (await upstream.requests(marker))[0]?.closedEarly, { timeout: 5_000 })
      .toBe(true)

    const again = await fetch(url(`/svc/agents/runs/${body.run_id}`), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${stack.tenantA.liveKey}` },
    })
    expect(again.status).toBe(409)
  })

  it('retries from the alarm when every provider failed, keeping the connection open, then completes', async () => {
    const marker = tag()
    // The provider layer tries twice per model call (MODEL_PROVIDERS retry.maxRounds 2): both fail.
    await upstream.script({ match: { contains: marker }, fault: { kind: 'status', status: 503 }, times: 2 })
    const body = turnBody({ model: 'svc-cell', request: `Hello ${marker}` })
    const response = await post(body, stack.tenantA.liveKey)
    const stream = eventReader(response)
    const retry = await stream.until('progress')
    expect(retry.data).toMatchObject({ phase: 'retry' })
    expect((retry.data as { message: string }).message).toMatch(/retrying in 2 s \(attempt 2 of 3\)$/)
    const done = await stream.until('turn.completed')
    expect(done.data).toEqual({ stop_reason: 'end_turn' })
    const text = stream.seen
      .filter((e) => e.type === 'message.delta')
      .map((e) => (e.data as { delta: string }).delta)
      .join('')
    expect(text).toContain('Fake upstream fake-cell reply')
    expect(await upstream.requests(marker)).toHaveLength(3)
    const status = await fetch(url(`/svc/agents/runs/${body.run_id}`), {
      headers: { authorization: `Bearer ${stack.tenantA.liveKey}` },
    })
    const record = (await status.json()) as {
      usage: { cost_usd: number; total_tokens: number }
      test_mode: boolean
    }
    expect(record.test_mode).toBe(false)
    expect(record.usage.total_tokens).toBeGreaterThan(0)
    expect(record.usage.cost_usd).toBeGreaterThan(0)
  }, 20_000)
})

describe(`npm run agent (${stack.kind})`, () => {
  it('runs a task end to end from the command line, scriptable with --json and --approve', async () => {
    const dir = workspace({ 'README.md': '# cli\n' })
    const child = spawn(
      'npm',
      [
        'run',
        'agent',
        '--silent',
        '--',
        '--base-url',
        stack.baseUrl,
        '--key',
        stack.tenantA.testKey,
        '--workspace',
        dir,
        '--approve',
        'always',
        '--json',
        'Please use write_file to save the notes',
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString()
    })
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(code, stderr).toBe(0)
    const events = new NdjsonEventParser().push(stdout)
    expect(sequenceProblems(events)).toEqual([])
    expect(events.filter((e) => e.type === 'approval.resolved')[0]?.data).toMatchObject({
      decision: 'approve',
      decided_by: 'user',
    })
    expect(events.at(-1)).toMatchObject({ type: 'turn.completed', data: { stop_reason: 'end_turn' } })
    expect(existsSync(path.join(dir, 'test path'))).toBe(true)
    expect(stderr).toMatch(/run [0-9a-f-]{36}, last seq \d+/)
  }, 60_000)
})
