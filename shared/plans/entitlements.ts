/**
 * Entitlement checks as pure functions: plan + facts in, an UpgradeDecision (blocked) or null
 * (allowed) out. Callers turn a decision into the HTTP answer with actionRequiredError().
 * Counters (usage this month, requests this minute) come from the ledger and the RateLimiter
 * Durable Object; nothing here does I/O.
 */
import type { ModelAlias } from '../catalog/model-aliases'
import { modelEntry } from '../catalog/model-catalog'
import {
  type BillingPlan,
  cheapestUpgrade,
  METERED_TOOL_UNITS,
  type MeteredTool,
  type PlanCatalog,
  type PlanDomain,
  type PlanFeature,
} from './plan-catalog'
import { buildUpgradeDecision, type UpgradeDecision } from './upgrade-decision'

export interface CheckOptions {
  /** The deployment's catalog (resolvePlan): upgrades are chosen among its plans. */
  readonly catalog: PlanCatalog
  readonly consoleUrl?: string
}

const opts = (o: CheckOptions) => ({
  catalog: o.catalog,
  ...(o.consoleUrl ? { consoleUrl: o.consoleUrl } : {}),
})

export function checkModelAccess(
  plan: BillingPlan,
  model: ModelAlias,
  o: CheckOptions,
): UpgradeDecision | null {
  if (plan.models.includes(model)) return null
  const { catalog } = opts(o)
  return buildUpgradeDecision({
    ...opts(o),
    reason: 'model_access_required',
    plan,
    requiredPlan: cheapestUpgrade(plan, (p) => p.models.includes(model), catalog),
    requestedModel: model,
  })
}

export function checkFeatureAccess(
  plan: BillingPlan,
  feature: PlanFeature,
  o: CheckOptions,
): UpgradeDecision | null {
  if (plan.features.includes(feature)) return null
  const { catalog } = opts(o)
  return buildUpgradeDecision({
    ...opts(o),
    reason: 'feature_required',
    plan,
    requiredPlan: cheapestUpgrade(plan, (p) => p.features.includes(feature), catalog),
    requestedFeature: feature,
  })
}

export function checkDomainAccess(
  plan: BillingPlan,
  domain: PlanDomain,
  o: CheckOptions,
): UpgradeDecision | null {
  if (plan.domains.includes(domain)) return null
  const { catalog } = opts(o)
  return buildUpgradeDecision({
    ...opts(o),
    reason: 'domain_tier_required',
    plan,
    requiredPlan: cheapestUpgrade(plan, (p) => p.domains.includes(domain), catalog),
    requestedDomain: domain,
  })
}

/**
 * Context = prompt tokens (counted with the tokenizer) + the output budget asked for, held to the
 * smaller of the plan's limit and the model's own context window (the model catalog's
 * `context_length`). When the model's window is what binds, no plan helps: the decision names the
 * model (`requested_model`), has no required plan, and its binding limit is the window.
 */
export function checkContextLimit(
  plan: BillingPlan,
  usage: {
    readonly model: ModelAlias
    readonly promptTokens: number
    readonly maxOutputTokens?: number | null
  },
  o: CheckOptions,
): UpgradeDecision | null {
  const needed = usage.promptTokens + (usage.maxOutputTokens ?? 0)
  const window = modelEntry(usage.model).context_length
  const planLimit = plan.contextLimitTokens
  if (needed <= planLimit && needed <= window) return null
  const { catalog } = opts(o)
  const modelBinds = needed > window
  const limit = modelBinds ? window : planLimit
  return buildUpgradeDecision({
    ...opts(o),
    reason: 'context_limit_reached',
    plan,
    requiredPlan: modelBinds ? null : cheapestUpgrade(plan, (p) => p.contextLimitTokens >= needed, catalog),
    ...(modelBinds ? { requestedModel: usage.model } : {}),
    bindingLimit: {
      kind: 'context',
      unit: 'tokens',
      used: needed,
      limit,
      remaining: Math.max(0, limit - usage.promptTokens),
    },
  })
}

export interface AllowanceState {
  /** Tokens used this billing period (all models). */
  readonly usedTokens: number
  /** When the allowance renews (ISO date-time), or null. */
  readonly resetsAt: string | null
  readonly usageCreditsEnabled: boolean
  readonly creditBalanceCents: number
  readonly overageSpentCents: number
  /** The account's own cap; defaults to the plan's overageCapCents. */
  readonly overageCapCents?: number | null
}

/**
 * Beyond an included allowance with usage credits on: the spend cap, then the credit balance.
 * Null when the request may go ahead and be billed as overage.
 */
