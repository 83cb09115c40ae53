/**
 * The svc.code.v1 event catalog: one JSON envelope per NDJSON line,
 * `{v:1, seq, run_id, turn_id, ts, type, data}`, with `seq` gapless per run (1, 2, 3, ... across
 * all turns of the run). docs/agent-protocol.md is the prose version of this file.
 *
 * Producer side (AgentRun DO): `EventSequencer.append` assigns seq and timestamps and hands the
 * event to `encodeEvent`, which validates and serialises its line (the object stores and sends
 * exactly that line). Consumer side (clients, tests): `NdjsonEventParser` turns arbitrary
 * chunks back into events; `isTerminal` tells when a turn is over.
 */
import { z } from 'zod'
import { AppError } from '../../shared/http/errors'
import { FILE_OPS, fileChangeProblems, fileChangeShape } from './file-changes'
import { AGENT_MODES, EFFORTS } from './turn.schemas'

export const EVENT_VERSION = 1
/** A heartbeat line is written after this much silence on a turn stream. */
export const HEARTBEAT_INTERVAL_MS = 15_000

const id = z.string().min(1).max(256)
const errorBody = z.object({ code: z.string().min(1), message: z.string().min(1) }).strict()
const count = z.int().min(0)

export const TOOL_EXECUTORS = ['server', 'client', 'mcp'] as const
export const TOOL_CALL_STATUSES = ['running', 'completed', 'failed', 'denied'] as const
/** Statuses of a step of the task plan the model keeps with its `update_plan` tool. */
export const TASK_STEP_STATUSES = ['pending', 'in_progress', 'completed', 'cancelled'] as const
/** Most steps one task plan may have. */
export const MAX_TASK_STEPS = 100
export const DECIDERS = ['user', 'mode_policy', 'expiry'] as const
/**
 * Why a turn stopped. The two `awaiting_*` reasons end the turn but not the run: the client answers
 * in the next turn (`approvals` / `tool_results`).
 */
export const STOP_REASONS = [
  'end_turn',
  'max_tokens',
  'awaiting_approval',
  'awaiting_client_tool',
  'max_tool_rounds',
  'refusal',
  'budget_exhausted',
] as const

export const TokenUsageSchema = z
  .object({
    input_tokens: count,
    output_tokens: count,
    reasoning_tokens: count,
    cached_input_tokens: count,
    total_tokens: count,
  })
  .strict()
export type TokenUsage = z.infer<typeof TokenUsageSchema>

