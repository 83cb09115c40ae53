/**
 * The spec's upgrade decision (`svc_upgrade`, schema_version 2026-07-31) and the
 * action-required error that carries it (402/403/429).
 *
 * Reason → HTTP status (docs/plans.md):
 *   403 model_access_required, domain_tier_required, feature_required, context_limit_reached
 *   402 insufficient_credits, overage_cap_reached
 *   429 token_allowance_exhausted, tier_allowance_exhausted (x-should-retry: false),
 *       rate_limited (transient: Retry-After <= 60 s)
 * Every 402/403 also sends `x-should-retry: false`, so the openai SDK does not retry them.
 * The openai SDK keeps only `body.error` on its error object, so the decision is also carried
 * inside `error` (`err.error.svc_upgrade`, AppError.toBody), `error.code` = the reason, and
 * `error.message` states the facts (plan, limit, required plan, where to act) in words.
 */
import { z } from '@hono/zod-openapi'
import { AppError, type ErrorType } from '../http/errors'
import { type BillingPlan, getPlan, type PlanCatalog } from './plan-catalog'

export const UPGRADE_SCHEMA_VERSION = '2026-07-31'

export const UPGRADE_REASONS = [
  'model_access_required',
  'domain_tier_required',
  'feature_required',
  'token_allowance_exhausted',
  'tier_allowance_exhausted',
  'insufficient_credits',
  'overage_cap_reached',
  'context_limit_reached',
  'rate_limited',
] as const
export type UpgradeReason = (typeof UPGRADE_REASONS)[number]

export const BINDING_LIMIT_KINDS = [
  'tokens',
  'requests',
  'seconds',
  'credits',
  'context',
  'rate',
  'documents',
  'storage',
] as const
export const BINDING_LIMIT_UNITS = [
  'tokens',
  'requests',
  'seconds',
  'cents',
  'percent',
  'documents',
  'bytes',
  'characters',
] as const
export const UPGRADE_ACTION_KINDS = [
  'upgrade_plan',
  'enable_usage_credits',
  'add_credits',
  'manage_spend_cap',
  'purchase_addon',
  'compact_context',
  'new_conversation',
  'retry_later',
  'contact_sales',
] as const
export type UpgradeActionKind = (typeof UPGRADE_ACTION_KINDS)[number]

const NonNegative = z.number().min(0)

export const BindingLimitSchema = z
  .object({
    kind: z.enum(BINDING_LIMIT_KINDS),
    unit: z.enum(BINDING_LIMIT_UNITS),
    used: NonNegative.optional(),
    limit: NonNegative.optional(),
    remaining: NonNegative.optional(),
    resets_at: z.iso.datetime({ offset: true }).nullable().optional(),
    retry_after_seconds: NonNegative.nullable().optional(),
  })
  .strict()
  .openapi('BindingLimit', { description: 'The limit that decided the refusal' })
export type BindingLimit = z.infer<typeof BindingLimitSchema>

export const UpgradeActionSchema = z
  .object({
    kind: z.enum(UPGRADE_ACTION_KINDS),
    label: z.string(),
    available: z.boolean(),
    url: z.url().nullable(),
    plan_id: z.string().optional(),
  })
  .strict()
  .openapi('UpgradeAction', { description: 'Something the caller can do to go on' })
export type UpgradeAction = z.infer<typeof UpgradeActionSchema>

export const UpgradeDecisionSchema = z
  .object({
    schema_version: z.literal(UPGRADE_SCHEMA_VERSION),
    reason: z.enum(UPGRADE_REASONS),
    current_plan: z.string(),
    required_plan: z.string().nullable(),
    requested_model: z.string().optional(),
    requested_domain: z.string().optional(),
    requested_feature: z.string().optional(),
    binding_limit: BindingLimitSchema.optional(),
    actions: z.array(UpgradeActionSchema),
  })
  .strict()
  .openapi('UpgradeDecision', {
    description: `The upgrade decision (\`svc_upgrade\`, schema_version ${UPGRADE_SCHEMA_VERSION}): why the plan refused the request and what the caller can do`,
  })
