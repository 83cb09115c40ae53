import { describe, expect, it } from 'vitest'
import protocolDoc from '../../docs/agent-protocol.md?raw'
import { AppError } from '../../shared/http/errors'
import {
  AGENT_EVENT_TYPES,
  type AgentEvent,
  AgentEventSchema,
  addUsage,
  EventSequencer,
  encodeEvent,
  eventsAfterCursor,
  HEARTBEAT_INTERVAL_MS,
  isTerminal,
  NdjsonEventParser,
  nextRunState,
  readEvents,
  sequenceProblems,
  ZERO_USAGE,
} from './agent-events'

const RUN = '7d4b1f0e-3c2a-4b7e-9f1d-0a2b3c4d5e6f'
const H1 = `sha256:${'a'.repeat(64)}`
const H2 = `sha256:${'b'.repeat(64)}`
const clock = () => new Date('2026-03-01T12:00:00.000Z')

/** One full turn touching every event type. */
function sampleTurn(seq = new EventSequencer(RUN, 0, clock)): AgentEvent[] {
  const t = 'turn_1'
  const usage = {
    input_tokens: 10,
    output_tokens: 5,
    reasoning_tokens: 2,
    cached_input_tokens: 0,
    total_tokens: 15,
  }
  return [
    seq.next(t, 'turn.started', {
      session_id: 's',
      model: 'svc-comb',
      mode: 'edit',
      effort: null,
      enable_thinking: true,
    }),
    seq.next(t, 'reasoning.delta', { reasoning_id: 'r1', delta: 'thinking…' }),
    seq.next(t, 'plan.updated', { steps: [{ step: 'Write README', status: 'in_progress' }] }),
    seq.next(t, 'progress', { message: 'reading files', phase: 'explore', percent: 10 }),
    seq.next(t, 'tool_call.requested', {
      call_id: 'c1',
      name: 'web_search',
      executor: 'server',
      approval: 'none',
      arguments: { query: 'svc' },
    }),
    seq.next(t, 'tool_call.updated', { call_id: 'c1', status: 'running' }),
    seq.next(t, 'tool_call.updated', { call_id: 'c1', status: 'completed', output: { results: [] } }),
    seq.next(t, 'tool_call.requested', {
      call_id: 'c2',
      name: 'write_file',
      executor: 'client',
      approval: 'required',
      arguments: { path: 'README.md' },
    }),
    seq.next(t, 'approval.requested', {
      approval_id: 'ap1',
      call_id: 'c2',
      expires_at: '2026-03-01T12:15:00.000Z',
      reason: 'edit mode asks before edits',
    }),
    seq.next(t, 'approval.resolved', {
      approval_id: 'ap1',
      call_id: 'c2',
      decision: 'approve',
      decided_by: 'user',
    }),
    seq.next(t, 'file.delta', {
      call_id: 'c2',
      path: 'README.md',
      op: 'modify',
      diff: '--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-old\n+new\n',
      base_hash: H1,
      new_hash: H2,
    }),
    seq.next(t, 'turn.diff', {
      diff: '--- a/README.md\n+++ b/README.md\n',
      files: [{ path: 'README.md', op: 'modify' }],
    }),
    seq.next(t, 'message.delta', { message_id: 'm1', delta: 'Done — ✅' }),
    seq.next(t, 'usage', { turn: usage, run: addUsage(usage, usage) }),
    seq.next(t, 'turn.completed', { stop_reason: 'end_turn' }),
  ]
}

