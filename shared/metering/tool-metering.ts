/**
 * Paid tools (web search, transcription) go through the same admission and usage ledger as chat
 * completions and agent turns: the tenant's RateLimiter admits the call (requests per minute, the
 * tool's monthly allowance, then usage credits and the spend cap, with the same action-required
 * refusals), the work runs, and its use is settled in the tool's unit before the caller answers,
 * so a client that got its result can rely on the use being recorded. A call whose work fails
 * is released: nothing is used or charged, and the request log gets its row with the error's
 * status and zero charge. Test-mode identities are rate limited and
 * recorded with zero credits, never billed (their own RateLimiter object).
 */
import { toAppError } from '../http/errors'
import type { MeteredTool, PlanCatalog } from '../plans/plan-catalog'
import type { NormalizedUsage } from '../providers/chat-wire'
import type { Meter } from './metering-client'

/** A tool's usage carries no tokens: what it used is its quantity. */
const NO_TOKENS: NormalizedUsage = {
  promptTokens: 0,
  completionTokens: 0,
  totalTokens: 0,
  cachedTokens: 0,
  reasoningTokens: 0,
}

export interface ToolCall {
  /** The request id recorded in the ledger (the caller's x-request-id, or one of its own). */
  readonly requestId: string
  readonly tool: MeteredTool
  /** The use expected, in the tool's unit, reserved against its monthly allowance until settled. */
  readonly estimatedQuantity: number
}

export interface ToolOutcome<T> {
  readonly result: T
  /** What the call used, in the tool's unit. */
  readonly quantity: number
  /** True when the quantity is the product's own estimate rather than the provider's figure. */
  readonly estimated: boolean
  /** The provider that served the call. */
  readonly provider: string
  /** The status the caller answers with (default 200), for the request log. */
  readonly status?: number
}

/**
 * Admits, runs and records one paid tool call. Throws the acquire's action-required AppError
 * (402/429, x-ratelimit-* headers) or 503 `metering_unavailable` before any work starts, and the
 * work's own error (with the rate-limit headers added) after releasing the reservation.
 */
export async function meterToolCall<T>(
  meter: Meter,
  catalog: PlanCatalog,
  call: ToolCall,
  work: () => Promise<ToolOutcome<T>>,
): Promise<{ result: T; headers: Record<string, string> }> {
  const grant = await meter.acquire(
    {
      requestId: call.requestId,
      model: call.tool,
      estimatedTokens: 0,
      estimatedQuantity: call.estimatedQuantity,
    },
    catalog,
  )
  let outcome: ToolOutcome<T>
  try {
    outcome = await work()
  } catch (err) {
    const error = toAppError(err)
    await meter.settle(grant, { usage: null, estimated: false, provider: 'none', status: error.status })
    for (const [name, value] of Object.entries(grant.headers)) error.headers[name] ??= value
    throw error
  }
  await meter.settle(grant, {
    usage: NO_TOKENS,
    quantity: outcome.quantity,
    estimated: outcome.estimated,
    provider: outcome.provider,
    status: outcome.status ?? 200,
  })
  return { result: outcome.result, headers: grant.headers }
}