export type UpgradeDecision = z.infer<typeof UpgradeDecisionSchema>

/** The `error.type` of each reason's refusal (one per status class, as OpenAI's SDK expects). */
export const ACTION_REQUIRED_ERROR_TYPES = [
  'permission_error',
  'insufficient_quota',
  'rate_limit_error',
] as const
type ActionRequiredErrorType = (typeof ACTION_REQUIRED_ERROR_TYPES)[number] & ErrorType

/**
 * The action-required body (spec: `error` and `svc_upgrade` required, extra properties allowed;
 * `error` is free-form, and ours is the OpenAI-shaped error with the decision copied inside it).
 * The one definition: responses render it (AppError.toBody), OpenAPI documents it
 * (component `ActionRequiredError`).
 */
export const ActionRequiredBodySchema = z
  .object({
    error: z
      .object({
        message: z.string().openapi({ description: 'The facts and what to do, in words' }),
        type: z.enum(ACTION_REQUIRED_ERROR_TYPES),
        param: z.string().nullable().openapi({ description: 'The request field at fault, if any' }),
        code: z.enum(UPGRADE_REASONS).openapi({ description: 'The reason of the decision' }),
        svc_upgrade: UpgradeDecisionSchema,
      })
      .loose()
      .openapi({ description: 'The error, with a copy of the decision for clients that keep only `error`' }),
    svc_upgrade: UpgradeDecisionSchema,
  })
  .loose()
  .openapi('ActionRequiredError', {
    description: 'A refusal by the plan (402, 403, 429): the error and the upgrade decision',
  })

export const UPGRADE_REASON_STATUS: Readonly<Record<UpgradeReason, 402 | 403 | 429>> = {
  model_access_required: 403,
  domain_tier_required: 403,
  feature_required: 403,
  context_limit_reached: 403,
  insufficient_credits: 402,
  overage_cap_reached: 402,
  token_allowance_exhausted: 429,
  tier_allowance_exhausted: 429,
  rate_limited: 429,
}

const ERROR_TYPE: Readonly<Record<UpgradeReason, ActionRequiredErrorType>> = {
  model_access_required: 'permission_error',
  domain_tier_required: 'permission_error',
  feature_required: 'permission_error',
  context_limit_reached: 'permission_error',
  insufficient_credits: 'insufficient_quota',
  overage_cap_reached: 'insufficient_quota',
  token_allowance_exhausted: 'insufficient_quota',
  tier_allowance_exhausted: 'insufficient_quota',
  rate_limited: 'rate_limit_error',
}

/** Which actions each reason offers, in the order shown to users. */
const ACTIONS_BY_REASON: Readonly<Record<UpgradeReason, readonly UpgradeActionKind[]>> = {
  model_access_required: ['upgrade_plan', 'contact_sales'],
  domain_tier_required: ['upgrade_plan', 'contact_sales'],
  feature_required: ['upgrade_plan', 'contact_sales'],
  token_allowance_exhausted: ['upgrade_plan', 'enable_usage_credits', 'retry_later'],
  tier_allowance_exhausted: ['upgrade_plan', 'purchase_addon', 'enable_usage_credits', 'retry_later'],
  insufficient_credits: ['add_credits', 'upgrade_plan'],
  overage_cap_reached: ['manage_spend_cap', 'upgrade_plan', 'retry_later'],
  context_limit_reached: ['compact_context', 'new_conversation', 'upgrade_plan'],
  rate_limited: ['retry_later', 'upgrade_plan'],
}

export interface UpgradeDecisionInput {
  readonly reason: UpgradeReason
  readonly plan: BillingPlan
  /** The cheapest plan that would allow the request, or null when none would. */
  readonly requiredPlan: BillingPlan | null
  readonly requestedModel?: string
  readonly requestedDomain?: string
  readonly requestedFeature?: string
  readonly bindingLimit?: BindingLimit
  /** Whether the account already has usage credits on (then "enable" is not offered). */
  readonly usageCreditsEnabled?: boolean
  /** The deployment's catalog (its console URL is the base of the action URLs). */
  readonly catalog: PlanCatalog
  /** Overrides the catalog's console URL (e.g. per deployment). */
  readonly consoleUrl?: string
  /**
   * Set when the limit that refused is an API key's own (shared/plans/key-limit-decisions.ts): the
   * spend action then opens that key's console page, where its limit is raised.
   */
  readonly apiKeyId?: string
}

