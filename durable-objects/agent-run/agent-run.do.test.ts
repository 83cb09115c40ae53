/**
 * AgentRun inside the code worker (its wrangler config): real SQLite storage, real alarms driven
 * with runDurableObjectAlarm, the simulated model for test keys and a scripted upstream for live
 * keys. Time never passes in these tests: a due time is moved into the past in storage, then the
 * alarm is run, which is what the runtime does when the time comes.
 */
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { PLAN_CATALOG_CONFIG } from '../../shared/plans/plan-catalog'
import { type AgentEvent, type AgentEventOf, sequenceProblems } from './agent-events'
import type { AgentRun, RunReply } from './agent-run.do'
import {
  codeEnv,
  DELETE_TREE,
  EventReader,
  indexWritten,
  installLimiter,
  installUpstream,
  limiter,
  mutableEnv,
  newRun,
  ownerOf,
  READ_FILE,
  type RunHandle,
  readAll,
  runTurn,
  TEST_SNAPSHOT,
  turnCall,
  uninstallLimiter,
  uninstallUpstream,
  upstream,
  WRITE_FILE,
} from './agent-run.do-fixtures'

const H1 = `sha256:${'1'.repeat(64)}`
const H2 = `sha256:${'2'.repeat(64)}`

function ofType<T extends AgentEvent['type']>(events: AgentEvent[], type: T): AgentEventOf<T>[] {
  return events.filter((e): e is AgentEventOf<T> => e.type === type)
}

function terminal(events: AgentEvent[]): AgentEvent {
  const last = events.at(-1)
  if (!last) throw new Error('no events')
  return last
}

async function status(run: RunHandle) {
  // RPC typing drops `unknown`-typed fields from the caller's view of the reply.
  const reply = (await run.object.status(ownerOf(run.identity))) as RunReply
  if (reply.ok) return reply.run
  throw new Error(`status failed: ${JSON.stringify(reply)}`)
}

/** Moves every due time (and approval expiry) into the past, then runs the alarm. */
async function timeTravelAndRunAlarm(run: RunHandle, kind?: string): Promise<boolean> {
  // The index write is due at once (real time): let it finish, so its alarm does not run the
  // work moved into the past before this test does.
  await indexWritten(run)
  await runInDurableObject(run.object, (_instance: AgentRun, state) => {
    if (kind) state.storage.sql.exec(`UPDATE due_work SET due_at = 0 WHERE kind = ?`, kind)
    else state.storage.sql.exec(`UPDATE due_work SET due_at = 0`)
    if (!kind || kind === 'approval_expiry') state.storage.sql.exec(`UPDATE approvals SET expires_at = 1`)
  })
  return runDurableObjectAlarm(run.object)
}

/** What the stand-in limiter was told about this run's turns (other runs settle meanwhile). */
function settledFor(run: RunHandle) {
  return limiter.settled.filter((s) => s.requestId.startsWith(`agent-turn:${run.runId}:`))
}

/** The run's due work, without the index write (it has its own tests: run-index.do.test.ts). */
async function dueWork(run: RunHandle): Promise<{ kind: string; ref: string; due_at: number }[]> {
  return runInDurableObject(run.object, (_instance: AgentRun, state) =>
    state.storage.sql
      .exec<{ kind: string; ref: string; due_at: number }>(
        `SELECT * FROM due_work WHERE kind <> 'index_sync'`,
      )
      .toArray(),
  )
}

// Admission and metering go to a stand-in RateLimiter that records what it is told; one test
// below talks to the real one hosted by the metering worker.
beforeEach(() => {
  installLimiter()
})

afterEach(() => {
  uninstallUpstream()
  uninstallLimiter()
  delete mutableEnv.AGENT_HEARTBEAT_MS
  delete mutableEnv.PLAN_CATALOG
})

