/**
 * The protocol client of svc.code.v1 (docs/agent-protocol.md): sends a turn, follows its NDJSON
 * events, asks the approval policy about the calls the mode wants approved, runs approved
 * workspace tools and sends their results in the next turn of the same run, and resumes from its
 * last seq when a connection drops (same run_id, turn_id and body, `cursor` = the last seq seen),
 * refusing any gap. `AgentClient` is the library the CLI and the end-to-end tests drive.
 */
import { randomUUID } from 'node:crypto'
import path from 'node:path'
import {
  type AgentEvent,
  type AgentEventOf,
  isTerminal,
  NdjsonEventParser,
} from '../../durable-objects/agent-run/agent-events.ts'
import { DEFAULT_TOOLS, type ToolResultBody, type WorkspaceTool } from './workspace-tools.ts'

export type ApprovalPolicy =
  | 'always'
  | 'never'
  | ((request: { name: string; arguments: Record<string, unknown>; reason: string }) => Promise<boolean>)

export interface AgentClientOptions {
  baseUrl: string
  apiKey: string
  model?: string
  mode?: 'manual' | 'plan' | 'edit' | 'auto'
  effort?: string
  thinking?: boolean
  sessionId?: string
  runId?: string
  /** Continue after this seq (a run started elsewhere). */
  cursor?: number
  workspace: string
  tools?: readonly WorkspaceTool[]
  approve: ApprovalPolicy
  /** Replaceable for tests (e.g. a fetch that cuts connections). */
  fetch?: typeof fetch
  onEvent?: (event: AgentEvent) => void
  /** Called when a dropped connection is resumed (attempt number, cursor). */
  onReconnect?: (attempt: number, cursor: number) => void
  /** Connection attempts per turn before giving up (default 20). */
  maxAttempts?: number
  /** First reconnect delay in ms, doubled per attempt up to 5 s (default 200). */
  reconnectDelayMs?: number
  /** Turns (tool round trips) per `send` (default 16). */
  maxTurns?: number
}

export class AgentHttpError extends Error {
  readonly status: number
  readonly body: { error?: { message?: string; code?: string } } | null

  constructor(status: number, body: { error?: { message?: string; code?: string } } | null) {
    super(
      `HTTP ${status}${body?.error?.code ? ` ${body.error.code}` : ''}: ${body?.error?.message ?? 'no error body'}`,
    )
    this.name = 'AgentHttpError'
    this.status = status
    this.body = body
  }
}

export class ProtocolError extends Error {
  override name = 'ProtocolError'
}

type Terminal = AgentEventOf<'turn.completed'> | AgentEventOf<'turn.failed'> | AgentEventOf<'turn.cancelled'>

export interface RunOutcome {
  runId: string
  /** The last turn's terminal event. */
  terminal: Terminal
  turns: number
}

const RETRY_STATUSES = new Set([429, 502, 503, 504])

export class AgentClient {
  readonly runId: string
  readonly sessionId: string
  lastSeq: number
  /** Every durable event received, in seq order, without duplicates (heartbeats excluded). */
  readonly events: AgentEvent[] = []
  private readonly calls = new Map<string, AgentEventOf<'tool_call.requested'>['data']>()
  private readonly approvals = new Map<string, AgentEventOf<'approval.requested'>['data']>()
  private readonly options: AgentClientOptions
  private readonly tools: readonly WorkspaceTool[]
  /** The body of the latest turn, for a reattach from any cursor (`replay`). */
  private lastTurnBody: Record<string, unknown> | null = null

  constructor(options: AgentClientOptions) {
    this.options = options
    this.runId = options.runId ?? randomUUID()
    this.sessionId = options.sessionId ?? `cli-${randomUUID()}`
    this.lastSeq = options.cursor ?? 0
    this.tools = options.tools ?? DEFAULT_TOOLS
  }