/** `data` of each event type. All closed (`.strict()`): new fields mean a new protocol version. */
export const EventData = {
  'turn.started': z
    .object({
      session_id: id,
      model: z.string().min(1),
      mode: z.enum(AGENT_MODES),
      effort: z.enum(EFFORTS).nullable(),
      enable_thinking: z.boolean(),
    })
    .strict(),
  'message.delta': z.object({ message_id: id, delta: z.string() }).strict(),
  'reasoning.delta': z.object({ reasoning_id: id, delta: z.string() }).strict(),
  'tool_call.requested': z
    .object({
      call_id: id,
      name: z.string().min(1).max(200),
      executor: z.enum(TOOL_EXECUTORS),
      approval: z.enum(['none', 'required']),
      arguments: z.record(z.string(), z.unknown()),
    })
    .strict(),
  'tool_call.updated': z
    .object({
      call_id: id,
      status: z.enum(TOOL_CALL_STATUSES),
      output: z.unknown().optional(),
      error: errorBody.optional(),
    })
    .strict()
    .superRefine((data, ctx) => {
      if (data.status === 'completed' && data.output === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['output'],
          message: 'a completed tool call carries its output',
        })
      }
      if ((data.status === 'failed' || data.status === 'denied') && data.error === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['error'],
          message: `a ${data.status} tool call carries an error`,
        })
      }
      if (data.status === 'denied' && data.output !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['output'],
          message: 'a denied tool call never ran, so it has no output',
        })
      }
      if (data.status === 'running' && (data.output !== undefined || data.error !== undefined)) {
        ctx.addIssue({
          code: 'custom',
          path: ['status'],
          message: 'a running tool call has neither output nor error',
        })
      }
    }),
  'approval.requested': z
    .object({ approval_id: id, call_id: id, expires_at: z.iso.datetime(), reason: z.string() })
    .strict(),
  'approval.resolved': z
    .object({
      approval_id: id,
      call_id: id,
      decision: z.enum(['approve', 'deny']),
      decided_by: z.enum(DECIDERS),
      reason: z.string().optional(),
    })
    .strict()
    .superRefine((data, ctx) => {
      if (data.decided_by === 'expiry' && data.decision !== 'deny') {
        ctx.addIssue({ code: 'custom', path: ['decision'], message: 'an expired approval is always a deny' })
      }
    }),
  'file.delta': z
    .object({ call_id: id.optional(), ...fileChangeShape })
    .strict()
    .superRefine(fileChangeProblems),
  'turn.diff': z
    .object({
      diff: z.string(),
      files: z.array(
        z
          .object({ path: z.string().min(1), op: z.enum(FILE_OPS), from_path: z.string().min(1).optional() })
          .strict(),
      ),
    })
    .strict(),
  /** The model's task plan: the arguments of its `update_plan` call, sent on as they are. */
  'plan.updated': z
    .object({
      explanation: z.string().optional(),
      steps: z
        .array(z.object({ step: z.string().min(1), status: z.enum(TASK_STEP_STATUSES) }).strict())
        .max(MAX_TASK_STEPS),
    })
    .strict(),
  progress: z
    .object({
      message: z.string().min(1),
      phase: z.string().min(1).optional(),
      percent: z.number().min(0).max(100).optional(),
    })
    .strict(),
  usage: z
    .object({
      /** This turn only (model calls made since turn.started). */
      turn: TokenUsageSchema,
      /** Whole run so far, all turns included: what GET /svc/agents/runs/{runId} reports. */
      run: TokenUsageSchema,
    })
    .strict(),
  heartbeat: z.object({ interval_ms: z.int().positive() }).strict(),
  'turn.completed': z
    .object({
      stop_reason: z.enum(STOP_REASONS),
      pending_approvals: z.array(id).optional(),
      pending_tool_calls: z.array(id).optional(),
    })
    .strict()
    .superRefine((data, ctx) => {
      if (data.stop_reason === 'awaiting_approval' && !data.pending_approvals?.length) {
        ctx.addIssue({
          code: 'custom',
          path: ['pending_approvals'],
          message: 'awaiting_approval lists the pending approvals',
        })
      }
      if (data.stop_reason === 'awaiting_client_tool' && !data.pending_tool_calls?.length) {
        ctx.addIssue({
          code: 'custom',
          path: ['pending_tool_calls'],
          message: 'awaiting_client_tool lists the pending client tool calls',
        })
      }
    }),
  'turn.failed': z.object({ error: errorBody, retryable: z.boolean() }).strict(),
  'turn.cancelled': z
    .object({ reason: z.string().min(1), cancelled_by: z.enum(['user', 'system']) })
    .strict(),
} as const

export type AgentEventType = keyof typeof EventData
export const AGENT_EVENT_TYPES = Object.keys(EventData) as AgentEventType[]
export type EventDataOf<T extends AgentEventType> = z.infer<(typeof EventData)[T]>

export const TERMINAL_EVENT_TYPES = ['turn.completed', 'turn.failed', 'turn.cancelled'] as const
export type TerminalEventType = (typeof TERMINAL_EVENT_TYPES)[number]

export function isTerminal(type: string): type is TerminalEventType {
  return (TERMINAL_EVENT_TYPES as readonly string[]).includes(type)
}

const envelope = {
  v: z.literal(EVENT_VERSION),
  run_id: z.uuid(),
  turn_id: id,
  ts: z.iso.datetime(),
}

function variant<T extends AgentEventType>(type: T) {
  return z
    .object({
      ...envelope,
      // Heartbeats are not stored; they repeat the seq of the last event written on the connection.
      seq: type === 'heartbeat' ? z.int().min(0) : z.int().min(1),
      type: z.literal(type),
      data: EventData[type] as (typeof EventData)[T],
    })
    .strict()
}

export const AgentEventSchema = z.discriminatedUnion('type', [
  variant('turn.started'),
  variant('message.delta'),
  variant('reasoning.delta'),
  variant('tool_call.requested'),
  variant('tool_call.updated'),
  variant('approval.requested'),
  variant('approval.resolved'),
  variant('file.delta'),
  variant('turn.diff'),
  variant('plan.updated'),
  variant('progress'),
  variant('usage'),
  variant('heartbeat'),
  variant('turn.completed'),
  variant('turn.failed'),
  variant('turn.cancelled'),
])
export type AgentEvent = z.infer<typeof AgentEventSchema>
export type AgentEventOf<T extends AgentEventType> = Extract<AgentEvent, { type: T }>

/**
 * Validates an event and serialises it as one NDJSON line (with the trailing newline), keys in
 * envelope order. An invalid event is a bug in the producer, so it throws a plain Error (a 500).
 */
