/**
 * The plan catalog: versioned configuration, validated with zod when the isolate starts
 * (module load), so a bad edit fails the deploy's first request instead of mis-billing.
 * docs/plans.md shows the same table for humans; change both together and bump `version`.
 *
 * Conventions: `null` allowance = unlimited; `null` price = priced by contract (sales-led);
 * `null` overage cap = no cap. Model allowances (`modelAllowances`) are per-alias monthly caps
 * inside the general allowance (the "tier allowance"); aliases without one share the general
 * allowance only.
 */
import { z } from 'zod'
import { MODEL_ALIASES, type ModelAlias } from '../catalog/model-aliases'
import { AppError } from '../http/errors'

export const PLAN_IDS = ['free', 'pro', 'team', 'enterprise'] as const

export const PLAN_FEATURES = [
  'thinking',
  'retrieval',
  'web_search',
  'real_qpu',
  'agent_runs',
  'transcription',
  'mcp',
  'telemetry_ingest',
] as const
export type PlanFeature = (typeof PLAN_FEATURES)[number]

/**
 * Paid tools metered like models, each in its own unit: a web search is one request to a search
 * provider; a transcription is billed by the seconds of audio it transcribed; `real_qpu` is one
 * reasoning job's run on real quantum hardware (one provider job, its shots included): the plan's
 * monthly quantum allowance (docs/quantum-selector.md); `telemetry_ingest` is OTLP ingestion,
 * counted in bytes after decompression (docs/telemetry.md), with its own per-minute limits
 * (`ingestRequestsPerMinute`, `ingestBytesPerMinute`) apart from the model requests'. Its name is
 * the plan feature that gates it.
 */
export const METERED_TOOLS = ['web_search', 'transcription', 'real_qpu', 'telemetry_ingest'] as const
export type MeteredTool = (typeof METERED_TOOLS)[number]
export const METERED_TOOL_UNITS: Readonly<Record<MeteredTool, 'requests' | 'seconds' | 'bytes'>> = {
  web_search: 'requests',
  transcription: 'seconds',
  real_qpu: 'requests',
  telemetry_ingest: 'bytes',
}

/** Subject domains gated by tier ("domain_tier_required"). */
export const PLAN_DOMAINS = ['general', 'code', 'research', 'security', 'quantum'] as const
export type PlanDomain = (typeof PLAN_DOMAINS)[number]

const Count = z.int().min(0)

export const BillingPlanSchema = z
  .object({
    id: z.enum(PLAN_IDS),
    name: z.string().min(1),
    /** Upgrade order: a higher rank is an upgrade. */
    rank: z.int().min(0),
    monthlyPriceCents: Count.nullable(),
    models: z.array(z.enum(MODEL_ALIASES)).min(1),
    modelAllowances: z.partialRecord(z.enum(MODEL_ALIASES), z.int().positive()),
    /**
     * What the plan includes of each paid tool per month, in the tool's unit (METERED_TOOL_UNITS);
     * beyond it, usage credits pay at the catalog's `toolPrices`. A tool without an entry has no
     * monthly cap (its feature still has to be in `features`).
     */
    toolAllowances: z.partialRecord(z.enum(METERED_TOOLS), z.int().positive()),
    features: z.array(z.enum(PLAN_FEATURES)),
    domains: z.array(z.enum(PLAN_DOMAINS)).min(1),
    monthlyTokenAllowance: z.int().positive().nullable(),
    includedCreditsCents: Count,
    /** Whether pay-as-you-go usage credits can be enabled beyond the allowance. */
    usageCredits: z.boolean(),
    /** Default monthly cap on overage spend. */
    overageCapCents: Count.nullable(),
    contextLimitTokens: z.int().positive(),
    requestsPerMinute: z.int().positive(),
    tokensPerMinute: z.int().positive(),
    documentAllowance: Count,
    /**
     * Reasoning jobs a tenant may have queued or running at once; one more is refused (429).
     * Optional in a PLAN_CATALOG override (default 10).
     */
    reasoningQueueLimit: z.int().positive().default(10),
    /**
     * Reasoning jobs of one workspace and mode executing at once (their run slots); the others of
     * the queue limit wait `queued` in FIFO order (durable-objects/reasoning-run-queue/). Optional in
     * a PLAN_CATALOG override (default 2).
     */
    reasoningConcurrency: z.int().positive().default(2),
    /**
     * OTLP exports per minute (sliding window), apart from `requestsPerMinute`: exporters batch on
     * their own timers and must not use up the model requests' budget. Optional in an override.
     */
    ingestRequestsPerMinute: z.int().positive().default(120),
    /**
     * OTLP bytes per minute, counted after decompression; at least one export at the 8 MiB limit
     * must fit. Optional in an override.
     */
    ingestBytesPerMinute: z
      .int()
      .min(8 * 1024 * 1024)
      .default(16 * 1024 * 1024),
  })
  .strict()