  private get fetch(): typeof fetch {
    return this.options.fetch ?? fetch
  }

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${this.options.apiKey}`, 'content-type': 'application/json' }
  }

  private turnBody(turnId: string, extra: Record<string, unknown>): Record<string, unknown> {
    return {
      protocol: 'svc.code.v1',
      session_id: this.sessionId,
      run_id: this.runId,
      turn_id: turnId,
      model: this.options.model ?? 'svc-comb',
      mode: this.options.mode ?? 'edit',
      ...(this.options.effort ? { effort: this.options.effort } : {}),
      ...(this.options.thinking ? { enable_thinking: true } : {}),
      workspace: { root: path.basename(this.options.workspace), client: 'svc-agent-cli' },
      transcript: [],
      capabilities: { file_changes: true, approvals: true },
      client_tools: this.tools.map(({ name, description, input_schema, tags }) => ({
        name,
        description,
        input_schema,
        tags,
      })),
      ...extra,
    }
  }

  private record(event: AgentEvent): void {
    if (event.type === 'tool_call.requested') this.calls.set(event.data.call_id, event.data)
    if (event.type === 'approval.requested') this.approvals.set(event.data.approval_id, event.data)
  }

  /**
   * One turn, to its terminal event, surviving dropped connections: the same body is posted again
   * with `cursor` = the last seq received, which replays what was missed and follows the turn.
   */
  async turn(turnId: string, extra: Record<string, unknown>): Promise<Terminal> {
    const body = this.turnBody(turnId, extra)
    this.lastTurnBody = body
    const maxAttempts = this.options.maxAttempts ?? 20
    let delay = this.options.reconnectDelayMs ?? 200
    let lastError: unknown = null
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (attempt > 1) {
        this.options.onReconnect?.(attempt, this.lastSeq)
        await new Promise((resolve) => setTimeout(resolve, delay))
        delay = Math.min(delay * 2, 5_000)
      }
      let response: Response
      try {
        response = await this.fetch(`${this.options.baseUrl}/svc/code/v1/turns`, {
          method: 'POST',
          headers: this.headers(),
          body: JSON.stringify({ ...body, cursor: this.lastSeq }),
        })
      } catch (err) {
        lastError = err
        continue
      }
      if (!response.ok) {
        const error = new AgentHttpError(response.status, await response.json().catch(() => null))
        if (!RETRY_STATUSES.has(response.status)) throw error
        lastError = error
        continue
      }
      try {
        const terminal = await this.follow(response, turnId)
        if (terminal) return terminal
        lastError = new ProtocolError('the stream ended before the turn did')
      } catch (err) {
        if (err instanceof ProtocolError) throw err
        lastError = err
      }
    }
    throw lastError instanceof Error ? lastError : new Error(String(lastError))
  }

  /** Reads one response; returns the turn's terminal event, or null if the stream broke first. */
  private async follow(response: Response, turnId: string): Promise<Terminal | null> {
    if (!response.body) return null
    const parser = new NdjsonEventParser()
    const reader = response.body.getReader()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        const events = done ? parser.end() : parser.push(value)
        for (const event of events) {
          if (event.type === 'heartbeat') continue
          if (event.seq <= this.lastSeq) continue
          if (event.seq !== this.lastSeq + 1) {
            throw new ProtocolError(
              `event seq ${event.seq} follows ${this.lastSeq}: the server skipped events`,
            )
          }
          this.lastSeq = event.seq
          this.events.push(event)
          this.record(event)
          this.options.onEvent?.(event)
          if (isTerminal(event.type) && event.turn_id === turnId) {
            await reader.cancel().catch(() => {})
            return event as Terminal
          }
        }
        if (done) return null
      }
    } finally {
      reader.releaseLock()
    }
  }

  private async decide(approvalId: string): Promise<boolean> {
    const ask = this.approvals.get(approvalId)
    const call = ask ? this.calls.get(ask.call_id) : undefined
    const policy = this.options.approve
    if (policy === 'always') return true
    if (policy === 'never') return false
    return policy({
      name: call?.name ?? 'a tool',
      arguments: call?.arguments ?? {},
      reason: ask?.reason ?? '',
    })
  }

  private async runTool(callId: string): Promise<ToolResultBody> {
    const call = this.calls.get(callId)
    const tool = call ? this.tools.find((t) => t.name === call.name) : undefined
    if (!call || !tool) {
      return { call_id: callId, output: `this client has no tool for call ${callId}`, is_error: true }
    }
    try {
      return { call_id: callId, ...(await tool.run(call.arguments, this.options.workspace)) }
    } catch (err) {
      return { call_id: callId, output: err instanceof Error ? err.message : String(err), is_error: true }
    }
  }

  /**
   * Sends `request` as a new turn, then keeps the run going while it waits for approvals or
   * client tool results: asks (or applies the policy), runs the approved client tools, and sends
   * the answers as the next turn. Returns when a turn ends for another reason.
   */
  async send(request: string): Promise<RunOutcome> {
    const maxTurns = this.options.maxTurns ?? 16
    let extra: Record<string, unknown> = { request }
    for (let turns = 1; ; turns++) {
      const terminal = await this.turn(`turn-${randomUUID()}`, extra)
      if (terminal.type !== 'turn.completed') return { runId: this.runId, terminal, turns }
      const stop = terminal.data.stop_reason
      if ((stop !== 'awaiting_approval' && stop !== 'awaiting_client_tool') || turns >= maxTurns) {
        return { runId: this.runId, terminal, turns }
      }
      const approvals: { approval_id: string; decision: 'approve' | 'deny' }[] = []
      const toRun = [...(terminal.data.pending_tool_calls ?? [])]
      for (const approvalId of terminal.data.pending_approvals ?? []) {
        const approved = await this.decide(approvalId)
        approvals.push({ approval_id: approvalId, decision: approved ? 'approve' : 'deny' })
        const callId = this.approvals.get(approvalId)?.call_id
        const call = callId ? this.calls.get(callId) : undefined
        if (approved && call && call.executor !== 'server') toRun.push(call.call_id)
      }
      const results: ToolResultBody[] = []
      for (const callId of toRun) results.push(await this.runTool(callId))
      extra = {
        request: '',
        ...(approvals.length > 0 ? { approvals } : {}),
        ...(results.length > 0 ? { tool_results: results } : {}),
      }
    }
  }

  /**
   * Everything the server stored for this run up to the end of the latest turn: that turn posted
   * again (same body, so it reattaches) from cursor 0. Changes nothing on the client.
   */
  async replay(fetchImpl: typeof fetch = this.fetch): Promise<AgentEvent[]> {
    if (!this.lastTurnBody) return []
    const response = await fetchImpl(`${this.options.baseUrl}/svc/code/v1/turns`, {
      method: 'POST',
      headers: this.headers(),
      body: JSON.stringify({ ...this.lastTurnBody, cursor: 0 }),
    })
    if (!response.ok || !response.body)
      throw new AgentHttpError(response.status, await response.json().catch(() => null))
    const parser = new NdjsonEventParser()
    const events: AgentEvent[] = []
    const reader = response.body.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      events.push(...(done ? parser.end() : parser.push(value)))
      if (done) return events.filter((e) => e.type !== 'heartbeat')
    }
  }

  /** DELETE /svc/agents/runs/{runId}. */
  async cancel(): Promise<Response> {
    return this.fetch(`${this.options.baseUrl}/svc/agents/runs/${this.runId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${this.options.apiKey}` },
    })
  }
}
