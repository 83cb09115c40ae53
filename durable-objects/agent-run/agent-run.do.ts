/**
 * AgentRun: one Durable Object per agent run (named by the owning account and the run id), the
 * durable home of everything the run does. SQLite storage (agent-run.store.ts) holds the event
 * log, turns, the model conversation, tool calls, approvals and the due-work table; the model
 * loop (agent-run.loop.ts) runs here, so a cancel can abort it and an alarm can retry it.
 *
 * - Append first, then stream: `emit` writes the event row, then writes the line to every live
 *   follower; the output gate holds those bytes until the write is durable, so no client ever
 *   sees an event that could be lost. Heartbeats are the only unstored lines.
 * - Followers: each turn response is a follower of one turn. It gets the stored events after its
 *   cursor, then live events, and ends after its turn's terminal event. A follower that goes away
 *   changes nothing: the turn runs on, and the client resumes with `cursor`.
 * - One alarm drives the due-work table: turn timeouts, approval expiries, model retries, turns
 *   interrupted by a restart, turn usage not yet acknowledged by metering, and the run's row in
 *   the Postgres index (run-index.ts) when it is older than the run. Handlers are idempotent
 *   (alarms are at-least-once).
 * - The index: every change a list shows (created, a turn started or ended, cancelled) bumps the index
 *   version and writes `index_sync` due work in the same transaction; the object then writes the
 *   row at once (in the background, or before answering a cancel), and while Postgres is down the
 *   alarm retries it, backing off (durable-objects/postgres-index.ts). The row never moves backwards
 *   (it carries the version).
 * - The owner (tenant, mode and principal) is recorded with the first turn; anyone else gets the same
 *   404 as for a run that does not exist.
 */
import { DurableObject } from 'cloudflare:workers'
import { modelEntry } from '../../shared/catalog/model-catalog'
import { AppError, type Refused, toAppError } from '../../shared/http/errors'
import { type MeterGrant, meteringUnavailable, openMeter, outcomeStatus } from '../../shared/metering'
import { worstCaseCostUnits } from '../../shared/metering/key-spend'
import { type PlanCatalog, resolvePlan } from '../../shared/plans'
import { countPromptTokens } from '../../shared/providers'
import { logServerError, refused } from '../../shared/worker/log'
import type { Identity, Mode } from '../../shared/worker/request-context'
import { INDEX_RETRY_MIN_MS, indexRetryDelayMs, writeIndex } from '../postgres-index'
import {
  type EventDataOf,
  EventSequencer,
  encodeEvent,
  eventsAfterCursor,
  isTerminal,
  nextRunState,
  ZERO_USAGE,
} from './agent-events'
import type { AgentRunEnv } from './agent-run.context'
import { INDEX_SYNC_REF, type RunRow, RunStore, type TurnMeter, type TurnRow } from './agent-run.store'
import { type AgentSettings, agentSettingsFromEnv, turnOutputBudget } from './agent-settings'
import { Follower } from './follower'
import { transcriptMessages } from './model-prompt'
import { writeRunIndex } from './run-index'
import type { RunStatus } from './run-status.schemas'
import { assertAnswersPending, type TurnRequest } from './turn.schemas'
import { type AnswerResolution, expireApprovals, pendingState, resolveAnswers } from './turn-answers'
import type { DurableEventType, LoopHost, TurnExecution } from './turn-execution'
import { TurnLoop } from './turn-loop'
import type { TurnSettings } from './turn-settings'

/** How long after a turn ended (or a failed send) its usage is sent again if not acknowledged. */
const METER_SETTLE_RETRY_MS = 5_000

/** Who is asking: the run's owner must match exactly (tenant, mode and principal). */
export interface RunOwner {
  tenantId: string
  mode: Mode
  principalId: string
}

/** One posted turn, validated by the code worker. */
export interface TurnCall {
  owner: RunOwner
  /** The caller, for metering the turn against its tenant's limits. */
  identity: Identity
  runId: string
  request: TurnRequest
  bodyHash: string
  settings: TurnSettings
}

type NewTurnCheck = { kind: 'new'; answers: AnswerResolution; now: number }
type TurnCheck = { kind: 'reattach'; turn: TurnRow } | NewTurnCheck

/** Tokens reserved when a turn is admitted: its output budget plus its own text (settled later). */
export function estimatedTurnTokens(settings: TurnSettings): number {
  return (
    turnOutputBudget(settings.effort ?? undefined, modelEntry(settings.model).max_output_length) +
    Math.ceil(JSON.stringify(settings).length / 4)
  )
}