function creditDecision(
  plan: BillingPlan,
  state: Pick<AllowanceState, 'resetsAt' | 'creditBalanceCents' | 'overageSpentCents' | 'overageCapCents'>,
  requiredPlan: BillingPlan | null,
  o: CheckOptions,
): UpgradeDecision | null {
  const cap = state.overageCapCents === undefined ? plan.overageCapCents : state.overageCapCents
  if (cap !== null && state.overageSpentCents >= cap) {
    return buildUpgradeDecision({
      ...opts(o),
      reason: 'overage_cap_reached',
      plan,
      requiredPlan,
      usageCreditsEnabled: true,
      bindingLimit: {
        kind: 'credits',
        unit: 'cents',
        used: state.overageSpentCents,
        limit: cap,
        remaining: 0,
        resets_at: state.resetsAt,
      },
    })
  }
  if (state.creditBalanceCents <= 0) {
    return buildUpgradeDecision({
      ...opts(o),
      reason: 'insufficient_credits',
      plan,
      requiredPlan: null,
      usageCreditsEnabled: true,
      bindingLimit: { kind: 'credits', unit: 'cents', remaining: 0 },
    })
  }
  return null
}

/**
 * The monthly allowance and what happens beyond it:
 * within allowance → allowed; beyond it without usage credits → token_allowance_exhausted;
 * with usage credits: overage cap reached → overage_cap_reached; no credit left →
 * insufficient_credits; otherwise allowed (billed as overage).
 */
export function checkTokenAllowance(
  plan: BillingPlan,
  state: AllowanceState,
  o: CheckOptions,
): UpgradeDecision | null {
  const allowance = plan.monthlyTokenAllowance
  if (allowance === null || state.usedTokens < allowance) return null
  const { catalog } = opts(o)
  const biggerAllowance = cheapestUpgrade(
    plan,
    (p) => p.monthlyTokenAllowance === null || p.monthlyTokenAllowance > state.usedTokens,
    catalog,
  )
  if (!plan.usageCredits || !state.usageCreditsEnabled) {
    return buildUpgradeDecision({
      ...opts(o),
      reason: 'token_allowance_exhausted',
      plan,
      requiredPlan: biggerAllowance,
      usageCreditsEnabled: state.usageCreditsEnabled,
      bindingLimit: {
        kind: 'tokens',
        unit: 'tokens',
        used: state.usedTokens,
        limit: allowance,
        remaining: 0,
        resets_at: state.resetsAt,
      },
    })
  }
  return creditDecision(plan, state, biggerAllowance, o)
}

/**
 * A paid tool's monthly allowance (web searches, seconds of transcribed audio), like the token
 * allowance: within it → allowed; once used up, without usage credits → tier_allowance_exhausted
 * (binding limit in the tool's unit); with usage credits, the spend cap and the credit balance
 * decide as for tokens. A tool without an allowance in the plan has no monthly cap.
 */
export function checkToolAllowance(
  plan: BillingPlan,
  tool: MeteredTool,
  state: Omit<AllowanceState, 'usedTokens'> & {
    /** This period's use of the tool, in its unit (in-flight reservations included). */
    readonly used: number
  },
  o: CheckOptions,
): UpgradeDecision | null {
  const limit = plan.toolAllowances[tool]
  if (limit === undefined || state.used < limit) return null
  const { catalog } = opts(o)
  const biggerAllowance = cheapestUpgrade(
    plan,
    (p) => p.features.includes(tool) && (p.toolAllowances[tool] ?? Number.POSITIVE_INFINITY) > state.used,
    catalog,
  )
  if (!plan.usageCredits || !state.usageCreditsEnabled) {
    const unit = METERED_TOOL_UNITS[tool]
    return buildUpgradeDecision({
      ...opts(o),
      reason: 'tier_allowance_exhausted',
      plan,
      requiredPlan: biggerAllowance,
      requestedFeature: tool,
      usageCreditsEnabled: state.usageCreditsEnabled,
      // The spec's limit kinds have no "bytes": a byte allowance (telemetry ingestion) is `storage`.
      bindingLimit: {
        kind: unit === 'bytes' ? 'storage' : unit,
        unit,
        used: state.used,
        limit,
        remaining: 0,
        resets_at: state.resetsAt,
      },
    })
  }
  return creditDecision(plan, state, biggerAllowance, o)
}