export type BillingPlan = z.infer<typeof BillingPlanSchema>

export const PlanCatalogSchema = z
  .object({
    version: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date like 2026-08-01'),
    /** Base of the URLs in upgrade actions. */
    consoleUrl: z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, '')),
    /** List price of one unit of each paid tool, in USD (a decimal string, like model prices). */
    toolPrices: z.record(
      z.enum(METERED_TOOLS),
      z.string().regex(/^\d+(\.\d{1,12})?$/, 'a decimal string in USD per unit'),
    ),
    plans: z.array(BillingPlanSchema).min(1),
  })
  .strict()
  .superRefine((catalog, ctx) => {
    const ids = new Set<string>()
    const ranks = new Set<number>()
    catalog.plans.forEach((plan, i) => {
      if (ids.has(plan.id))
        ctx.addIssue({ code: 'custom', path: ['plans', i, 'id'], message: `duplicate plan ${plan.id}` })
      if (ranks.has(plan.rank))
        ctx.addIssue({ code: 'custom', path: ['plans', i, 'rank'], message: `duplicate rank ${plan.rank}` })
      ids.add(plan.id)
      ranks.add(plan.rank)
      for (const alias of Object.keys(plan.modelAllowances)) {
        if (!plan.models.includes(alias as ModelAlias)) {
          ctx.addIssue({
            code: 'custom',
            path: ['plans', i, 'modelAllowances', alias],
            message: `${alias} has an allowance but is not in models`,
          })
        }
      }
    })
  })
export type PlanCatalog = z.infer<typeof PlanCatalogSchema>

