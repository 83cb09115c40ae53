/**
 * The round driver of one turn, run inside its AgentRun object. It reads and writes only the run's
 * storage (agent-run.store.ts) and reports through the object's `emit`, which persists each event
 * before any connection sees it. Everything it needs to continue is in storage, so a turn that
 * waits for a retry alarm resumes where it stopped, in a fresh instance if need be.
 *
 * A turn:
 * 1. accept (synchronous, in the request that posts the turn): `turn.started`, then the answers
 *    it carries (turn-answers.ts).
 * 2. drive (asynchronous): run approved server tools; stop if the client still owes results;
 *    then model rounds: call the model (model-round.ts; text/reasoning deltas stream as events),
 *    record its tool calls and decide each (tool-calls.ts), and stop when the model answers
 *    without tools, when approvals or client results are needed, or when a budget runs out. A
 *    transient provider failure before any delta schedules a retry alarm.
 * 3. end: `turn.diff` (when files changed), `usage`, exactly one terminal event, the run state.
 *
 * The prompt and tools come from model-prompt.ts; usage and cost are counted by turn-usage.ts.
 */
import { modelEntry } from '../../shared/catalog/model-catalog'
import { type AppError, toAppError } from '../../shared/http/errors'
import { listCostUnits, worstCaseCostUnits } from '../../shared/metering/key-spend'
import { checkContextLimit, resolvePlan, upgradeMessage } from '../../shared/plans'
import { countPromptTokens } from '../../shared/providers'
import type { ProviderChatMessage, ProviderChatRequest } from '../../shared/providers/chat-wire'
import { errorFields, log } from '../../shared/worker/log'
import { type EventDataOf, nextRunState, type RunState } from './agent-events'
import type { TurnRow } from './agent-run.store'
import { retryDelayMs, turnOutputBudget } from './agent-settings'
import { ClientToolRegistry } from './client-tools'
import { turnDiff } from './file-changes'
import { systemPrompt, toolsFor } from './model-prompt'
import { runModelRound } from './model-round'
import { offerToolCall, runServerTool } from './tool-calls'
import type { ToolResult } from './turn.schemas'
import { type AnswerResolution, applyAnswers, pendingState } from './turn-answers'
import { type LoopHost, type TurnExecution, TurnStopped, TurnWriter } from './turn-execution'
import type { TurnSettings } from './turn-settings'
import { chargeStoppedCall, recordModelCall, tokenUsageOf } from './turn-usage'

/** Failures worth another attempt later: every provider failed, overloaded or rate limited. */
export function isTransient(error: AppError): boolean {
  if (error.code === 'provider_not_configured' || error.code === 'provider_config_invalid') return false
  return error.status === 502 || error.status === 503 || error.status === 504 || error.status === 429
}

export class TurnLoop {
  constructor(private readonly host: LoopHost) {}

  private get store() {
    return this.host.store
  }

  /** Step 1 of a turn: what the request answers, and the user's text (synchronous). */
  applyAnswers(
    exec: TurnExecution,
    settings: TurnSettings,
    resolution: AnswerResolution,
    toolResults: readonly ToolResult[],
  ): void {
    applyAnswers(new TurnWriter(this.host, exec), settings, resolution, toolResults)
  }

  /**
   * Steps 2 and 3: runs until the turn ends or waits for a retry alarm. Never throws: a failure
   * becomes `turn.failed`; a stop (cancel, timeout) has already written its own terminal event.
   */
  async drive(exec: TurnExecution): Promise<void> {
    if (exec.controller.signal.aborted) return
    try {
      await this.driveRounds(new TurnWriter(this.host, exec))
    } catch (err) {
      if (err instanceof TurnStopped || exec.controller.signal.aborted) return
      const error = toAppError(err)
      log('error', 'turn_failed', { turn_id: exec.turnId, ...errorFields(error) })
      this.fail(exec.turnId, { code: error.code, message: error.message }, error.status >= 500)
    }
  }

  private turnRow(turnId: string): TurnRow {
    const turn = this.store.turn(turnId)
    if (!turn) throw new Error(`turn ${turnId} is not stored`)
    return turn
  }