describe('event envelope and catalog', () => {
  it('assigns gapless seq from the last stored one and stamps every event', () => {
    const events = sampleTurn(new EventSequencer(RUN, 41, clock))
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => 42 + i))
    expect(events.every((e) => e.v === 1 && e.run_id === RUN && e.ts === '2026-03-01T12:00:00.000Z')).toBe(
      true,
    )
    expect(sequenceProblems(events, 41)).toEqual([])
  })

  it('encodes one line per event with the envelope keys in order and round-trips it', () => {
    const [started] = sampleTurn()
    const line = encodeEvent(started!)
    expect(line.endsWith('\n')).toBe(true)
    expect(line.indexOf('\n')).toBe(line.length - 1)
    expect(Object.keys(JSON.parse(line))).toEqual(['v', 'seq', 'run_id', 'turn_id', 'ts', 'type', 'data'])
    expect(AgentEventSchema.parse(JSON.parse(line))).toEqual(started)
  })

  it('refuses to sequence an invalid event and does not burn a seq for it', () => {
    const seq = new EventSequencer(RUN, 0, clock)
    expect(() => seq.next('t', 'tool_call.updated', { call_id: 'c', status: 'denied' } as never)).toThrow(
      /error/,
    )
    expect(seq.lastSeq).toBe(0)
    expect(seq.next('t', 'progress', { message: 'ok' }).seq).toBe(1)
  })

  const base = { v: 1, seq: 1, run_id: RUN, turn_id: 't', ts: '2026-03-01T12:00:00.000Z' }
  it.each([
    ['unknown type', { type: 'turn.exploded', data: {} }],
    ['extra envelope field', { type: 'progress', data: { message: 'x' }, extra: 1 }],
    ['extra data field', { type: 'progress', data: { message: 'x', color: 'red' } }],
    ['seq 0 on a stored event', { type: 'progress', seq: 0, data: { message: 'x' } }],
    [
      'bad executor',
      {
        type: 'tool_call.requested',
        data: { call_id: 'c', name: 'n', executor: 'cloud', approval: 'none', arguments: {} },
      },
    ],
    [
      'denied reported with output',
      {
        type: 'tool_call.updated',
        data: { call_id: 'c', status: 'denied', output: 'ok', error: { code: 'denied', message: 'no' } },
      },
    ],
    ['completed without output', { type: 'tool_call.updated', data: { call_id: 'c', status: 'completed' } }],
    ['failed without error', { type: 'tool_call.updated', data: { call_id: 'c', status: 'failed' } }],
    [
      'expired approval approved',
      {
        type: 'approval.resolved',
        data: { approval_id: 'a', call_id: 'c', decision: 'approve', decided_by: 'expiry' },
      },
    ],
    [
      'approval decided by robot',
      {
        type: 'approval.resolved',
        data: { approval_id: 'a', call_id: 'c', decision: 'deny', decided_by: 'robot' },
      },
    ],
    [
      'create with base hash',
      { type: 'file.delta', data: { path: 'a', op: 'create', diff: '', base_hash: H1, new_hash: H2 } },
    ],
    [
      'delete with new hash',
      { type: 'file.delta', data: { path: 'a', op: 'delete', diff: '', base_hash: H1, new_hash: H2 } },
    ],
    [
      'rename without from_path',
      { type: 'file.delta', data: { path: 'a', op: 'rename', diff: '', base_hash: H1, new_hash: H1 } },
    ],
    [
      'hash not sha256',
      { type: 'file.delta', data: { path: 'a', op: 'modify', diff: '', base_hash: 'md5:1', new_hash: H2 } },
    ],
    ['plan step status', { type: 'plan.updated', data: { steps: [{ step: 'x', status: 'doing' }] } }],
    ['percent over 100', { type: 'progress', data: { message: 'x', percent: 101 } }],
    ['usage without run totals', { type: 'usage', data: { turn: ZERO_USAGE } }],
    ['awaiting approval without ids', { type: 'turn.completed', data: { stop_reason: 'awaiting_approval' } }],
    [
      'awaiting client tool without ids',
      { type: 'turn.completed', data: { stop_reason: 'awaiting_client_tool', pending_tool_calls: [] } },
    ],
    ['unknown stop reason', { type: 'turn.completed', data: { stop_reason: 'bored' } }],
    ['failed without retryable', { type: 'turn.failed', data: { error: { code: 'x', message: 'y' } } }],
    ['cancelled by ghost', { type: 'turn.cancelled', data: { reason: 'x', cancelled_by: 'ghost' } }],
  ])('rejects %s', (_name, patch) => {
    expect(AgentEventSchema.safeParse({ ...base, ...patch }).success).toBe(false)
  })

  it('accepts the terminal variants and awaiting stop reasons with their ids', () => {
    const ok = (type: string, data: unknown) => AgentEventSchema.safeParse({ ...base, type, data }).success
    expect(ok('turn.completed', { stop_reason: 'awaiting_approval', pending_approvals: ['ap1'] })).toBe(true)
    expect(ok('turn.completed', { stop_reason: 'awaiting_client_tool', pending_tool_calls: ['c1'] })).toBe(
      true,
    )
    expect(
      ok('turn.failed', {
        error: { code: 'upstream_error', message: 'model provider failed' },
        retryable: true,
      }),
    ).toBe(true)
    expect(
      ok('turn.cancelled', { reason: 'cancelled by DELETE /svc/agents/runs/{runId}', cancelled_by: 'user' }),
    ).toBe(true)
    expect(
      ok('file.delta', { path: 'b', from_path: 'a', op: 'rename', diff: '', base_hash: H1, new_hash: H1 }),
    ).toBe(true)
    expect(ok('file.delta', { path: 'a', op: 'create', diff: '+x', base_hash: null, new_hash: H1 })).toBe(
      true,
    )
  })

  it('knows the three terminal types', () => {
    expect(['turn.completed', 'turn.failed', 'turn.cancelled'].every(isTerminal)).toBe(true)
    expect(isTerminal('turn.started')).toBe(false)
    expect(isTerminal('heartbeat')).toBe(false)
  })
})