describe('a test-mode turn', () => {
  it('streams gapless events that end with exactly one terminal event, and the run records it', async () => {
    const run = newRun()
    const { status: code, events } = await runTurn(run, { request: 'Say hello' })
    expect(code).toBe(200)
    expect(sequenceProblems(events)).toEqual([])
    expect(events[0]?.type).toBe('turn.started')
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
    expect(new Set(events.map((e) => e.run_id))).toEqual(new Set([run.runId]))
    const text = ofType(events, 'message.delta')
      .map((e) => e.data.delta)
      .join('')
    expect(text).toContain('Test mode reply from svc-comb. You wrote: "Say hello".')
    expect(terminal(events)).toMatchObject({ type: 'turn.completed', data: { stop_reason: 'end_turn' } })
    const usage = ofType(events, 'usage').at(-1)!
    expect(usage.data.turn.total_tokens).toBeGreaterThan(0)
    expect(usage.data.run).toEqual(usage.data.turn)

    const record = await status(run)
    expect(record).toMatchObject({
      id: run.runId,
      state: 'completed',
      last_seq: events.length,
      turn_count: 1,
      test_mode: true,
      pending_approvals: [],
      usage: { total_tokens: usage.data.run.total_tokens, cost_usd: 0 },
    })
    expect(record.limits.remaining_tokens).toBe(record.limits.max_total_tokens - usage.data.run.total_tokens)
  })

  it('reattaches with the same body (replaying after the cursor), refuses another body, and a cursor past the head', async () => {
    const run = newRun()
    const call = await turnCall(run, { turn_id: 'same', request: 'Say hello' })
    const first = await readAll(await run.object.postTurn(call))
    const again = await readAll(await run.object.postTurn(call))
    expect(again).toEqual(first)

    const fromFive = await readAll(
      await run.object.postTurn({ ...call, request: { ...call.request, cursor: 5 } }),
    )
    expect(fromFive).toEqual(first.filter((e) => e.seq > 5))

    const other = await turnCall(run, { turn_id: 'same', request: 'Something else' })
    const conflict = await run.object.postTurn(other)
    expect(conflict.status).toBe(409)
    expect(await conflict.json()).toMatchObject({ error: { code: 'turn_id_reused', param: 'turn_id' } })

    const past = await run.object.postTurn({
      ...call,
      request: { ...call.request, cursor: first.length + 1 },
    })
    expect(past.status).toBe(400)
    expect(await past.json()).toMatchObject({
      error: {
        code: 'cursor_out_of_range',
        param: 'cursor',
        message: `cursor ${first.length + 1} is past the last event of this run (seq ${first.length}); resume with the last seq you received`,
      },
    })
  })

  it('refuses another account on the same object with the not-found answer', async () => {
    const run = newRun()
    await runTurn(run, { request: 'hello' })
    const stranger = ownerOf({ ...run.identity, tenantId: crypto.randomUUID() })
    const reply = await run.object.status(stranger)
    expect(reply).toMatchObject({ ok: false, error: { status: 404, code: 'run_not_found' } })
    const cancel = await run.object.cancel(stranger, 'x')
    expect(cancel).toMatchObject({ ok: false, error: { status: 404, code: 'run_not_found' } })
    const post = await run.object.postTurn({
      ...(await turnCall(run, { turn_id: 't9', request: 'hi' })),
      owner: stranger,
    })
    expect(post.status).toBe(404)
  })
})