function action(kind: UpgradeActionKind, input: UpgradeDecisionInput, base: string): UpgradeAction {
  const { plan, requiredPlan, bindingLimit } = input
  const selfServe = requiredPlan !== null && requiredPlan.monthlyPriceCents !== null
  switch (kind) {
    case 'upgrade_plan':
      return requiredPlan
        ? {
            kind,
            label: `Upgrade to ${requiredPlan.name}`,
            available: selfServe,
            url: selfServe ? `${base}/billing/plans?plan=${requiredPlan.id}` : null,
            plan_id: requiredPlan.id,
          }
        : { kind, label: 'Upgrade plan', available: false, url: null }
    case 'contact_sales':
      return { kind, label: 'Contact sales', available: true, url: `${base}/contact-sales` }
    case 'enable_usage_credits':
      return {
        kind,
        label: 'Enable usage credits',
        available: plan.usageCredits && input.usageCreditsEnabled !== true,
        url: `${base}/billing/usage-credits`,
      }
    case 'add_credits':
      return { kind, label: 'Add credits', available: plan.usageCredits, url: `${base}/billing/credits` }
    case 'manage_spend_cap':
      if (input.apiKeyId !== undefined)
        return {
          kind,
          label: "Raise this key's spend limit",
          available: true,
          url: `${base}/api-keys/${input.apiKeyId}`,
        }
      return {
        kind,
        label: 'Raise the spend cap',
        available: plan.usageCredits,
        url: `${base}/billing/spend-cap`,
      }
    case 'purchase_addon':
      return {
        kind,
        label: 'Buy an allowance add-on',
        available: plan.monthlyPriceCents !== 0,
        url: `${base}/billing/add-ons`,
      }
    case 'compact_context':
      return { kind, label: 'Summarise or drop earlier messages', available: true, url: null }
    case 'new_conversation':
      return { kind, label: 'Start a new conversation', available: true, url: null }
    case 'retry_later': {
      const when = bindingLimit?.retry_after_seconds ?? null
      const resets = bindingLimit?.resets_at ?? null
      return {
        kind,
        label:
          when !== null ? `Retry in ${Math.ceil(when)} s` : resets ? `Retry after ${resets}` : 'Retry later',
        available: when !== null || resets !== null,
        url: null,
      }
    }
  }
}

export function buildUpgradeDecision(input: UpgradeDecisionInput): UpgradeDecision {
  const base = (input.consoleUrl ?? input.catalog.consoleUrl).replace(/\/+$/, '')
  return UpgradeDecisionSchema.parse({
    schema_version: UPGRADE_SCHEMA_VERSION,
    reason: input.reason,
    current_plan: input.plan.id,
    required_plan: input.requiredPlan?.id ?? null,
    ...(input.requestedModel === undefined ? {} : { requested_model: input.requestedModel }),
    ...(input.requestedDomain === undefined ? {} : { requested_domain: input.requestedDomain }),
    ...(input.requestedFeature === undefined ? {} : { requested_feature: input.requestedFeature }),
    ...(input.bindingLimit === undefined ? {} : { binding_limit: input.bindingLimit }),
    actions: ACTIONS_BY_REASON[input.reason].map((kind) => action(kind, input, base)),
  })
}

function limitFacts(limit: BindingLimit | undefined): string {
  if (!limit || limit.limit === undefined) return ''
  return ` (${limit.used ?? limit.limit} of ${limit.limit} ${limit.unit})`
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1)
}