describe('NDJSON parsing for clients', () => {
  const stream = sampleTurn().map(encodeEvent).join('')

  it('reassembles events from chunks split anywhere, including inside UTF-8 characters', () => {
    const bytes = new TextEncoder().encode(stream)
    for (const size of [1, 3, 7, 64, bytes.length]) {
      const parser = new NdjsonEventParser()
      const out: AgentEvent[] = []
      for (let i = 0; i < bytes.length; i += size) out.push(...parser.push(bytes.subarray(i, i + size)))
      out.push(...parser.end())
      expect(out).toEqual(sampleTurn())
    }
  })

  it('accepts a final line without newline, CRLF and blank lines; rejects garbage', () => {
    const parser = new NdjsonEventParser()
    const lines = stream.trimEnd().split('\n')
    const text = `${lines.slice(0, 2).join('\r\n')}\r\n\n${lines[2]}`
    expect(parser.push(text)).toHaveLength(2)
    expect(parser.end()).toHaveLength(1)
    expect(() => new NdjsonEventParser().push('{"v":1\n')).toThrow(/not JSON/)
    expect(() => new NdjsonEventParser().push('{"v":2}\n')).toThrow(/not a svc.code.v1 event/)
  })

  it('reads a ReadableStream body', async () => {
    const body = new Response(stream).body!
    const types: string[] = []
    for await (const event of readEvents(body)) types.push(event.type)
    expect(types.at(0)).toBe('turn.started')
    expect(types.at(-1)).toBe('turn.completed')
    expect(types).toHaveLength(15)
  })
})

describe('resume and sequencing rules', () => {
  const log = sampleTurn()

  it('replays seq > cursor and 400s a cursor past the head', () => {
    expect(eventsAfterCursor(log, undefined, 15)).toHaveLength(15)
    expect(eventsAfterCursor(log, 12, 15).map((e) => e.seq)).toEqual([13, 14, 15])
    expect(eventsAfterCursor(log, 15, 15)).toEqual([])
    try {
      eventsAfterCursor(log, 16, 15)
      expect.unreachable()
    } catch (err) {
      expect((err as AppError).status).toBe(400)
      expect((err as AppError).param).toBe('cursor')
    }
  })

  it('heartbeats repeat the last written seq and are not gaps', () => {
    const seq = new EventSequencer(RUN, 0, clock)
    const a = seq.next('t', 'progress', { message: 'a' })
    const hb = seq.heartbeat('t', a.seq)
    expect(hb).toMatchObject({ seq: 1, type: 'heartbeat', data: { interval_ms: HEARTBEAT_INTERVAL_MS } })
    expect(AgentEventSchema.safeParse(hb).success).toBe(true)
    const b = seq.next('t', 'progress', { message: 'b' })
    expect(sequenceProblems([a, hb, b])).toEqual([])
  })

  it('flags gaps, duplicates and events after a terminal', () => {
    const [e1, e2, e3] = log
    expect(sequenceProblems([e1!, e3!])).toEqual(['seq 3 follows 1 (expected 2)'])
    expect(sequenceProblems([e1!, e2!, e2!])).toHaveLength(1)
    const done = log.at(-1)!
    const late = { ...e2!, seq: done.seq + 1 }
    expect(sequenceProblems([...log, late])[0]).toContain('follows the terminal event')
  })
})