describe('a multi-turn run with a client tool and an approval (edit mode)', () => {
  it('offers read_file at once, waits for its result, asks before write_file, and lands the edit', async () => {
    const run = newRun()
    const tools = [READ_FILE, WRITE_FILE]
    const t1 = await runTurn(run, { client_tools: tools, request: 'Please call read_file on README.md' })
    const requested = ofType(t1.events, 'tool_call.requested')
    expect(requested).toHaveLength(1)
    expect(requested[0]!.data).toMatchObject({ name: 'read_file', executor: 'client', approval: 'none' })
    const readCall = requested[0]!.data.call_id
    expect(terminal(t1.events)).toMatchObject({
      type: 'turn.completed',
      data: { stop_reason: 'awaiting_client_tool', pending_tool_calls: [readCall] },
    })
    expect((await status(run)).pending_tool_calls).toEqual([
      { call_id: readCall, name: 'read_file', executor: 'client', arguments: requested[0]!.data.arguments },
    ])

    // Without the result: 409. With an unknown id: 400 naming what is pending.
    expect((await runTurn(run, { client_tools: tools, request: 'go on' })).status).toBe(409)
    const wrong = await run.object.postTurn(
      await turnCall(run, {
        turn_id: 'wrong',
        client_tools: tools,
        tool_results: [{ call_id: 'call_404', output: 'x' }],
      }),
    )
    expect(wrong.status).toBe(400)
    expect(await wrong.json()).toMatchObject({ error: { code: 'unknown_tool_call' } })

    const t2 = await runTurn(run, {
      client_tools: tools,
      tool_results: [{ call_id: readCall, output: '# svc\n' }],
    })
    expect(t2.events[1]).toMatchObject({
      type: 'tool_call.updated',
      data: { call_id: readCall, status: 'completed', output: '# svc\n' },
    })
    expect(terminal(t2.events)).toMatchObject({ type: 'turn.completed', data: { stop_reason: 'end_turn' } })
    expect(ofType(t2.events, 'message.delta').length).toBeGreaterThan(0)

    const t3 = await runTurn(run, { client_tools: tools, request: 'Now use write_file to add install steps' })
    const write = ofType(t3.events, 'tool_call.requested')[0]!
    expect(write.data).toMatchObject({ name: 'write_file', executor: 'client', approval: 'required' })
    const ask = ofType(t3.events, 'approval.requested')[0]!
    expect(ask.data.call_id).toBe(write.data.call_id)
    expect(ask.data.reason).toContain('edit mode')
    expect(terminal(t3.events)).toMatchObject({
      data: { stop_reason: 'awaiting_approval', pending_approvals: [ask.data.approval_id] },
    })
    expect((await status(run)).state).toBe('awaiting_approval')
    const expiry = (await dueWork(run)).find((w) => w.kind === 'approval_expiry')
    expect(expiry).toMatchObject({ ref: ask.data.approval_id, due_at: Date.parse(ask.data.expires_at) })

    const diff = '--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # svc\n+npm i -g svc\n'
    const t4 = await runTurn(run, {
      client_tools: tools,
      approvals: [{ approval_id: ask.data.approval_id, decision: 'approve' }],
      tool_results: [
        {
          call_id: write.data.call_id,
          output: 'wrote README.md',
          file_changes: [{ path: 'README.md', op: 'modify', diff, base_hash: H1, new_hash: H2 }],
        },
      ],
    })
    expect(t4.events.slice(1, 5).map((e) => e.type)).toEqual([
      'approval.resolved',
      'tool_call.updated',
      'file.delta',
      'message.delta',
    ])
    expect(t4.events[1]!.data).toMatchObject({ decision: 'approve', decided_by: 'user' })
    expect(ofType(t4.events, 'file.delta')[0]!.data).toEqual({
      call_id: write.data.call_id,
      path: 'README.md',
      op: 'modify',
      diff,
      base_hash: H1,
      new_hash: H2,
    })
    expect(ofType(t4.events, 'turn.diff')[0]!.data).toEqual({
      diff,
      files: [{ path: 'README.md', op: 'modify' }],
    })
    expect(terminal(t4.events)).toMatchObject({ data: { stop_reason: 'end_turn' } })
    expect((await dueWork(run)).find((w) => w.kind === 'approval_expiry')).toBeUndefined()

    const all = await readAll(
      await run.object.postTurn(
        await turnCall(run, {
          turn_id: 't1',
          cursor: 0,
          client_tools: tools,
          request: 'Please call read_file on README.md',
        }),
      ),
    )
    expect(sequenceProblems([...t1.events, ...t2.events, ...t3.events, ...t4.events])).toEqual([])
    expect(all).toEqual(t1.events)
    const record = await status(run)
    expect(record).toMatchObject({ state: 'completed', turn_count: 4 })
    expect(record.usage.total_tokens).toBe(ofType(t4.events, 'usage').at(-1)!.data.run.total_tokens)
  })

  it('reports a denied call as denied, never as completed, and tells the model', async () => {
    const run = newRun()
    const t1 = await runTurn(run, { client_tools: [WRITE_FILE], request: 'use write_file please' })
    const ask = ofType(t1.events, 'approval.requested')[0]!
    const t2 = await runTurn(run, {
      client_tools: [WRITE_FILE],
      approvals: [{ approval_id: ask.data.approval_id, decision: 'deny', reason: 'not now' }],
    })
    expect(t2.events[1]!.data).toMatchObject({ decision: 'deny', decided_by: 'user', reason: 'not now' })
    expect(t2.events[2]).toMatchObject({
      type: 'tool_call.updated',
      data: {
        status: 'denied',
        error: { code: 'denied_by_user', message: 'the user denied write_file: not now' },
      },
    })
    expect(t2.events.some((e) => e.type === 'tool_call.updated' && e.data.status === 'completed')).toBe(false)
    expect(terminal(t2.events)).toMatchObject({ data: { stop_reason: 'end_turn' } })
  })

  it('fails an invocation whose arguments break the input_schema before offering it', async () => {
    const run = newRun()
    const strict = {
      name: 'open_ticket',
      description: 'Opens a ticket',
      input_schema: {
        type: 'object',
        properties: { id: { type: 'string', pattern: '^TICKET-[0-9]+$' } },
        required: ['id'],
      },
      tags: ['read-only'],
    }
    const { events } = await runTurn(run, { client_tools: [strict], request: 'call open_ticket' })
    const update = ofType(events, 'tool_call.updated')[0]!
    expect(update.data).toMatchObject({ status: 'failed', error: { code: 'invalid_arguments' } })
    expect(update.data.error?.message).toContain('/id')
    expect(terminal(events)).toMatchObject({ data: { stop_reason: 'end_turn' } })
    expect((await status(run)).pending_tool_calls).toEqual([])
  })
})