export const PLAN_CATALOG_CONFIG = {
  version: '2026-11-25',
  consoleUrl: 'https://console.svc.example',
  // telemetry_ingest: USD 0.50 per GB (10^9 bytes) after decompression.
  toolPrices: {
    web_search: '0.005',
    transcription: '0.0001',
    real_qpu: '3.30',
    telemetry_ingest: '0.0000000005',
  },
  plans: [
    {
      id: 'free',
      name: 'Free',
      rank: 0,
      monthlyPriceCents: 0,
      models: ['svc-cell', 'svc-brood'],
      modelAllowances: {},
      toolAllowances: { telemetry_ingest: 1_000_000_000 },
      features: ['agent_runs', 'mcp', 'telemetry_ingest'],
      domains: ['general'],
      monthlyTokenAllowance: 200_000,
      includedCreditsCents: 0,
      usageCredits: false,
      overageCapCents: 0,
      contextLimitTokens: 16_000,
      requestsPerMinute: 20,
      tokensPerMinute: 40_000,
      documentAllowance: 0,
      reasoningQueueLimit: 2,
      reasoningConcurrency: 1,
      ingestRequestsPerMinute: 120,
      ingestBytesPerMinute: 16 * 1024 * 1024,
    },
    {
      id: 'pro',
      name: 'Pro',
      rank: 1,
      monthlyPriceCents: 2_000,
      models: ['svc-cell', 'svc-brood', 'svc-comb', 'svc-buzz'],
      modelAllowances: { 'svc-buzz': 1_000_000 },
      toolAllowances: { web_search: 1_000, transcription: 3_600, telemetry_ingest: 50_000_000_000 },
      features: [
        'thinking',
        'retrieval',
        'web_search',
        'agent_runs',
        'transcription',
        'mcp',
        'telemetry_ingest',
      ],
      domains: ['general', 'code'],
      monthlyTokenAllowance: 5_000_000,
      includedCreditsCents: 500,
      usageCredits: true,
      overageCapCents: 5_000,
      contextLimitTokens: 128_000,
      requestsPerMinute: 120,
      tokensPerMinute: 400_000,
      documentAllowance: 100,
      reasoningQueueLimit: 5,
      reasoningConcurrency: 2,
      ingestRequestsPerMinute: 600,
      ingestBytesPerMinute: 64 * 1024 * 1024,
    },
    {
      id: 'team',
      name: 'Team',
      rank: 2,
      monthlyPriceCents: 6_000,
      models: ['svc-cell', 'svc-brood', 'svc-comb', 'svc-buzz', 'svc-hive'],
      modelAllowances: { 'svc-hive': 2_000_000 },
      toolAllowances: { web_search: 5_000, transcription: 18_000, telemetry_ingest: 250_000_000_000 },
      features: [
        'thinking',
        'retrieval',
        'web_search',
        'agent_runs',
        'transcription',
        'mcp',
        'telemetry_ingest',
      ],
      domains: ['general', 'code', 'research'],
      monthlyTokenAllowance: 25_000_000,
      includedCreditsCents: 2_000,
      usageCredits: true,
      overageCapCents: 50_000,
      contextLimitTokens: 256_000,
      requestsPerMinute: 600,
      tokensPerMinute: 2_000_000,
      documentAllowance: 1_000,
      reasoningQueueLimit: 20,
      reasoningConcurrency: 4,
      ingestRequestsPerMinute: 3000,
      ingestBytesPerMinute: 256 * 1024 * 1024,
    },
    {
      id: 'enterprise',
      name: 'Enterprise',
      rank: 3,
      monthlyPriceCents: null,
      models: ['svc-cell', 'svc-brood', 'svc-comb', 'svc-buzz', 'svc-hive', 'svc-swarm'],
      modelAllowances: {},
      toolAllowances: { real_qpu: 100 },
      features: [
        'thinking',
        'retrieval',
        'web_search',
        'real_qpu',
        'agent_runs',
        'transcription',
        'mcp',
        'telemetry_ingest',
      ],
      domains: ['general', 'code', 'research', 'security', 'quantum'],
      monthlyTokenAllowance: null,
      includedCreditsCents: 0,
      usageCredits: true,
      overageCapCents: null,
      contextLimitTokens: 1_000_000,
      requestsPerMinute: 3_000,
      tokensPerMinute: 10_000_000,
      documentAllowance: 100_000,
      reasoningQueueLimit: 200,
      reasoningConcurrency: 8,
      ingestRequestsPerMinute: 12000,
      ingestBytesPerMinute: 1024 * 1024 * 1024,
    },
  ],
} as const satisfies z.input<typeof PlanCatalogSchema>

export function parsePlanCatalog(raw: unknown): PlanCatalog {
  return PlanCatalogSchema.parse(raw)
}

/** The built-in catalog, validated at isolate start. */
export const PLAN_CATALOG: PlanCatalog = parsePlanCatalog(PLAN_CATALOG_CONFIG)

/** Env var that replaces the built-in catalog for a deployment (same JSON shape as PLAN_CATALOG_CONFIG). */
export const PLAN_CATALOG_VAR = 'PLAN_CATALOG'
/**
 * Env var naming this deployment's workspace console (e.g. `https://api.example.com/console`): the
 * base of the URLs in upgrade actions, replacing the catalog's `consoleUrl`, so those links open
 * real console pages (`/billing/plans`, `/billing/usage-credits`, ...). `npm start` sets it to the
 * local gateway's `/console`.
 */
export const CONSOLE_URL_VAR = 'CONSOLE_URL'

let envCatalog: { raw: string; catalog: PlanCatalog } | null = null
let withConsole: { base: PlanCatalog; url: string; catalog: PlanCatalog } | null = null

/** The part of a worker's env the catalog is read from. */
export interface PlanCatalogEnv {
  readonly [PLAN_CATALOG_VAR]?: unknown
  readonly [CONSOLE_URL_VAR]?: unknown
}

const ConsoleUrlSchema = z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, ''))

/** The catalog with the deployment's console as the base of its upgrade links (CONSOLE_URL). */
function atConsole(catalog: PlanCatalog, env: PlanCatalogEnv): PlanCatalog {
  const raw = env[CONSOLE_URL_VAR]
  if (raw === undefined || raw === null || raw === '') return catalog
  if (withConsole?.base === catalog && withConsole.url === raw) return withConsole.catalog
  const parsed = ConsoleUrlSchema.safeParse(raw)
  if (!parsed.success) {
    throw new AppError(
      503,
      'plan_catalog_invalid',
      `The plan catalog is misconfigured on this deployment (${CONSOLE_URL_VAR} is not an http(s) URL). The operator must fix it; retrying will not help until then.`,
      { internalMessage: `${CONSOLE_URL_VAR} is invalid: ${JSON.stringify(raw)}` },
    )
  }
  withConsole = { base: catalog, url: String(raw), catalog: { ...catalog, consoleUrl: parsed.data } }
  return withConsole.catalog
}