describe('run state machine', () => {
  const completed = (stop_reason: string, extra = {}) =>
    ({ kind: 'event', event: { type: 'turn.completed', data: { stop_reason, ...extra } } }) as const
  const status = (f: () => unknown) => {
    try {
      f()
      return 'ok'
    } catch (err) {
      return err instanceof AppError ? `${err.status} ${err.code}` : 'Error'
    }
  }

  it('walks a run through approval, client tool and completion', () => {
    let s = nextRunState(undefined, { kind: 'turn_posted', answersPending: false })
    expect(s).toBe('running')
    s = nextRunState(s, completed('awaiting_approval', { pending_approvals: ['a'] }) as never)
    expect(s).toBe('awaiting_approval')
    s = nextRunState(s, { kind: 'turn_posted', answersPending: true })
    expect(s).toBe('running')
    s = nextRunState(s, completed('awaiting_client_tool', { pending_tool_calls: ['c'] }) as never)
    expect(s).toBe('awaiting_client_tool')
    s = nextRunState(s, { kind: 'turn_posted', answersPending: true })
    s = nextRunState(s, completed('end_turn') as never)
    expect(s).toBe('completed')
    expect(nextRunState(s, { kind: 'turn_posted', answersPending: false })).toBe('running')
  })

  it('enforces one turn at a time, answers for waiting runs and 409 on cancelling terminal runs', () => {
    expect(status(() => nextRunState('running', { kind: 'turn_posted', answersPending: false }))).toBe(
      '409 run_busy',
    )
    expect(
      status(() => nextRunState('awaiting_approval', { kind: 'turn_posted', answersPending: false })),
    ).toBe('409 run_awaiting_input')
    expect(status(() => nextRunState('cancelled', { kind: 'turn_posted', answersPending: false }))).toBe(
      '409 run_cancelled',
    )
    expect(nextRunState('awaiting_client_tool', { kind: 'cancel' })).toBe('cancelled')
    expect(nextRunState('running', { kind: 'cancel' })).toBe('cancelled')
    for (const s of ['completed', 'failed', 'cancelled'] as const) {
      expect(status(() => nextRunState(s, { kind: 'cancel' }))).toBe('409 run_terminal')
    }
    expect(status(() => nextRunState(undefined, { kind: 'cancel' }))).toBe('404 run_not_found')
    expect(
      nextRunState('running', {
        kind: 'event',
        event: { type: 'turn.failed', data: { error: { code: 'x', message: 'y' }, retryable: true } },
      }),
    ).toBe('failed')
    expect(
      status(() =>
        nextRunState('completed', { kind: 'event', event: { type: 'progress', data: { message: 'x' } } }),
      ),
    ).toBe('Error')
  })
})

describe('docs/agent-protocol.md', () => {
  const blocks = [...protocolDoc.matchAll(/```ndjson\n([\s\S]*?)```/g)].map((m) => m[1]!.trim().split('\n'))

  it('every NDJSON example is a valid event and every event type has one', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(2)
    const events = blocks.flat().map((line) => {
      const parsed = AgentEventSchema.safeParse(JSON.parse(line))
      expect(parsed.success, line).toBe(true)
      return parsed.data!
    })
    expect(new Set(events.map((e) => e.type))).toEqual(new Set(AGENT_EVENT_TYPES))
  })

  it('the walkthrough is a conforming stream: gapless, one terminal per turn, encoded as served', () => {
    const lines = blocks[0]!
    const events = new NdjsonEventParser().push(`${lines.join('\n')}\n`)
    expect(sequenceProblems(events)).toEqual([])
    expect(events.map(encodeEvent).join('')).toBe(`${lines.join('\n')}\n`)
  })
})