describe('modes decide approvals', () => {
  const cases: [string, Record<string, unknown>, string, 'none' | 'required', string | null][] = [
    // mode, tool, prompt, approval, denial code (null: offered)
    ['manual', READ_FILE, 'call read_file', 'required', null],
    ['plan', READ_FILE, 'call read_file', 'none', null],
    ['plan', WRITE_FILE, 'call write_file', 'none', 'refused_by_mode'],
    ['plan', DELETE_TREE, 'call delete_tree', 'none', 'refused_by_mode'],
    ['edit', READ_FILE, 'call read_file', 'none', null],
    ['edit', WRITE_FILE, 'call write_file', 'required', null],
    ['auto', WRITE_FILE, 'call write_file', 'none', null],
    ['auto', DELETE_TREE, 'call delete_tree', 'required', null],
  ]
  it.each(cases)('%s mode, %o', async (mode, tool, prompt, approval, denial) => {
    const run = newRun()
    const { events } = await runTurn(run, { mode, client_tools: [tool], request: prompt })
    const requested = ofType(events, 'tool_call.requested')[0]!
    expect(requested.data.approval).toBe(approval)
    const asked = ofType(events, 'approval.requested')
    expect(asked).toHaveLength(approval === 'required' ? 1 : 0)
    const updates = ofType(events, 'tool_call.updated')
    if (denial) {
      expect(updates[0]!.data).toMatchObject({ status: 'denied', error: { code: denial } })
      expect(terminal(events)).toMatchObject({ data: { stop_reason: 'end_turn' } })
    } else if (approval === 'required') {
      expect(terminal(events)).toMatchObject({ data: { stop_reason: 'awaiting_approval' } })
    } else {
      expect(terminal(events)).toMatchObject({ data: { stop_reason: 'awaiting_client_tool' } })
    }
  })

  it('runs web_search on the server at once in edit mode, asks first in manual mode', async () => {
    const run = newRun()
    const { events } = await runTurn(run, { request: 'use web_search to find the resume docs' })
    // The model's round ends with its usage; the server tool then runs at once.
    expect(events.map((e) => e.type).slice(1, 7)).toEqual([
      'usage',
      'tool_call.requested',
      'tool_call.updated',
      'progress',
      'tool_call.updated',
      'message.delta',
    ])
    const done = ofType(events, 'tool_call.updated')[1]!
    expect(done.data).toMatchObject({ status: 'completed', output: { provider: 'builtin' } })

    const manual = newRun()
    const t1 = await runTurn(manual, { mode: 'manual', request: 'use web_search for cursor' })
    const ask = ofType(t1.events, 'approval.requested')[0]!
    const t2 = await runTurn(manual, {
      mode: 'manual',
      approvals: [{ approval_id: ask.data.approval_id, decision: 'approve' }],
    })
    expect(t2.events.map((e) => e.type).slice(1, 5)).toEqual([
      'approval.resolved',
      'tool_call.updated',
      'progress',
      'tool_call.updated',
    ])
    expect(ofType(t2.events, 'tool_call.updated')[1]!.data.status).toBe('completed')
  })

  it("meters the model's web searches like POST /svc/code/v1/search: one request of web_search each", async () => {
    const run = newRun()
    const { events } = await runTurn(run, { request: 'use web_search to find the resume docs' })
    const callId = ofType(events, 'tool_call.requested')[0]!.data.call_id
    expect(limiter.acquired).toContainEqual({ model: 'web_search', estimatedTokens: 0, estimatedQuantity: 1 })
    expect(limiter.settled).toContainEqual(
      expect.objectContaining({
        model: 'web_search',
        endpoint: 'code.turns',
        requestId: `agent-search:${run.runId}:${callId}`,
        usage: expect.objectContaining({ quantity: 1 }),
      }),
    )
  })

  it("reports a refused web search to the model as the tool's failure, with the refusal's code", async () => {
    const run = newRun()
    // The turn is admitted; its web search is refused by the per-minute limit.
    limiter.refuseModels = {
      web_search: {
        kind: 'refused',
        snapshot: TEST_SNAPSHOT,
        decision: {
          schema_version: '2026-07-31',
          reason: 'rate_limited',
          current_plan: 'team',
          required_plan: 'enterprise',
          binding_limit: { kind: 'rate', unit: 'requests', used: 601, limit: 600, retry_after_seconds: 12 },
          actions: [{ kind: 'retry_later', label: 'Retry in 12 s', available: true, url: null }],
        },
      },
    }
    const { events } = await runTurn(run, { request: 'use web_search to find the resume docs' })
    const failed = ofType(events, 'tool_call.updated').find((e) => e.data.status === 'failed')
    expect(failed?.data.error).toMatchObject({
      code: 'rate_limited',
      message: expect.stringContaining('Rate limit reached'),
    })
    expect(limiter.settled.filter((s) => s.model === 'web_search')).toEqual([])
    expect(terminal(events).type).toBe('turn.completed')
  })

  it('lets a new mode settle what it would not ask about (decided_by mode_policy)', async () => {
    const run = newRun()
    const t1 = await runTurn(run, { client_tools: [WRITE_FILE], request: 'call write_file' })
    const ask = ofType(t1.events, 'approval.requested')[0]!
    // auto approves an edit: the client call is approved, and the client still has to run it.
    const t2 = await runTurn(run, { mode: 'auto', client_tools: [WRITE_FILE] })
    expect(t2.events[1]!.data).toMatchObject({
      approval_id: ask.data.approval_id,
      decision: 'approve',
      decided_by: 'mode_policy',
    })
    expect(terminal(t2.events)).toMatchObject({
      data: { stop_reason: 'awaiting_client_tool', pending_tool_calls: [ask.data.call_id] },
    })

    const planned = newRun()
    const p1 = await runTurn(planned, { client_tools: [WRITE_FILE], request: 'call write_file' })
    const planAsk = ofType(p1.events, 'approval.requested')[0]!
    const p2 = await runTurn(planned, { mode: 'plan', client_tools: [WRITE_FILE] })
    expect(p2.events[1]!.data).toMatchObject({
      approval_id: planAsk.data.approval_id,
      decision: 'deny',
      decided_by: 'mode_policy',
    })
    expect(p2.events[2]!.data).toMatchObject({ status: 'denied', error: { code: 'refused_by_mode' } })
  })
})