/**
 * The deployment's catalog: `PLAN_CATALOG` (JSON, validated with the same schema; parsed once
 * per isolate) when set, otherwise the built-in one. Plan ids must stay those of the tenants
 * table (free, pro, team, enterprise). With `CONSOLE_URL` set, its upgrade links point there. An
 * invalid value is an operator error: 503 `plan_catalog_invalid` whose log line names every problem.
 */
export function planCatalogFromEnv(env: PlanCatalogEnv): PlanCatalog {
  return atConsole(configuredCatalog(env), env)
}

function configuredCatalog(env: PlanCatalogEnv): PlanCatalog {
  const raw = env[PLAN_CATALOG_VAR]
  if (raw === undefined || raw === null || raw === '') return PLAN_CATALOG
  const text = typeof raw === 'string' ? raw : JSON.stringify(raw)
  if (envCatalog?.raw === text) return envCatalog.catalog
  let catalog: PlanCatalog
  try {
    catalog = parsePlanCatalog(JSON.parse(text))
  } catch (err) {
    const detail =
      err instanceof z.ZodError
        ? err.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')
        : (err as Error).message
    throw new AppError(
      503,
      'plan_catalog_invalid',
      `The plan catalog is misconfigured on this deployment (${PLAN_CATALOG_VAR} is invalid). The operator must fix it; retrying will not help until then.`,
      { internalMessage: `${PLAN_CATALOG_VAR} is invalid: ${detail}`, cause: err },
    )
  }
  envCatalog = { raw: text, catalog }
  return catalog
}

/** The plan with this id in `catalog`, or null. Request paths use resolvePlan instead. */
export function getPlan(id: string, catalog: PlanCatalog): BillingPlan | null {
  return catalog.plans.find((plan) => plan.id === id) ?? null
}

/** A caller's billing plan and the catalog it was found in (upgrade decisions name plans of it). */
export interface ResolvedPlan {
  readonly plan: BillingPlan
  readonly catalog: PlanCatalog
}

/**
 * The one way every request path (chat, agent turns and their loop, web search, transcription)
 * learns the caller's billing plan: the deployment's catalog (planCatalogFromEnv) and the plan id
 * of the caller's tenant. The same misconfiguration answers the same everywhere: an invalid
 * PLAN_CATALOG is 503 `plan_catalog_invalid`; a plan id the catalog does not define (the tenants
 * table and PLAN_CATALOG disagree) is 503 `plan_not_in_catalog`. Both are operator errors.
 */
export function resolvePlan(env: PlanCatalogEnv, planId: string): ResolvedPlan {
  const catalog = planCatalogFromEnv(env)
  const plan = getPlan(planId, catalog)
  if (!plan) {
    throw new AppError(
      503,
      'plan_not_in_catalog',
      `Your workspace is on plan "${planId}", which this deployment's plan catalog does not define. The operator must add it to ${PLAN_CATALOG_VAR}; retrying will not help until then.`,
      {
        internalMessage: `plan ${JSON.stringify(planId)} is not in the plan catalog (${catalog.plans.map((p) => p.id).join(', ')})`,
      },
    )
  }
  return { plan, catalog }
}

/**
 * The cheapest plan above `current` for which `allows` holds (by monthly price; contract-priced
 * plans count as most expensive, ties broken by rank), or null when no plan would.
 */
export function cheapestUpgrade(
  current: BillingPlan,
  allows: (plan: BillingPlan) => boolean,
  catalog: PlanCatalog,
): BillingPlan | null {
  const candidates = catalog.plans.filter((plan) => plan.rank > current.rank && allows(plan))
  candidates.sort(
    (a, b) =>
      (a.monthlyPriceCents ?? Number.POSITIVE_INFINITY) - (b.monthlyPriceCents ?? Number.POSITIVE_INFINITY) ||
      a.rank - b.rank,
  )
  return candidates[0] ?? null
}