/** A per-model ("tier") allowance inside the plan, e.g. svc-hive on Team. */
export function checkModelAllowance(
  plan: BillingPlan,
  model: ModelAlias,
  state: {
    readonly usedTokens: number
    readonly resetsAt: string | null
    readonly usageCreditsEnabled?: boolean
  },
  o: CheckOptions,
): UpgradeDecision | null {
  const limit = plan.modelAllowances[model]
  if (limit === undefined || state.usedTokens < limit) return null
  const { catalog } = opts(o)
  return buildUpgradeDecision({
    ...opts(o),
    reason: 'tier_allowance_exhausted',
    plan,
    requiredPlan: cheapestUpgrade(
      plan,
      (p) =>
        p.models.includes(model) && (p.modelAllowances[model] ?? Number.POSITIVE_INFINITY) > state.usedTokens,
      catalog,
    ),
    requestedModel: model,
    usageCreditsEnabled: state.usageCreditsEnabled ?? false,
    bindingLimit: {
      kind: 'tokens',
      unit: 'tokens',
      used: state.usedTokens,
      limit,
      remaining: 0,
      resets_at: state.resetsAt,
    },
  })
}

/** The document allowance (documents upload 429). */
export function checkDocumentAllowance(
  plan: BillingPlan,
  documentsStored: number,
  o: CheckOptions,
): UpgradeDecision | null {
  if (documentsStored < plan.documentAllowance) return null
  const { catalog } = opts(o)
  return buildUpgradeDecision({
    ...opts(o),
    reason: 'tier_allowance_exhausted',
    plan,
    requiredPlan: cheapestUpgrade(plan, (p) => p.documentAllowance > documentsStored, catalog),
    requestedFeature: 'retrieval',
    bindingLimit: {
      kind: 'documents',
      unit: 'documents',
      used: documentsStored,
      limit: plan.documentAllowance,
      remaining: 0,
    },
  })
}

/**
 * A per-minute limit the RateLimiter object reported as exceeded. `used` includes the request
 * being refused; `retryAfterSeconds` is when the window frees enough room.
 */
export function rateLimitedDecision(
  plan: BillingPlan,
  limit: {
    readonly unit: 'requests' | 'tokens' | 'bytes'
    readonly used: number
    readonly retryAfterSeconds: number
    readonly resetsAt?: string | null
    /**
     * The per-minute limit that was reached, read from a plan (default: the model requests' or
     * tokens' limit by unit). OTLP ingestion passes its own (`ingestRequestsPerMinute`, ...).
     */
    readonly perMinuteOf?: (plan: BillingPlan) => number
  },
  o: CheckOptions,
): UpgradeDecision {
  const perMinuteOf =
    limit.perMinuteOf ??
    ((p: BillingPlan) => (limit.unit === 'requests' ? p.requestsPerMinute : p.tokensPerMinute))
  const perMinute = perMinuteOf(plan)
  const { catalog } = opts(o)
  return buildUpgradeDecision({
    ...opts(o),
    reason: 'rate_limited',
    plan,
    requiredPlan: cheapestUpgrade(plan, (p) => perMinuteOf(p) >= limit.used, catalog),
    bindingLimit: {
      kind: 'rate',
      unit: limit.unit,
      used: limit.used,
      limit: perMinute,
      remaining: Math.max(0, perMinute - limit.used),
      resets_at: limit.resetsAt ?? null,
      retry_after_seconds: limit.retryAfterSeconds,
    },
  })
}

/** Features a chat request needs: `reasoning_effort` (any value) needs `thinking`. */
export function chatRequestFeatures(request: {
  readonly reasoning_effort?: string | undefined
}): PlanFeature[] {
  return request.reasoning_effort === undefined ? [] : ['thinking']
}

/**
 * The request-shape checks for a chat completion, in the order a user should hear about them:
 * model access, then features, then context size. Allowance and rate checks need counters and
 * run after these (see docs/plans.md for the full order).
 */
export function checkChatEntitlements(
  plan: BillingPlan,
  chat: {
    readonly model: ModelAlias
    readonly reasoning_effort?: string | undefined
    readonly promptTokens: number
    readonly maxOutputTokens?: number | null
  },
  o: CheckOptions,
): UpgradeDecision | null {
  const model = checkModelAccess(plan, chat.model, o)
  if (model) return model
  for (const feature of chatRequestFeatures(chat)) {
    const decision = checkFeatureAccess(plan, feature, o)
    if (decision) return { ...decision, requested_model: chat.model }
  }
  return checkContextLimit(
    plan,
    { model: chat.model, promptTokens: chat.promptTokens, maxOutputTokens: chat.maxOutputTokens ?? null },
    o,
  )
}