describe('alarms', () => {
  it('expires an unanswered approval (deny by expiry, reported at the next turn)', async () => {
    const run = newRun()
    const t1 = await runTurn(run, { client_tools: [WRITE_FILE], request: 'call write_file' })
    const ask = ofType(t1.events, 'approval.requested')[0]!
    expect(await timeTravelAndRunAlarm(run, 'approval_expiry')).toBe(true)
    const record = await status(run)
    expect(record.pending_approvals).toEqual([])
    // Running the same alarm again changes nothing (handlers are idempotent); the index write the
    // expiry may still have in flight goes first, so no alarm is left for it.
    await indexWritten(run)
    expect(await runDurableObjectAlarm(run.object)).toBe(false)

    const t2 = await runTurn(run, { client_tools: [WRITE_FILE], request: 'what happened?' })
    expect(t2.events[1]).toMatchObject({
      type: 'approval.resolved',
      data: { approval_id: ask.data.approval_id, decision: 'deny', decided_by: 'expiry' },
    })
    expect(t2.events[2]).toMatchObject({
      type: 'tool_call.updated',
      data: { call_id: ask.data.call_id, status: 'denied', error: { code: 'approval_expired' } },
    })
    expect(terminal(t2.events)).toMatchObject({ type: 'turn.completed' })
  })

  it('times out a turn that runs too long, aborting the upstream call', async () => {
    installUpstream([{ kind: 'hang' }])
    const run = newRun('live')
    const response = await run.object.postTurn(await turnCall(run, { turn_id: 't1', request: 'think hard' }))
    const reader = new EventReader(response)
    await reader.until('turn.started')
    while (upstream.requests.length === 0) await runInDurableObject(run.object, () => undefined)
    expect((await dueWork(run)).map((w) => w.kind)).toEqual(['turn_timeout'])
    expect(await timeTravelAndRunAlarm(run, 'turn_timeout')).toBe(true)
    const rest = await reader.rest()
    expect(terminal(rest)).toMatchObject({
      type: 'turn.failed',
      data: { retryable: true, error: { code: 'turn_timeout' } },
    })
    expect(upstream.aborted).toBe(1)
    expect((await status(run)).state).toBe('failed')
    // The stopped call never reported usage: its prompt is counted with the tokenizer.
    const lastUsage = ofType(rest, 'usage').at(-1)!
    expect(lastUsage.data.turn.input_tokens).toBeGreaterThan(0)
    expect(lastUsage.data.turn.output_tokens).toBe(0)
    await vi.waitFor(() => expect(settledFor(run)).toHaveLength(1))
    expect(settledFor(run)[0]).toMatchObject({
      endpoint: 'code.turns',
      estimated: true,
      usage: { promptTokens: lastUsage.data.turn.input_tokens, completionTokens: 0 },
      // The turn's stream began with 200 and ended in turn.failed: the request log says 502.
      status: 502,
    })
  })

  // Several alarm rounds and streamed reads: a generous budget so a loaded machine cannot fail it.
  it('retries a transient upstream failure from the alarm with backoff, then completes', {
    timeout: 30_000,
  }, async () => {
    installUpstream([
      { kind: 'status', status: 503 },
      { kind: 'status', status: 503 },
      { kind: 'text', pieces: ['Hel', 'lo'] },
    ])
    mutableEnv.AGENT_HEARTBEAT_MS = '25'
    const run = newRun('live')
    const response = await run.object.postTurn(await turnCall(run, { turn_id: 't1', request: 'hi' }))
    const reader = new EventReader(response)
    const first = await reader.until('progress')
    expect(first.data).toMatchObject({ phase: 'retry' })
    expect((first.data as { message: string }).message).toContain('retrying in 2 s (attempt 2 of 3)')
    const due = (await dueWork(run)).find((w) => w.kind === 'model_retry')!
    expect(due.ref).toBe('t1')
    // While the turn waits, the connection gets heartbeats that repeat the last seq.
    const beat = await reader.until('heartbeat')
    expect(beat.seq).toBe(first.seq)
    expect(beat.data).toEqual({ interval_ms: 25 })

    expect(await timeTravelAndRunAlarm(run, 'model_retry')).toBe(true)
    const second = await reader.until('progress')
    expect((second.data as { message: string }).message).toContain('retrying in 4 s (attempt 3 of 3)')
    // Heartbeats go on after an alarm ran in between.
    expect((await reader.until('heartbeat')).seq).toBe(second.seq)
    expect(await timeTravelAndRunAlarm(run, 'model_retry')).toBe(true)
    const rest = await reader.rest()
    expect(
      ofType(rest, 'message.delta')
        .map((e) => e.data.delta)
        .join(''),
    ).toBe('Hello')
    expect(terminal(rest)).toMatchObject({ type: 'turn.completed', data: { stop_reason: 'end_turn' } })
    expect(upstream.requests).toHaveLength(3)
    expect(sequenceProblems(reader.seen)).toEqual([])
    const record = await status(run)
    expect(record.usage.cost_usd).toBeGreaterThan(0)
    await vi.waitFor(() => expect(settledFor(run)).toHaveLength(1), { timeout: 10_000 })
    expect(settledFor(run)[0]).toMatchObject({
      usage: { promptTokens: 100, completionTokens: 2 },
      provider: 'fake',
    })
  })

  it('gives up after AGENT_MODEL_ATTEMPTS with a retryable failure', async () => {
    installUpstream([{ kind: 'status', status: 500 }])
    const run = newRun('live')
    const reader = new EventReader(
      await run.object.postTurn(await turnCall(run, { turn_id: 't1', request: 'hi' })),
    )
    await reader.until('progress')
    await timeTravelAndRunAlarm(run, 'model_retry')
    await reader.until('progress')
    await timeTravelAndRunAlarm(run, 'model_retry')
    const rest = await reader.rest()
    const failed = terminal(rest)
    expect(failed).toMatchObject({
      type: 'turn.failed',
      data: { retryable: true, error: { code: 'upstream_unavailable' } },
    })
    expect((failed.data as { error: { message: string } }).error.message).toContain(
      'gave up after 3 attempts',
    )
    expect(await dueWork(run)).toEqual([])
  })

  it('fails a turn cut off by a restart as interrupted (retryable)', async () => {
    installUpstream([{ kind: 'hang' }])
    const run = newRun('live')
    const reader = new EventReader(
      await run.object.postTurn(await turnCall(run, { turn_id: 't1', request: 'hi' })),
    )
    await reader.until('turn.started')
    while (upstream.requests.length === 0) await runInDurableObject(run.object, () => undefined)
    // The client has gone; then the object is torn down with its loop (storage stays).
    await reader.cancel()
    await abortAllDurableObjects()
    run.object = codeEnv.AGENT_RUN.get(run.object.id)
    // The new instance finds the running turn without its loop and schedules the failure.
    expect((await dueWork(run)).map((w) => w.kind).sort()).toEqual(['turn_interrupted', 'turn_timeout'])
    expect(await runDurableObjectAlarm(run.object)).toBe(true)
    const record = await status(run)
    expect(record).toMatchObject({ state: 'failed', last_turn: { state: 'failed' } })
    const replay = await readAll(
      await run.object.postTurn(await turnCall(run, { turn_id: 't1', cursor: 0, request: 'hi' })),
    )
    expect(terminal(replay)).toMatchObject({
      type: 'turn.failed',
      data: { error: { code: 'turn_interrupted' }, retryable: true },
    })
  })
})