export function encodeEvent(event: AgentEvent): string {
  const parsed = AgentEventSchema.safeParse(event)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new Error(
      `invalid ${event.type} event: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim(),
    )
  }
  const e = parsed.data
  return `${JSON.stringify({ v: e.v, seq: e.seq, run_id: e.run_id, turn_id: e.turn_id, ts: e.ts, type: e.type, data: e.data })}\n`
}

/** Parses one line (without its newline) into a validated event; throws with the reason. */
export function decodeEventLine(line: string): AgentEvent {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    throw new Error(`not JSON: ${line.length > 80 ? `${line.slice(0, 80)}...` : line}`)
  }
  const parsed = AgentEventSchema.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new Error(`not a svc.code.v1 event: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim())
  }
  return parsed.data
}

/**
 * Incremental NDJSON reader for clients: feed it chunks as they arrive (strings or bytes, split
 * anywhere, even inside a multi-byte UTF-8 character) and get whole events back. Blank lines and
 * `\r\n` endings are tolerated.
 */
export class NdjsonEventParser {
  private buffer = ''
  private readonly decoder = new TextDecoder()

  push(chunk: string | Uint8Array): AgentEvent[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true })
    const events: AgentEvent[] = []
    let newline = this.buffer.indexOf('\n')
    while (newline >= 0) {
      const line = this.buffer.slice(0, newline).replace(/\r$/, '')
      this.buffer = this.buffer.slice(newline + 1)
      if (line.trim() !== '') events.push(decodeEventLine(line))
      newline = this.buffer.indexOf('\n')
    }
    return events
  }

  /** Call at end of stream: a final line without a newline is still an event. */
  end(): AgentEvent[] {
    this.buffer += this.decoder.decode()
    const rest = this.buffer.replace(/\r$/, '')
    this.buffer = ''
    return rest.trim() === '' ? [] : [decodeEventLine(rest)]
  }
}

/** Reads a whole NDJSON response body into events (tests and simple clients). */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<AgentEvent> {
  const parser = new NdjsonEventParser()
  const reader = body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      yield* parser.push(value)
    }
    yield* parser.end()
  } finally {
    reader.releaseLock()
  }
}

/**
 * Assigns gapless seq numbers and timestamps for one run. The AgentRun DO creates one from the
 * last stored seq (0 for a new run), persists each event it returns, then writes the line.
 */
export class EventSequencer {
  readonly runId: string
  private last: number
  private readonly now: () => Date

  constructor(runId: string, lastSeq: number, now: () => Date = () => new Date()) {
    if (!Number.isInteger(lastSeq) || lastSeq < 0)
      throw new Error(`lastSeq must be an integer >= 0 (got ${lastSeq})`)
    this.runId = runId
    this.last = lastSeq
    this.now = now
  }

  get lastSeq(): number {
    return this.last
  }

  /**
   * The next durable event (seq = last + 1) and its NDJSON line, validated and serialised once by
   * `encodeEvent` (the producer's only encoder), so a bad payload never takes a seq.
   */
  append<T extends Exclude<AgentEventType, 'heartbeat'>>(
    turnId: string,
    type: T,
    data: EventDataOf<T>,
  ): { event: AgentEventOf<T>; line: string } {
    const event = {
      v: EVENT_VERSION,
      seq: this.last + 1,
      run_id: this.runId,
      turn_id: turnId,
      ts: this.now().toISOString(),
      type,
      data,
    } as AgentEventOf<T>
    const line = encodeEvent(event)
    this.last += 1
    return { event, line }
  }

  /** The next durable event, validated (see `append`). */
  next<T extends Exclude<AgentEventType, 'heartbeat'>>(
    turnId: string,
    type: T,
    data: EventDataOf<T>,
  ): AgentEventOf<T> {
    return this.append(turnId, type, data).event
  }

  /** A heartbeat for a connection whose last written event had `lastWrittenSeq` (not stored). */
  heartbeat(
    turnId: string,
    lastWrittenSeq: number,
    intervalMs: number = HEARTBEAT_INTERVAL_MS,
  ): AgentEventOf<'heartbeat'> {
    return {
      v: EVENT_VERSION,
      seq: lastWrittenSeq,
      run_id: this.runId,
      turn_id: turnId,
      ts: this.now().toISOString(),
      type: 'heartbeat',
      data: { interval_ms: intervalMs },
    }
  }
}

/**
 * Resume rule: a client's `cursor` is the last seq it saw. Returns the stored events to replay
 * (seq > cursor, in order); a cursor past the head of the log is a 400 (the client cannot have
 * seen events that do not exist).
 */
export function eventsAfterCursor<E extends { seq: number }>(
  log: readonly E[],
  cursor: number | undefined,
  headSeq: number,
): E[] {
  const from = cursor ?? 0
  if (from > headSeq) {
    throw new AppError(
      400,
      'cursor_out_of_range',
      `cursor ${from} is past the last event of this run (seq ${headSeq}); resume with the last seq you received`,
      { param: 'cursor' },
    )
  }
  return log.filter((event) => event.seq > from)
}