  private async driveRounds(turn: TurnWriter): Promise<void> {
    const { store, host } = this
    const { exec } = turn
    const settings = this.turnRow(exec.turnId).settings_json
    for (const call of store.toolCallsIn('approved')) await runServerTool(turn, call)
    if (this.stopIfWaiting(exec.turnId)) return

    const budget = turnOutputBudget(
      settings.effort ?? undefined,
      modelEntry(settings.model).max_output_length,
    )
    const registry = new ClientToolRegistry(settings.client_tools)
    const tools = toolsFor(settings)
    for (;;) {
      const current = this.turnRow(exec.turnId)
      const run = store.run()
      if (!run) throw new Error('the run row is missing')
      if (current.rounds >= host.settings.maxToolRounds) return this.complete(exec.turnId, 'max_tool_rounds')
      const remaining = budget - current.usage_json.output_tokens
      if (remaining <= 0) return this.complete(exec.turnId, 'max_tokens')
      if (
        run.usage_json.total_tokens >= host.settings.runMaxTokens ||
        run.cost_usd >= host.settings.runMaxCostUsd
      ) {
        return this.complete(exec.turnId, 'budget_exhausted')
      }

      const messages: ProviderChatMessage[] = [
        { role: 'system', content: systemPrompt(settings) },
        ...store.conversation(),
      ]
      const promptTokens = countPromptTokens(messages, tools)
      // Resolved for every call: the deployment's catalog decides, as it does for chat.
      const { plan: billingPlan, catalog } = resolvePlan(host.workerEnv, settings.billing_plan_id)
      const refusal = checkContextLimit(
        billingPlan,
        { model: settings.model, promptTokens, maxOutputTokens: remaining },
        { catalog },
      )
      if (settings.spend_bound_units !== undefined && current.rounds > 0) {
        const used = current.usage_json
        const spent = listCostUnits(catalog, {
          model: settings.model,
          promptTokens: used.input_tokens,
          completionTokens: used.output_tokens,
          cachedTokens: used.cached_input_tokens,
          quantity: 0,
        })
        // One credit unit of slack: the turn is settled as one request, rounded once.
        const next = worstCaseCostUnits(catalog, settings.model, promptTokens + remaining, undefined)
        if (spent + next + 1 > settings.spend_bound_units)
          return this.complete(exec.turnId, 'budget_exhausted')
      }
      if (refusal) {
        return this.fail(
          exec.turnId,
          { code: refusal.reason, message: upgradeMessage(refusal, catalog) },
          false,
        )
      }
      const request: ProviderChatRequest = {
        model: settings.model,
        messages,
        stream: true,
        stream_options: { include_usage: true },
        tools,
        max_tokens: remaining,
        ...(settings.enable_thinking ? { reasoning_effort: settings.effort ?? 'medium' } : {}),
      }
      let messageId: string | null = null
      let reasoningId: string | null = null
      let streamed = false
      let output: Awaited<ReturnType<typeof runModelRound>>
      exec.inFlight = { promptTokens, text: '', provider: settings.test_mode ? 'svc-test-mode' : 'unknown' }
      try {
        output = await runModelRound({
          request,
          alias: settings.model,
          testMode: settings.test_mode,
          env: host.workerEnv,
          signal: exec.controller.signal,
          requestId: settings.request_id,
          onText: (delta) => {
            streamed = true
            if (exec.inFlight) exec.inFlight.text += delta
            messageId ??= store.allocateId('msg')
            turn.say('message.delta', { message_id: messageId, delta })
          },
          onReasoning: (delta) => {
            streamed = true
            if (exec.inFlight) exec.inFlight.text += delta
            reasoningId ??= store.allocateId('rs')
            turn.say('reasoning.delta', { reasoning_id: reasoningId, delta })
          },
        })
      } catch (err) {
        if (err instanceof TurnStopped || exec.controller.signal.aborted) throw new TurnStopped()
        exec.inFlight = null
        const error = toAppError(err)
        if (!streamed && isTransient(error)) return this.scheduleRetry(turn, current, error)
        return this.fail(exec.turnId, { code: error.code, message: error.message }, isTransient(error))
      }

      exec.inFlight = null
      recordModelCall(host, exec.turnId, tokenUsageOf(output.usage), {
        rounds: current.rounds + 1,
        attempt: 1,
        provider: output.providerId,
        estimated: output.usageEstimated,
      })
      if (exec.controller.signal.aborted) throw new TurnStopped()

      const calls = output.status === 'completed' ? output.toolCalls : []
      const callIds = calls.map(() => store.allocateId('call'))
      store.addMessage(exec.turnId, {
        role: 'assistant',
        content: output.text === '' ? null : output.text,
        ...(calls.length > 0
          ? {
              tool_calls: calls.map((call, i) => ({
                id: callIds[i]!,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
      })
      if (output.status === 'cut') {
        return this.fail(
          exec.turnId,
          output.error ?? { code: 'upstream_stream_interrupted', message: 'the model stream broke off' },
          true,
        )
      }
      if (calls.length === 0) {
        if (output.refusal !== '' || output.finishReason === 'content_filter') {
          if (output.refusal !== '') {
            messageId ??= store.allocateId('msg')
            turn.say('message.delta', { message_id: messageId, delta: output.refusal })
          }
          return this.complete(exec.turnId, 'refusal')
        }
        return this.complete(exec.turnId, output.finishReason === 'length' ? 'max_tokens' : 'end_turn')
      }
      this.emitUsage(exec.turnId)
      for (const [i, call] of calls.entries()) {
        await offerToolCall(turn, settings, registry, {
          callId: callIds[i]!,
          name: call.name,
          rawArguments: call.arguments,
        })
      }
      if (this.stopIfWaiting(exec.turnId)) return
    }
  }

  /** Ends the turn when approvals or client results are outstanding; true when it did. */
  private stopIfWaiting(turnId: string): boolean {
    const pending = pendingState(this.store, this.host.now())
    if (pending.approvals.length === 0 && pending.awaitingResults.length === 0) return false
    const pendingToolCalls = pending.awaitingResults.map((c) => c.call_id)
    if (pending.approvals.length > 0) {
      this.complete(turnId, 'awaiting_approval', {
        pending_approvals: pending.approvals.map((a) => a.approval_id),
        ...(pendingToolCalls.length > 0 ? { pending_tool_calls: pendingToolCalls } : {}),
      })
    } else {
      this.complete(turnId, 'awaiting_client_tool', { pending_tool_calls: pendingToolCalls })
    }
    return true
  }

  private scheduleRetry(turn: TurnWriter, row: TurnRow, error: AppError): void {
    const { store, host } = this
    const attempts = host.settings.modelAttempts
    if (row.attempt >= attempts) {
      this.fail(
        turn.turnId,
        { code: error.code, message: `${error.message} (gave up after ${attempts} attempts)` },
        true,
      )
      return
    }
    const next = row.attempt + 1
    const delay = retryDelayMs(next, host.settings)
    store.setTurnProgress(turn.turnId, { attempt: next })
    store.schedule('model_retry', turn.turnId, host.now() + delay)
    turn.say('progress', {
      message: `${error.message}; retrying in ${Math.ceil(delay / 1000)} s (attempt ${next} of ${attempts})`,
      phase: 'retry',
    })
  }

  private emitUsage(turnId: string): void {
    const run = this.store.run()
    const turn = this.store.turn(turnId)
    if (!run || !turn) return
    this.host.emit(turnId, 'usage', { turn: turn.usage_json, run: run.usage_json })
  }

  private finish(
    turnId: string,
    type: 'turn.completed' | 'turn.failed' | 'turn.cancelled',
    data: EventDataOf<'turn.completed'> | EventDataOf<'turn.failed'> | EventDataOf<'turn.cancelled'>,
    stopReason: string | null,
  ): void {
    const { store, host } = this
    const run = store.run()
    const turn = store.turn(turnId)
    if (!run || !turn || turn.state !== 'running') return
    if (turn.file_changes_json.length > 0) {
      host.emit(turnId, 'turn.diff', turnDiff(turn.file_changes_json))
    }
    // The final usage of the turn, unless the last event already is exactly that.
    if (store.lastEventType() !== 'usage') this.emitUsage(turnId)
    const next: RunState = nextRunState(run.state, { kind: 'event', event: { type, data } })
    host.emit(turnId, type, data as never)
    const seq = store.lastSeq()
    store.endTurn(
      turnId,
      type === 'turn.completed' ? 'completed' : type === 'turn.failed' ? 'failed' : 'cancelled',
      stopReason,
      seq,
      host.now(),
    )
    store.setRunState(next, host.now(), null)
    store.unschedule('turn_timeout', turnId)
    store.unschedule('model_retry', turnId)
    store.unschedule('turn_interrupted', turnId)
    host.turnEnded(turnId)
  }

  /** Counts what a model call stopped mid-way used (turn-usage.ts), before the terminal event. */
  chargeStoppedCall(exec: TurnExecution): void {
    chargeStoppedCall(this.host, exec)
  }

  complete(
    turnId: string,
    stopReason: EventDataOf<'turn.completed'>['stop_reason'],
    pending: Omit<EventDataOf<'turn.completed'>, 'stop_reason'> = {},
  ): void {
    this.finish(turnId, 'turn.completed', { stop_reason: stopReason, ...pending }, stopReason)
  }

  fail(turnId: string, error: { code: string; message: string }, retryable: boolean): void {
    this.finish(turnId, 'turn.failed', { error, retryable }, null)
  }

  cancel(turnId: string, reason: string, by: 'user' | 'system'): void {
    this.finish(turnId, 'turn.cancelled', { reason, cancelled_by: by }, null)
  }
}
