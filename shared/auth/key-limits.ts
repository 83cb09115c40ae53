/**
 * A key's own limits (issue 29; docs/plans.md, "Per-key limits"): the models it may call, what it
 * may spend at list price per period, and its own per-minute rates within the plan's. Read with the
 * key by the gateway and carried in the request's identity to every family worker, whose meter
 * (shared/metering/metering-client.ts) checks the model list and hands the rest to the tenant's
 * RateLimiter with the acquire call (no extra round trip).
 */
import { isModelAlias, type ModelAlias } from '../catalog/model-aliases'
import type { KeySpendLimit } from '../metering/key-spend'
import { usdToUnits } from '../metering/key-spend'
import type { SpendPeriodKind } from '../metering/spend-period'

export interface KeyLimits {
  /** Model aliases the key may call; null = whatever the plan allows. */
  readonly allowedModels: readonly ModelAlias[] | null
  readonly spendLimit: KeySpendLimit | null
  readonly requestsPerMinute: number | null
  readonly tokensPerMinute: number | null
}

/** The api_keys columns that hold the limits. */
export interface KeyLimitColumns {
  readonly allowedModels: readonly string[] | null
  readonly spendLimitUsd: string | null
  readonly spendPeriod: SpendPeriodKind | null
  readonly requestsPerMinute: number | null
  readonly tokensPerMinute: number | null
}

/** The key's limits, or undefined when it has none (the common case costs nothing downstream). */
export function keyLimitsOf(row: KeyLimitColumns): KeyLimits | undefined {
  const spendLimit =
    row.spendLimitUsd !== null && row.spendPeriod !== null
      ? { amountUnits: usdToUnits(row.spendLimitUsd), period: row.spendPeriod }
      : null
  const allowedModels = row.allowedModels ? row.allowedModels.filter(isModelAlias) : null
  if (!allowedModels && !spendLimit && row.requestsPerMinute === null && row.tokensPerMinute === null)
    return undefined
  return {
    allowedModels,
    spendLimit,
    requestsPerMinute: row.requestsPerMinute,
    tokensPerMinute: row.tokensPerMinute,
  }
}