/**
 * A turn of a key with a spend limit keeps the worst case its admission reserved: its rounds after
 * the first stop before one could cost more (turn-loop.ts), so the turn's cost stays within it.
 */
function spendBounded(call: TurnCall, estimatedTokens: number, catalog: PlanCatalog): TurnCall {
  const principal = call.identity.principal
  if (principal.kind !== 'api_key' || !principal.limits?.spendLimit) return call
  const bound = worstCaseCostUnits(catalog, call.settings.model, estimatedTokens, undefined)
  return { ...call, settings: { ...call.settings, spend_bound_units: bound } }
}

/** Errors cross RPC as data: shared/http/errors.ts `AppErrorData`, revived by the run client. */
export type RunReply = { ok: true; run: RunStatus } | Refused

export function runNotFound(param = 'runId'): AppError {
  return new AppError(
    404,
    'run_not_found',
    'No agent run with this id exists for this account. Check the run id (it is in every event as run_id) and that you use the credential that started the run.',
    { param },
  )
}

export const NDJSON_HEADERS = {
  'content-type': 'application/x-ndjson; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
} as const

const encoder = new TextEncoder()

function iso(ms: number): string {
  return new Date(ms).toISOString()
}

export class AgentRun extends DurableObject<AgentRunEnv> implements LoopHost {
  readonly store: RunStore
  private readonly loop: TurnLoop
  private readonly followers = new Set<Follower>()
  private execution: TurnExecution | null = null

  constructor(ctx: DurableObjectState, env: AgentRunEnv) {
    super(ctx, env)
    this.store = new RunStore(ctx.storage.sql)
    this.loop = new TurnLoop(this)
    void ctx.blockConcurrencyWhile(async () => {
      this.store.migrate()
      // A new instance never has a loop in memory: a turn stored as running was cut off by a
      // restart, unless it is only waiting for its retry alarm.
      const run = this.store.run()
      const turnId = run?.state === 'running' ? run.active_turn_id : null
      if (turnId) {
        const waiting = this.store.allDueWork().some((w) => w.kind === 'model_retry' && w.ref === turnId)
        if (!waiting) this.store.schedule('turn_interrupted', turnId, Date.now())
      }
      await this.armAlarm()
    })
  }

  get workerEnv(): AgentRunEnv {
    return this.env
  }

  get settings(): AgentSettings {
    return agentSettingsFromEnv(this.env)
  }

  now(): number {
    return Date.now()
  }

  // --- LoopHost ---------------------------------------------------------------------------------

  emit<T extends DurableEventType>(turnId: string, type: T, data: EventDataOf<T>): void {
    const runId = this.store.runId()
    if (!runId) throw new Error('emit before the run exists')
    // Validated and serialised once, by the protocol's one encoder, before it takes its seq.
    const sequencer = new EventSequencer(runId, this.store.lastSeq())
    const { line } = sequencer.append(turnId, type, data)
    const seq = sequencer.lastSeq
    this.store.appendEvent(seq, turnId, type, line)
    const bytes = encoder.encode(line)
    const ends = isTerminal(type)
    for (const follower of this.followers) {
      follower.write(bytes, seq)
      if (ends && follower.turnId === turnId) {
        follower.close()
        this.followers.delete(follower)
      }
    }
  }

  // --- RPC: turns -------------------------------------------------------------------------------