function nextStep(decision: UpgradeDecision): string {
  const offered = decision.actions.filter((a) => a.available)
  const upgrade = offered.find((a) => a.kind === 'upgrade_plan')
  // Labels start a sentence; mid-sentence only their first letter is lowered (a label may hold an
  // ISO 8601 time, whose T and Z stay capitals).
  const other = offered.filter((a) => a.kind !== 'upgrade_plan').map((a) => lowerFirst(a.label))
  const steps = [
    ...(upgrade ? [`upgrade to the ${decision.required_plan} plan at ${upgrade.url}`] : []),
    ...other,
  ]
  if (steps.length === 0)
    return decision.required_plan ? ` The ${decision.required_plan} plan allows it.` : ''
  return ` To continue: ${steps.join(', or ')}.`
}

/** One sentence of facts per reason, then what to do. */
export function upgradeMessage(decision: UpgradeDecision, catalog: PlanCatalog): string {
  const planName = getPlan(decision.current_plan, catalog)?.name ?? decision.current_plan
  const limit = decision.binding_limit
  const resets = limit?.resets_at ? `; it resets at ${limit.resets_at}` : ''
  let facts: string
  switch (decision.reason) {
    case 'model_access_required':
      facts = `Model ${decision.requested_model ?? '(unknown)'} is not included in the ${planName} plan.`
      break
    case 'domain_tier_required':
      facts = `The ${decision.requested_domain ?? '(unknown)'} domain is not included in the ${planName} plan.`
      break
    case 'feature_required':
      facts = `The ${decision.requested_feature ?? '(unknown)'} feature is not included in the ${planName} plan.`
      break
    case 'token_allowance_exhausted':
      facts = `The ${planName} plan's monthly token allowance is used up${limitFacts(limit)}${resets}.`
      break
    case 'tier_allowance_exhausted':
      facts = `The ${planName} plan's allowance for ${decision.requested_model ?? decision.requested_feature ?? limit?.kind ?? 'this tier'} is used up${limitFacts(limit)}${resets}.`
      break
    case 'insufficient_credits':
      facts = `Usage credits are exhausted${limit?.remaining !== undefined ? ` (balance ${limit.remaining} cents)` : ''}.`
      break
    case 'overage_cap_reached':
      facts = `The overage spend cap is reached${limitFacts(limit)}${resets}.`
      break
    case 'context_limit_reached':
      // A decision that names the model was bound by the model's own context window.
      facts =
        decision.requested_model === undefined
          ? `The request needs ${limit?.used ?? 'more'} context tokens but the ${planName} plan allows ${limit?.limit ?? 'fewer'}.`
          : `The request needs ${limit?.used ?? 'more'} context tokens but ${decision.requested_model}'s context window is ${limit?.limit ?? 'smaller'} tokens.`
      break
    case 'rate_limited':
      facts = `Rate limit reached: ${limit?.limit ?? 'the'} ${limit?.unit ?? 'requests'} per minute on the ${planName} plan${limit?.retry_after_seconds != null ? `; retry in ${Math.ceil(limit.retry_after_seconds)} s` : ''}.`
      break
  }
  return `${facts}${nextStep(decision)}`
}

/** Headers for a decision: `x-should-retry: false` unless transient; Retry-After (1..60 s) when transient. */
export function upgradeHeaders(decision: UpgradeDecision): Record<string, string> {
  if (decision.reason !== 'rate_limited') return { 'x-should-retry': 'false' }
  const seconds = decision.binding_limit?.retry_after_seconds ?? 1
  return { 'retry-after': String(Math.min(60, Math.max(1, Math.ceil(seconds)))) }
}

/** The AppError for a decision: status from the table, body `{error, svc_upgrade}`. */
export function actionRequiredError(
  decision: UpgradeDecision,
  options: {
    readonly param?: string | null
    readonly catalog: PlanCatalog
    /** The words, when the limit is not the plan's (an API key's own: key-limit-decisions.ts). */
    readonly message?: string
  },
): AppError {
  const checked = UpgradeDecisionSchema.parse(decision)
  return new AppError(
    UPGRADE_REASON_STATUS[checked.reason],
    checked.reason,
    options.message ?? upgradeMessage(checked, options.catalog),
    {
      type: ERROR_TYPE[checked.reason],
      param: options.param ?? null,
      headers: upgradeHeaders(checked),
      extraBody: { svc_upgrade: checked },
    },
  )
}
