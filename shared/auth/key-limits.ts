/**
 * A key's own limits (issue 29; docs/plans.md, "Per-key limits"): the models it may call, what it
 * may spend at list price per period, and its own per-minute rates within the plan's. Read with the
 * key by the gateway and carried in the request's identity to every family worker, whose meter
 * (shared/metering/metering-client.ts) checks the model list and hands the rest to the tenant's
 * RateLimiter with the acquire call (no extra round trip).
 */
import { z } from 'zod'
import { isModelAlias, MODEL_ALIASES } from '../catalog/model-aliases'
import { SPEND_PERIODS, type SpendPeriodKind } from '../metering/spend-period'
import { usdToUnits } from '../metering/usd'

/** The one definition: carried in the identity, and checked where a Durable Object stores one. */
export const KeyLimitsSchema = z.object({
  /** Model aliases the key may call; null = whatever the plan allows. */
  allowedModels: z.array(z.enum(MODEL_ALIASES)).readonly().nullable(),
  spendLimit: z
    .object({ amountUnits: z.int().min(1), period: z.enum(SPEND_PERIODS) })
    .readonly()
    .nullable(),
  requestsPerMinute: z.int().min(1).nullable(),
  tokensPerMinute: z.int().min(1).nullable(),
})
export type KeyLimits = z.infer<typeof KeyLimitsSchema>

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