  /**
   * POST /svc/code/v1/turns for this run: a reattach to an existing turn, or a new turn. A new turn
   * is checked (400/409, nothing written), admitted by the tenant's RateLimiter (402/403/429 with
   * the action-required body, 503 when it cannot be asked), then checked again and accepted: the
   * admission awaited the limiter, and another request may have changed the run meanwhile.
   */
  async postTurn(call: TurnCall): Promise<Response> {
    try {
      const first = this.checkTurn(call)
      if (first.kind === 'reattach') return this.follow(call.runId, first.turn, call.request.cursor ?? 0)
      const { catalog } = resolvePlan(this.env, call.identity.planId)
      const meter = openMeter(this.env.RATE_LIMITER, call.identity, 'code.turns')
      const estimatedTokens = estimatedTurnTokens(call.settings) + this.conversationBound(call)
      let grant: MeterGrant
      try {
        grant = await meter.acquire(
          {
            requestId: `agent-turn:${call.runId}:${call.bodyHash.slice(7, 39)}`,
            model: call.settings.model,
            estimatedTokens,
          },
          catalog,
        )
      } catch (err) {
        throw err instanceof AppError
          ? err
          : meteringUnavailable(err instanceof Error ? err.message : String(err))
      }
      const release = (status: number) =>
        void meter.settle(grant, { usage: null, estimated: false, provider: 'none', status })
      let response: Response
      try {
        const second = this.checkTurn(call)
        if (second.kind === 'reattach') {
          // Another request started this turn meanwhile: this one follows it (200).
          release(200)
          return this.follow(call.runId, second.turn, call.request.cursor ?? 0)
        }
        response = this.acceptTurn(spendBounded(call, estimatedTokens, catalog), second, {
          identity: call.identity,
          grant,
        })
      } catch (err) {
        release(toAppError(err).status)
        throw err
      }
      await this.armAlarm()
      // The run (or its new turn) is in the index as soon as Postgres answers; the stream need not wait.
      void this.syncIndex()
      for (const [name, value] of Object.entries(grant.headers)) response.headers.set(name, value)
      return response
    } catch (err) {
      const error = toAppError(err)
      logServerError(error)
      return error.toResponse()
    }
  }

  /**
   * For a spend-limited key, what the turn's first round re-sends besides its settings: the run's
   * conversation so far, and the transcript this turn seeds (its UTF-8 bytes: no token is
   * shorter than a byte), so its reservation covers that round. Other turns: 0 (the estimate).
   */
  private conversationBound(call: TurnCall): number {
    const principal = call.identity.principal
    if (principal.kind !== 'api_key' || !principal.limits?.spendLimit) return 0
    const transcript = new TextEncoder().encode(JSON.stringify(call.request.transcript)).byteLength
    return countPromptTokens(this.store.conversation(), undefined) + transcript
  }

  private owns(run: RunRow, owner: RunOwner): boolean {
    return (
      run.tenant_id === owner.tenantId &&
      run.test_mode === (owner.mode === 'test') &&
      run.principal_id === owner.principalId
    )
  }

  /** Every check of a posted turn, without writing anything. */
  private checkTurn(call: TurnCall): TurnCheck {
    const { store } = this
    const { request } = call
    const settings = this.settings
    const run = store.run()
    if (run && !this.owns(run, call.owner)) throw runNotFound('run_id')
    const cursor = request.cursor ?? 0
    const head = store.lastSeq()
    const existing = run ? store.turn(request.turn_id) : null
    if (existing && existing.body_hash !== call.bodyHash) {
      throw new AppError(
        409,
        'turn_id_reused',
        `turn_id ${JSON.stringify(request.turn_id)} was already used in this run with a different request body; resend the original body to reattach, or use a new turn_id`,
        { param: 'turn_id' },
      )
    }
    eventsAfterCursor([], cursor, head)
    if (existing) return { kind: 'reattach', turn: existing }

    const now = this.now()
    const pending = run ? pendingState(store, now) : { approvals: [], awaitingResults: [], expired: [] }
    const answers = resolveAnswers(store, pending, call.settings, request.approvals ?? [])
    const owes = answers.requiredApprovals.length + answers.requiredResults.length > 0
    const answered = (request.approvals?.length ?? 0) + (request.tool_results?.length ?? 0) > 0
    nextRunState(run?.state, { kind: 'turn_posted', answersPending: !owes || answered })
    if (
      run &&
      (run.usage_json.total_tokens >= settings.runMaxTokens || run.cost_usd >= settings.runMaxCostUsd)
    ) {
      throw new AppError(
        409,
        'run_budget_exhausted',
        `this run has used ${run.usage_json.total_tokens} tokens ($${run.cost_usd.toFixed(4)}) of its cap (${settings.runMaxTokens} tokens, $${settings.runMaxCostUsd}); start a new run to continue`,
      )
    }
    assertAnswersPending(
      {
        approvals: answers.requiredApprovals,
        toolCalls: answers.requiredResults,
        optionalApprovals: answers.optionalApprovals,
        optionalToolCalls: answers.optionalResults,
      },
      request,
    )
    const continuing = answered || pending.expired.length > 0 || answers.decisions.size > 0
    if (request.request.trim() === '' && !continuing) {
      throw new AppError(
        400,
        'empty_request',
        'request must not be empty: say what the agent should do (it may be empty only on a turn that answers approvals or returns tool results)',
        { param: 'request' },
      )
    }
    return { kind: 'new', answers, now }
  }