describe('cancel', () => {
  it('ends the live stream with turn.cancelled, aborts the upstream, and a second cancel is 409', async () => {
    installUpstream([{ kind: 'hang' }])
    const run = newRun('live')
    const reader = new EventReader(
      await run.object.postTurn(await turnCall(run, { turn_id: 't1', request: 'go' })),
    )
    await reader.until('turn.started')
    while (upstream.requests.length === 0) await runInDurableObject(run.object, () => undefined)
    const reply = await run.object.cancel(
      ownerOf(run.identity),
      'cancelled with DELETE /svc/agents/runs/{runId}',
    )
    expect(reply).toMatchObject({ ok: true, run: { state: 'cancelled', last_turn: { state: 'cancelled' } } })
    const rest = await reader.rest()
    expect(terminal(rest)).toMatchObject({
      type: 'turn.cancelled',
      data: { cancelled_by: 'user', reason: 'cancelled with DELETE /svc/agents/runs/{runId}' },
    })
    expect(sequenceProblems(reader.seen)).toEqual([])
    expect(upstream.aborted).toBe(1)
    expect(await dueWork(run)).toEqual([])
    // What the stopped call used is in the turn's last usage and in the run's status.
    const lastUsage = ofType(rest, 'usage').at(-1)!
    expect(rest.at(-2)).toBe(lastUsage)
    expect(lastUsage.data.run.input_tokens).toBeGreaterThan(0)
    expect((await status(run)).usage.total_tokens).toBe(lastUsage.data.run.total_tokens)

    expect(await run.object.cancel(ownerOf(run.identity), 'again')).toMatchObject({
      ok: false,
      error: { status: 409, code: 'run_terminal' },
    })
    const next = await run.object.postTurn(await turnCall(run, { turn_id: 't2', request: 'more' }))
    expect(next.status).toBe(409)
    expect(await next.json()).toMatchObject({ error: { code: 'run_cancelled' } })
  })

  it('cancels a run waiting for an approval; a completed run is 409', async () => {
    const waiting = newRun()
    await runTurn(waiting, { client_tools: [WRITE_FILE], request: 'call write_file' })
    expect(await waiting.object.cancel(ownerOf(waiting.identity), 'stop')).toMatchObject({
      ok: true,
      run: { state: 'cancelled', pending_approvals: [] },
    })
    const done = newRun()
    await runTurn(done, { request: 'hello' })
    expect(await done.object.cancel(ownerOf(done.identity), 'stop')).toMatchObject({
      ok: false,
      error: {
        status: 409,
        code: 'run_terminal',
        message: 'the run is already completed and cannot be cancelled',
      },
    })
  })
})

