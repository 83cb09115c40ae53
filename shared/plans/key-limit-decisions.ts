/**
 * Refusals by an API key's own limits (issue 29; docs/plans.md, "Per-key limits"), in the spec's
 * action-required shape like the plan's: a model outside the key's list is 403
 * `model_access_required`; a spent key is 402 `overage_cap_reached` with a `credits` binding limit
 * in cents and a `manage_spend_cap` action opening the key's console page; a key's own rate is 429
 * `rate_limited`. No plan lifts a key's limit, so none is named as required. The messages say it is
 * the key's limit, not the plan's (keyLimitMessage).
 */
import { CREDIT_UNITS_PER_CENT } from '../metering/pricing'
import type { BillingPlan, PlanCatalog } from './plan-catalog'
import { buildUpgradeDecision, type UpgradeDecision } from './upgrade-decision'

const cents = (units: number) => Math.max(0, units) / CREDIT_UNITS_PER_CENT

export function keyModelDecision(
  plan: BillingPlan,
  model: string,
  keyId: string,
  catalog: PlanCatalog,
): UpgradeDecision {
  return buildUpgradeDecision({
    reason: 'model_access_required',
    plan,
    requiredPlan: null,
    requestedModel: model,
    catalog,
    apiKeyId: keyId,
  })
}

export function keySpendDecision(
  plan: BillingPlan,
  spend: {
    readonly keyId: string
    /** Spent plus reserved by requests in flight, in credit units. */
    readonly usedUnits: number
    readonly limitUnits: number
    /** Epoch ms of the next period; null for a `total` limit. */
    readonly resetsAt: number | null
  },
  catalog: PlanCatalog,
): UpgradeDecision {
  return buildUpgradeDecision({
    reason: 'overage_cap_reached',
    plan,
    requiredPlan: null,
    bindingLimit: {
      kind: 'credits',
      unit: 'cents',
      used: cents(spend.usedUnits),
      limit: cents(spend.limitUnits),
      remaining: cents(spend.limitUnits - spend.usedUnits),
      resets_at: spend.resetsAt === null ? null : new Date(spend.resetsAt).toISOString(),
    },
    catalog,
    apiKeyId: spend.keyId,
  })
}

export function keyRateDecision(
  plan: BillingPlan,
  rate: {
    readonly keyId: string
    readonly unit: 'requests' | 'tokens'
    readonly used: number
    readonly limit: number
    readonly retryAfterSeconds: number
  },
  catalog: PlanCatalog,
): UpgradeDecision {
  return buildUpgradeDecision({
    reason: 'rate_limited',
    plan,
    requiredPlan: null,
    bindingLimit: {
      kind: 'rate',
      unit: rate.unit,
      used: rate.used,
      limit: rate.limit,
      remaining: Math.max(0, rate.limit - rate.used),
      resets_at: null,
      retry_after_seconds: rate.retryAfterSeconds,
    },
    catalog,
    apiKeyId: rate.keyId,
  })
}

/** The words of a refusal by a key's own limit: the facts, then what to do. */
export function keyLimitMessage(decision: UpgradeDecision): string {
  const limit = decision.binding_limit
  switch (decision.reason) {
    case 'model_access_required':
      return `This API key may not use model ${decision.requested_model ?? '(unknown)'}: it is not in the key's allowed_models. Use one of its models, or ask a workspace admin to add it (PATCH /platform/v1/api-keys/{id}).`
    case 'overage_cap_reached': {
      const usd = (c: number | undefined) => `$${((c ?? 0) / 100).toFixed(4)}`
      const resets = limit?.resets_at ? `; it resets at ${limit.resets_at}` : ''
      const page = decision.actions.find((a) => a.kind === 'manage_spend_cap')?.url
      return `This API key's spend limit is reached (${usd(limit?.used)} of ${usd(limit?.limit)} at list price, counting requests in flight)${resets}. To continue: wait for the reset, or raise the key's spend_limit${page ? ` at ${page}` : ''}.`
    }
    case 'rate_limited':
      return `This API key's rate limit is reached: ${limit?.limit ?? 'its'} ${limit?.unit ?? 'requests'} per minute${limit?.retry_after_seconds != null ? `; retry in ${Math.ceil(limit.retry_after_seconds)} s` : ''}.`
    default:
      return `This API key's limit refused the request (${decision.reason}).`
  }
}