  /** Writes the new turn, applies its answers and starts its loop (synchronous up to the loop). */
  private acceptTurn(call: TurnCall, check: NewTurnCheck, meter: TurnMeter): Response {
    const { store } = this
    const { request, settings } = call
    const { answers, now } = check
    const head = store.lastSeq()
    expireApprovals(store, now)
    if (!store.run()) {
      store.createRun({
        runId: call.runId,
        tenantId: call.owner.tenantId,
        principalId: call.owner.principalId,
        testMode: settings.test_mode,
        sessionId: settings.session_id,
        model: settings.model,
        mode: settings.mode,
        now,
        usage: ZERO_USAGE,
      })
      for (const message of transcriptMessages(request.transcript)) store.addMessage(request.turn_id, message)
    }
    store.setRunTurnSettings(settings.model, settings.mode, settings.session_id)
    store.insertTurn({
      turnId: request.turn_id,
      bodyHash: call.bodyHash,
      settings,
      startedSeq: head + 1,
      now,
      usage: ZERO_USAGE,
      meter,
    })
    store.setRunState('running', now, request.turn_id)
    store.schedule('turn_timeout', request.turn_id, now + this.settings.turnTimeoutMs)
    const exec: TurnExecution = { turnId: request.turn_id, controller: new AbortController() }
    this.emit(request.turn_id, 'turn.started', {
      session_id: settings.session_id,
      model: settings.model,
      mode: settings.mode,
      effort: settings.effort,
      enable_thinking: settings.enable_thinking,
    })
    this.loop.applyAnswers(exec, settings, answers, request.tool_results ?? [])
    const turn = store.turn(request.turn_id)
    if (!turn) throw new Error('the turn was not stored')
    const response = this.follow(call.runId, turn, request.cursor ?? 0)
    this.start(exec)
    return response
  }

  /**
   * Settles the turn's metering admission with what the turn used. The `meter_settle` due work is
   * written in the same transaction as the terminal event, so if this process dies before the
   * RateLimiter acknowledges, the alarm sends it again (the RateLimiter ignores a repeat).
   */
  turnEnded(turnId: string): void {
    void this.syncIndex()
    const turn = this.store.turn(turnId)
    if (!turn?.meter_json) return
    this.store.schedule('meter_settle', turnId, this.now() + METER_SETTLE_RETRY_MS)
    void this.settleTurn(turnId)
  }

  /** Sends the turn's usage to its RateLimiter; done (unscheduled) once acknowledged. */
  private async settleTurn(turnId: string): Promise<void> {
    const turn = this.store.turn(turnId)
    if (!turn?.meter_json) {
      this.store.unschedule('meter_settle', turnId)
      return
    }
    const { identity, grant } = turn.meter_json
    const usage = turn.usage_json
    const delivered = await openMeter(this.env.RATE_LIMITER, identity, 'code.turns').settle(grant, {
      usage:
        usage.total_tokens === 0
          ? null
          : {
              promptTokens: usage.input_tokens,
              completionTokens: usage.output_tokens,
              totalTokens: usage.total_tokens,
              cachedTokens: usage.cached_input_tokens,
              reasoningTokens: usage.reasoning_tokens,
            },
      estimated: turn.usage_estimated,
      provider: turn.provider ?? 'none',
      // The turn's stream began with 200; the log records how it ended (request-status.ts).
      status: outcomeStatus(turn.state === 'running' ? 'failed' : turn.state),
      ...(turn.ended_at === null ? {} : { endedAt: turn.ended_at }),
    })
    if (delivered) this.store.unschedule('meter_settle', turnId)
    await this.armAlarm()
  }

  /**
   * Writes the run's row to the Postgres index; done (unscheduled) when the version written is
   * still the run's, due again at once when the run changed meanwhile, after a backoff when the
   * write failed. Re-arms the alarm either way.
   */
  private async syncIndex(): Promise<void> {
    const run = this.store.run()
    if (!run) {
      this.store.unschedule('index_sync', INDEX_SYNC_REF)
      return
    }
    const turnCount = this.store.turnCount()
    const written = await writeIndex(
      this.env,
      { event: 'agent_run_index_write_failed', ref: { run_id: run.run_id } },
      (db) => writeRunIndex(db, run, turnCount),
    )
    if (!written) this.store.schedule('index_sync', INDEX_SYNC_REF, this.now() + this.indexRetryDelay())
    else if (this.store.run()?.index_version === run.index_version)
      this.store.unschedule('index_sync', INDEX_SYNC_REF)
    else this.store.schedule('index_sync', INDEX_SYNC_REF, this.now())
    await this.armAlarm()
  }