/**
 * Checks that a stream of events is what a conforming server sends: seq strictly +1 from
 * `afterSeq` (heartbeats repeat the last seq) and nothing after a terminal event. Returns the
 * problems found (empty when fine); used by tests and by cautious clients.
 */
export function sequenceProblems(events: readonly AgentEvent[], afterSeq = 0): string[] {
  const problems: string[] = []
  let last = afterSeq
  let terminal: string | undefined
  for (const event of events) {
    if (event.type === 'heartbeat') {
      if (event.seq !== last) problems.push(`heartbeat seq ${event.seq} should repeat the last seq ${last}`)
      continue
    }
    if (terminal && event.turn_id === terminal)
      problems.push(`seq ${event.seq} follows the terminal event of turn ${terminal}`)
    if (event.seq !== last + 1) problems.push(`seq ${event.seq} follows ${last} (expected ${last + 1})`)
    last = event.seq
    if (isTerminal(event.type)) terminal = event.turn_id
  }
  return problems
}

// ---------------------------------------------------------------------------------------------
// Run states

export const RUN_STATES = [
  'running',
  'awaiting_approval',
  'awaiting_client_tool',
  'completed',
  'failed',
  'cancelled',
] as const
export type RunState = (typeof RUN_STATES)[number]

/** States in which DELETE /svc/agents/runs/{runId} is a 409 (the spec's "terminal run"). */
export function isTerminalRunState(state: RunState): boolean {
  return state === 'completed' || state === 'failed' || state === 'cancelled'
}

export type RunTrigger =
  | { kind: 'turn_posted'; answersPending: boolean }
  | { kind: 'cancel' }
  | { kind: 'event'; event: Pick<AgentEvent, 'type' | 'data'> }

/**
 * The run state machine (see docs/agent-protocol.md, "Run states"). Returns the next state or
 * throws AppError 409 for a transition the protocol forbids.
 * - (new) or completed/failed + new turn -> running; cancelled runs never reopen.
 * - awaiting_* + a turn that answers what is pending -> running; without answers -> 409.
 * - running + new turn -> 409 (one turn at a time; reattach uses the same turn_id instead).
 * - running/awaiting_* + cancel -> cancelled; completed/failed/cancelled + cancel -> 409.
 * - running + terminal event -> completed | awaiting_* (by stop reason) | failed | cancelled.
 */
export function nextRunState(current: RunState | undefined, trigger: RunTrigger): RunState {
  switch (trigger.kind) {
    case 'turn_posted': {
      if (current === undefined || current === 'completed' || current === 'failed') return 'running'
      if (current === 'awaiting_approval' || current === 'awaiting_client_tool') {
        if (trigger.answersPending) return 'running'
        throw new AppError(
          409,
          'run_awaiting_input',
          `the run is ${current.replace('_', ' ')}: answer it with ${current === 'awaiting_approval' ? 'approvals' : 'tool_results'} in the next turn, or cancel the run`,
        )
      }
      if (current === 'running') {
        throw new AppError(
          409,
          'run_busy',
          'the run already has a turn in progress; reattach with the same turn_id and body, or wait for its terminal event',
        )
      }
      throw new AppError(
        409,
        'run_cancelled',
        'the run was cancelled; start a new run (omit run_id or use a new one)',
      )
    }
    case 'cancel': {
      if (current === undefined) throw new AppError(404, 'run_not_found', 'no such run for this account')
      if (isTerminalRunState(current)) {
        throw new AppError(409, 'run_terminal', `the run is already ${current} and cannot be cancelled`)
      }
      return 'cancelled'
    }
    case 'event': {
      const { event } = trigger
      if (event.type === 'turn.started') return 'running'
      if (current !== 'running') {
        throw new Error(`event ${event.type} is not valid while the run is ${current ?? 'new'}`)
      }
      if (event.type === 'turn.failed') return 'failed'
      if (event.type === 'turn.cancelled') return 'cancelled'
      if (event.type === 'turn.completed') {
        const stop = (event.data as EventDataOf<'turn.completed'>).stop_reason
        if (stop === 'awaiting_approval') return 'awaiting_approval'
        if (stop === 'awaiting_client_tool') return 'awaiting_client_tool'
        return 'completed'
      }
      return current
    }
  }
}

/** Adds two usage records (per-turn into the run total). */
export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    reasoning_tokens: a.reasoning_tokens + b.reasoning_tokens,
    cached_input_tokens: a.cached_input_tokens + b.cached_input_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
  }
}

export const ZERO_USAGE: TokenUsage = {
  input_tokens: 0,
  output_tokens: 0,
  reasoning_tokens: 0,
  cached_input_tokens: 0,
  total_tokens: 0,
}