describe('metering', () => {
  it('admits a new turn once (not on reattach) and settles what it used', async () => {
    installUpstream([{ kind: 'text', pieces: ['a', 'b', 'c'] }])
    const run = newRun('live')
    const call = await turnCall(run, { turn_id: 't1', request: 'hi' })
    const events = await readAll(await run.object.postTurn(call))
    await readAll(await run.object.postTurn(call))
    expect(limiter.acquired).toHaveLength(1)
    expect(limiter.acquired[0]).toMatchObject({ model: 'svc-comb' })
    expect(limiter.acquired[0]!.estimatedTokens).toBeGreaterThan(8_000)
    await vi.waitFor(() => expect(settledFor(run)).toHaveLength(1))
    expect(settledFor(run)[0]).toMatchObject({
      endpoint: 'code.turns',
      model: 'svc-comb',
      requestId: expect.stringMatching(new RegExp(`^agent-turn:${run.runId}:[0-9a-f]{32}$`)),
      usage: { promptTokens: 100, completionTokens: 3, cachedTokens: 0, reasoningTokens: 0 },
      provider: 'fake',
      status: 200,
      latencyMs: expect.any(Number),
    })
    expect(terminal(events).type).toBe('turn.completed')
  })

  it('usage the RateLimiter did not acknowledge stays due and is sent again by the alarm, once', async () => {
    installUpstream([{ kind: 'text', pieces: ['a', 'b'] }])
    // Every try of the first send fails (the client tries four times before it gives up).
    limiter.failSettles = 4
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const run = newRun('live')
    const events = await readAll(
      await run.object.postTurn(await turnCall(run, { turn_id: 't1', request: 'hi' })),
    )
    expect(terminal(events).type).toBe('turn.completed')
    await vi.waitFor(() => expect(limiter.failSettles).toBe(0), { timeout: 10_000 })
    await vi.waitFor(async () => expect((await dueWork(run)).map((w) => w.kind)).toEqual(['meter_settle']))
    expect(settledFor(run)).toHaveLength(0)
    errors.mockRestore()

    expect(await timeTravelAndRunAlarm(run, 'meter_settle')).toBe(true)
    expect(settledFor(run)).toEqual([expect.objectContaining({ endpoint: 'code.turns', provider: 'fake' })])
    expect(await dueWork(run)).toEqual([])
  })

  it('a cancel keeps the usage still to be delivered', async () => {
    installUpstream([{ kind: 'hang' }])
    limiter.failSettles = 4
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const run = newRun('live')
    const reader = new EventReader(
      await run.object.postTurn(await turnCall(run, { turn_id: 't1', request: 'hi' })),
    )
    await reader.until('turn.started')
    while (upstream.requests.length === 0) await runInDurableObject(run.object, () => undefined)
    expect(await run.object.cancel(ownerOf(run.identity), 'user stopped it')).toMatchObject({ ok: true })
    await vi.waitFor(() => expect(limiter.failSettles).toBe(0), { timeout: 10_000 })
    expect((await dueWork(run)).map((w) => w.kind)).toEqual(['meter_settle'])
    errors.mockRestore()
    expect(await timeTravelAndRunAlarm(run, 'meter_settle')).toBe(true)
    expect(settledFor(run)).toHaveLength(1)
    // Cancelled before its end: the request log says 499 (client closed request).
    expect(settledFor(run)[0]).toMatchObject({ status: 499, latencyMs: expect.any(Number) })
  })

  it('answers a refusal with the action-required body and starts nothing', async () => {
    installUpstream([{ kind: 'text', pieces: ['x'] }])
    limiter.refuse = {
      kind: 'refused',
      snapshot: {
        limitRequests: 600,
        remainingRequests: 0,
        resetRequestsMs: 30_000,
        limitTokens: 1,
        remainingTokens: 0,
        resetTokensMs: 30_000,
      },
      decision: {
        schema_version: '2026-07-31',
        reason: 'rate_limited',
        current_plan: 'team',
        required_plan: 'enterprise',
        binding_limit: { kind: 'rate', unit: 'requests', used: 601, limit: 600, retry_after_seconds: 30 },
        actions: [{ kind: 'retry_later', label: 'Retry later', available: true, url: null }],
      },
    }
    const run = newRun('live')
    const response = await run.object.postTurn(await turnCall(run, { turn_id: 't1', request: 'hi' }))
    expect(response.status).toBe(429)
    expect(response.headers.get('retry-after')).toBe('30')
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('0')
    expect(await response.json()).toMatchObject({
      error: { code: 'rate_limited', type: 'rate_limit_error' },
      svc_upgrade: { reason: 'rate_limited', required_plan: 'enterprise' },
    })
    expect(await run.object.status(ownerOf(run.identity))).toMatchObject({
      ok: false,
      error: { status: 404 },
    })
    expect(upstream.requests).toHaveLength(0)
  })

  it('meters test-mode turns with the real RateLimiter of the metering worker', async () => {
    uninstallLimiter()
    const run = newRun('test')
    const response = await run.object.postTurn(await turnCall(run, { turn_id: 't1', request: 'hi' }))
    expect(response.status).toBe(200)
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('600')
    expect(terminal(await readAll(response)).type).toBe('turn.completed')
  })
})