  /** How long a failed index write waits: it backs off as the row lags behind the run. */
  private indexRetryDelay(): number {
    const run = this.store.run()
    return run ? indexRetryDelayMs(this.now(), run.updated_at) : INDEX_RETRY_MIN_MS
  }

  /** Runs the loop of a turn in the background; the turn's own events end it. */
  private start(exec: TurnExecution): void {
    this.execution = exec
    const run = async () => {
      try {
        // Let the accepted turn's writes commit first, so its first events leave through the
        // output gate now rather than after the first model round.
        await this.ctx.storage.sync()
        await this.loop.drive(exec)
      } finally {
        if (this.execution === exec) this.execution = null
        await this.armAlarm()
      }
    }
    run().catch((err: unknown) => logServerError(toAppError(err)))
  }

  /** Aborts the turn's loop (its upstream call with it) and counts what that call used so far. */
  private stopExecution(turnId: string): void {
    const exec = this.execution
    if (exec?.turnId !== turnId) return
    exec.controller.abort(new Error('turn stopped'))
    this.execution = null
    this.loop.chargeStoppedCall(exec)
  }

  /** A response following `turn`: stored events after `cursor`, then live ones until it ends. */
  private follow(runId: string, turn: TurnRow, cursor: number): Response {
    const upTo = turn.terminal_seq ?? this.store.lastSeq()
    const lines = this.store.eventLines(cursor, upTo)
    const ended = turn.terminal_seq !== null
    const heartbeatMs = this.settings.heartbeatMs
    let follower: Follower | undefined
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        for (const line of lines) controller.enqueue(encoder.encode(line))
        if (ended) {
          controller.close()
          return
        }
        follower = new Follower(
          controller,
          turn.turn_id,
          Math.max(cursor, upTo),
          (turnId, lastSeq) =>
            encodeEvent(new EventSequencer(runId, lastSeq).heartbeat(turnId, lastSeq, heartbeatMs)),
          heartbeatMs,
        )
        this.followers.add(follower)
        follower.arm()
      },
      cancel: () => {
        if (!follower) return
        follower.stop()
        this.followers.delete(follower)
      },
    })
    return new Response(body, { headers: { ...NDJSON_HEADERS, 'x-svc-run-id': runId } })
  }

  // --- RPC: status and cancel -------------------------------------------------------------------

  async status(owner: RunOwner): Promise<RunReply> {
    try {
      const run = this.store.run()
      if (!run || !this.owns(run, owner)) throw runNotFound()
      return { ok: true, run: this.statusOf(run) }
    } catch (err) {
      return refused(err)
    }
  }

  /** DELETE: running or waiting -> cancelled (the live turn ends with `turn.cancelled`). */
  async cancel(owner: RunOwner, reason: string): Promise<RunReply> {
    try {
      const run = this.store.run()
      if (!run || !this.owns(run, owner)) throw runNotFound()
      nextRunState(run.state, { kind: 'cancel' })
      const now = this.now()
      if (run.state === 'running' && run.active_turn_id) {
        this.stopExecution(run.active_turn_id)
        this.loop.cancel(run.active_turn_id, reason, 'user')
      }
      for (const approval of this.store.approvalsIn('pending')) {
        this.store.resolveApproval(approval.approval_id, 'cancelled', null, true)
        this.store.setToolCallStatus(approval.call_id, 'denied')
      }
      for (const call of this.store.toolCallsIn('awaiting_result'))
        this.store.setToolCallStatus(call.call_id, 'denied')
      this.store.setRunState('cancelled', now, null)
      this.store.setCancelReason(reason)
      this.store.clearDueWork()
      // A list read right after the cancel shows it (Postgres down: the alarm writes it later).
      await this.syncIndex()
      const after = this.store.run()
      if (!after) throw new Error('the run row vanished')
      return { ok: true, run: this.statusOf(after) }
    } catch (err) {
      return refused(err)
    }
  }

  private statusOf(run: RunRow): RunStatus {
    const settings = this.settings
    const last = this.store.lastTurn()
    const pending = pendingState(this.store, this.now())
    return {
      object: 'agent.run',
      id: run.run_id,
      state: run.state,
      session_id: run.session_id,
      model: run.model,
      mode: run.mode as RunStatus['mode'],
      test_mode: run.test_mode,
      created_at: iso(run.created_at),
      updated_at: iso(run.updated_at),
      last_seq: this.store.lastSeq(),
      turn_count: this.store.turnCount(),
      last_turn: last
        ? {
            turn_id: last.turn_id,
            state: last.state,
            stop_reason: (last.stop_reason as NonNullable<RunStatus['last_turn']>['stop_reason']) ?? null,
            started_at: iso(last.started_at),
            ended_at: last.ended_at === null ? null : iso(last.ended_at),
          }
        : null,
      pending_approvals: pending.approvals.map((a) => ({
        approval_id: a.approval_id,
        call_id: a.call_id,
        tool_name: this.store.toolCall(a.call_id)?.name ?? '',
        reason: a.reason,
        expires_at: iso(a.expires_at),
      })),
      pending_tool_calls: pending.awaitingResults.map((c) => ({
        call_id: c.call_id,
        name: c.name,
        executor: c.executor === 'mcp' ? 'mcp' : 'client',
        arguments: c.arguments_json,
      })),
      usage: { ...run.usage_json, cost_usd: roundUsd(run.cost_usd) },
      limits: {
        max_total_tokens: settings.runMaxTokens,
        remaining_tokens: Math.max(0, settings.runMaxTokens - run.usage_json.total_tokens),
        max_cost_usd: settings.runMaxCostUsd,
        remaining_cost_usd: roundUsd(Math.max(0, settings.runMaxCostUsd - run.cost_usd)),
        max_tool_rounds_per_turn: settings.maxToolRounds,
        turn_timeout_ms: settings.turnTimeoutMs,
        approval_ttl_ms: settings.approvalTtlMs,
      },
    }
  }

  // --- alarm ------------------------------------------------------------------------------------

  override async alarm(): Promise<void> {
    for (const work of this.store.dueWork(this.now())) {
      this.store.unschedule(work.kind, work.ref)
      switch (work.kind) {
        case 'turn_timeout':
          this.timeOut(work.ref)
          break
        case 'approval_expiry':
          expireApprovals(this.store, Number.POSITIVE_INFINITY, work.ref)
          break
        case 'model_retry':
          this.retry(work.ref)
          break
        case 'turn_interrupted':
          this.interrupted(work.ref)
          break
        case 'meter_settle':
          // Rescheduled first: a crash during the send leaves it due again.
          this.store.schedule('meter_settle', work.ref, this.now() + METER_SETTLE_RETRY_MS)
          await this.settleTurn(work.ref)
          break
        case 'index_sync':
          this.store.schedule('index_sync', work.ref, this.now() + this.indexRetryDelay())
          await this.syncIndex()
          break
      }
    }
    await this.armAlarm()
  }

  private timeOut(turnId: string): void {
    const turn = this.store.turn(turnId)
    if (turn?.state !== 'running') return
    this.stopExecution(turnId)
    this.loop.fail(
      turnId,
      {
        code: 'turn_timeout',
        message: `the turn was still running after ${Math.round(this.settings.turnTimeoutMs / 1000)} s (AGENT_TURN_TIMEOUT_MS) and was stopped; send a new turn to continue the run`,
      },
      true,
    )
  }

  private retry(turnId: string): void {
    const turn = this.store.turn(turnId)
    if (turn?.state !== 'running' || this.execution) return
    this.start({ turnId, controller: new AbortController() })
  }

  private interrupted(turnId: string): void {
    const turn = this.store.turn(turnId)
    if (turn?.state !== 'running' || this.execution?.turnId === turnId) return
    this.loop.fail(
      turnId,
      {
        code: 'turn_interrupted',
        message:
          'the agent runtime restarted while this turn was running; send a new turn to continue the run',
      },
      true,
    )
  }

  /** One alarm for the whole due-work table, at its earliest row (or none). */
  private async armAlarm(): Promise<void> {
    const next = this.store.nextDueAt()
    const current = await this.ctx.storage.getAlarm()
    if (next === null) {
      if (current !== null) await this.ctx.storage.deleteAlarm()
      return
    }
    // Work due at any past time is due now (the runtime refuses an alarm time <= 0).
    const at = Math.max(next, 1)
    if (current !== at) await this.ctx.storage.setAlarm(at)
  }
}

function roundUsd(value: number): number {
  return Math.round(value * 1e6) / 1e6
}
