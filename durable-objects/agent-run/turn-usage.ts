/**
 * What a turn's model calls used and cost: usage in the protocol's shape, its price at the
 * catalog's per-token prices (test mode is never billed), and the estimate for a call stopped
 * before the provider reported its usage.
 */
import { modelEntry } from '../../shared/catalog/model-catalog'
import { countTextTokens } from '../../shared/providers'
import type { NormalizedUsage } from '../../shared/providers/chat-wire'
import { addUsage, type TokenUsage } from './agent-events'
import type { LoopHost, TurnExecution } from './turn-execution'
import type { TurnSettings } from './turn-settings'

export function tokenUsageOf(usage: NormalizedUsage): TokenUsage {
  return {
    input_tokens: usage.promptTokens,
    output_tokens: usage.completionTokens,
    reasoning_tokens: usage.reasoningTokens,
    cached_input_tokens: usage.cachedTokens,
    total_tokens: usage.totalTokens,
  }
}

/** USD cost of one model call at the catalog's per-token prices; test mode is never billed. */
export function costOf(settings: Pick<TurnSettings, 'model' | 'test_mode'>, usage: TokenUsage): number {
  if (settings.test_mode) return 0
  const price = modelEntry(settings.model).pricing
  const cached = Math.min(usage.cached_input_tokens, usage.input_tokens)
  return (
    (usage.input_tokens - cached) * Number(price.prompt) +
    cached * Number(price.input_cache_read) +
    usage.output_tokens * Number(price.completion)
  )
}

/** Adds one model call's usage to the turn and the run (with its cost). */
export function recordModelCall(
  host: LoopHost,
  turnId: string,
  usage: TokenUsage,
  progress: { rounds?: number; attempt?: number; provider?: string; estimated?: boolean },
): void {
  const turn = host.store.turn(turnId)
  if (!turn) throw new Error(`turn ${turnId} is not stored`)
  host.store.addRunUsage(usage, costOf(turn.settings_json, usage), host.now())
  host.store.setTurnProgress(turnId, { ...progress, usage: addUsage(turn.usage_json, usage) })
}

/**
 * Counts a model call that was stopped before it answered (cancel, timeout): prompt tokens as
 * sent, output tokens from the text streamed so far, both estimated with the tokenizer. Call it
 * before the terminal event, so the turn's last `usage` includes it.
 */
export function chargeStoppedCall(host: LoopHost, exec: TurnExecution): void {
  const inFlight = exec.inFlight
  exec.inFlight = null
  const turn = host.store.turn(exec.turnId)
  if (!inFlight || !turn || turn.state !== 'running') return
  const output = countTextTokens(inFlight.text)
  recordModelCall(
    host,
    exec.turnId,
    {
      input_tokens: inFlight.promptTokens,
      output_tokens: output,
      reasoning_tokens: 0,
      cached_input_tokens: 0,
      total_tokens: inFlight.promptTokens + output,
    },
    { estimated: true, ...(turn.provider ? {} : { provider: inFlight.provider }) },
  )
}