describe("the deployment's plan catalog", () => {
  it("checks each model call against the configured plan's context limit, not the built-in one", async () => {
    mutableEnv.PLAN_CATALOG = JSON.stringify({
      ...PLAN_CATALOG_CONFIG,
      plans: PLAN_CATALOG_CONFIG.plans.map((p) =>
        p.id === 'team' ? { ...p, contextLimitTokens: 1_000 } : p,
      ),
    })
    const run = newRun('test', 'team')
    const { events } = await runTurn(run, { request: 'hello' })
    expect(terminal(events)).toMatchObject({
      type: 'turn.failed',
      data: { error: { code: 'context_limit_reached' }, retryable: false },
    })
  })
})

describe("the model's context window", () => {
  it("fails a model call whose prompt exceeds the model's window even when the plan allows more", async () => {
    // svc-cell's window is 131,072 tokens, Team's limit 256,000; this request is about 150,000.
    const run = newRun('test', 'team')
    const { events } = await runTurn(run, { model: 'svc-cell', request: 'lorem '.repeat(150_000) })
    expect(terminal(events)).toMatchObject({
      type: 'turn.failed',
      data: {
        error: {
          code: 'context_limit_reached',
          message: expect.stringContaining("svc-cell's context window"),
        },
        retryable: false,
      },
    })
  })
})

describe('storage', () => {
  it('keeps the event log, turns and due work in versioned SQLite tables', async () => {
    const run = newRun()
    await runTurn(run, { request: 'hello' })
    const tables = await runInDurableObject(run.object, (_instance: AgentRun, state) => ({
      version: state.storage.sql
        .exec<{ value: string }>(`SELECT value FROM schema_meta WHERE key = 'schema_version'`)
        .one().value,
      names: state.storage.sql
        .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
        .toArray()
        .map((r) => r.name),
      events: state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM events`).one().n,
    }))
    expect(tables.version).toBe('3')
    expect(tables.names).toEqual(
      expect.arrayContaining(['approvals', 'due_work', 'events', 'messages', 'run', 'tool_calls', 'turns']),
    )
    expect(tables.events).toBe((await status(run)).last_seq)
    expect(codeEnv.AGENT_RUN).toBeDefined()
  })

  it('migrates a version-1 object in place: turns.plan_json with plan_id become settings_json with billing_plan_id', async () => {
    const run = newRun()
    await runTurn(run, { request: 'hello' })
    const migrated = await runInDurableObject(run.object, (instance: AgentRun, state) => {
      const sql = state.storage.sql
      // Back to how version 1 stored the turn, then the migration of a restarted object.
      sql.exec(`ALTER TABLE turns RENAME COLUMN settings_json TO plan_json`)
      sql.exec(
        `UPDATE turns SET plan_json = json_set(json_remove(plan_json, '$.billing_plan_id'), '$.plan_id', 'team')`,
      )
      sql.exec(`ALTER TABLE run DROP COLUMN index_version`)
      sql.exec(`UPDATE schema_meta SET value = '1' WHERE key = 'schema_version'`)
      instance.store.migrate()
      return {
        version: sql
          .exec<{ value: string }>(`SELECT value FROM schema_meta WHERE key = 'schema_version'`)
          .one().value,
        settings: instance.store.turn('t1')?.settings_json,
      }
    })
    expect(migrated.version).toBe('3')
    expect(migrated.settings).toMatchObject({ billing_plan_id: 'team', model: 'svc-comb' })
    expect(migrated.settings).not.toHaveProperty('plan_id')
    expect((await runTurn(run, { request: 'and again' })).status).toBe(200)
  })
})
