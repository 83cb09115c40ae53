/**
 * Model provider registry: which upstreams serve which model alias, in which order.
 *
 * Read from the JSON env var `MODEL_PROVIDERS` (format and example in docs/providers.md),
 * validated with zod and parsed once per isolate (re-parsed only if the string changes).
 * Secrets never appear in it: a provider names the env secret holding its key
 * (`apiKeySecret`), or the Workers AI binding it uses (`binding`).
 */
import { z } from 'zod'
import { MODEL_ALIASES, type ModelAlias } from '../catalog/model-aliases'
import { AppError } from '../http/errors'
import { describeIssues } from '../http/validation'
import { REASONING_EFFORTS } from './chat-wire'

export const MODEL_PROVIDERS_VAR = 'MODEL_PROVIDERS'

const Alias = z.enum(MODEL_ALIASES)
const ProviderId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'must be 1-63 lowercase letters, digits, "-" or "_"')
const EnvName = z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'must be an env name in SCREAMING_SNAKE_CASE')
const ModelMap = z
  .partialRecord(Alias, z.string().min(1))
  .refine((models) => Object.keys(models).length > 0, 'must map at least one model alias')
const TimeoutMs = z.number().int().min(100).max(600_000)

const OpenAiCompatibleProviderSchema = z
  .object({
    id: ProviderId,
    kind: z.literal('openai-compatible'),
    /** Base URL up to and including the version segment, e.g. https://api.openai.com/v1. */
    baseUrl: z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, '')),
    /** Env secret holding the API key; omit for keyless local servers (Ollama, llama.cpp). */
    apiKeySecret: EnvName.optional(),
    /** Extra non-secret headers (e.g. OpenAI-Organization). */
    headers: z
      .record(z.string().regex(/^[A-Za-z0-9-]+$/), z.string())
      .refine(
        (headers) => !Object.keys(headers).some((name) => name.toLowerCase() === 'authorization'),
        'must not contain authorization: put the key in a secret and name it in apiKeySecret',
      )
      .optional(),
    models: ModelMap,
    timeoutMs: TimeoutMs.default(30_000),
    streamIdleTimeoutMs: TimeoutMs.default(60_000),
    /** How reasoning_effort is forwarded: value → upstream value, or null to drop it. */
    reasoningEffort: z.partialRecord(z.enum(REASONING_EFFORTS), z.string().min(1).nullable()).optional(),
  })
  .strict()

const WorkersAiProviderSchema = z
  .object({
    id: ProviderId,
    kind: z.literal('workers-ai'),
    /** Name of the Workers AI binding in the worker's env (e.g. AI). */
    binding: EnvName,
    models: ModelMap,
    timeoutMs: TimeoutMs.default(30_000),
    streamIdleTimeoutMs: TimeoutMs.default(60_000),
  })
  .strict()

const ProviderSchema = z.discriminatedUnion('kind', [OpenAiCompatibleProviderSchema, WorkersAiProviderSchema])

export const RetrySettingsSchema = z
  .object({
    /** Passes over the target list (1 = no retry round). */
    maxRounds: z.number().int().min(1).max(5).default(2),
    baseDelayMs: z.number().int().min(0).max(10_000).default(200),
    maxDelayMs: z.number().int().min(0).max(30_000).default(2_000),
    /** A Retry-After longer than this takes the target out of the retry round. */
    maxRetryAfterMs: z.number().int().min(0).max(60_000).default(5_000),
  })
  .strict()

export const BreakerSettingsSchema = z
  .object({
    failureThreshold: z.number().int().min(1).max(100).default(5),
    cooldownMs: z.number().int().min(1_000).max(600_000).default(30_000),
  })
  .strict()

export const ProviderConfigSchema = z
  .object({
    version: z.literal(1),
    providers: z.array(ProviderSchema).min(1),
    /** Ordered fallbacks per alias; when absent for an alias, declaration order is used. */
    routes: z.partialRecord(Alias, z.array(ProviderId).min(1)).optional(),
    retry: RetrySettingsSchema.default(RetrySettingsSchema.parse({})),
    breaker: BreakerSettingsSchema.default(BreakerSettingsSchema.parse({})),
  })
  .strict()
  .superRefine((config, ctx) => {
    const byId = new Map<string, (typeof config.providers)[number]>()
    config.providers.forEach((provider, index) => {
      if (byId.has(provider.id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['providers', index, 'id'],
          message: `duplicate provider id "${provider.id}"`,
        })
      }
      byId.set(provider.id, provider)
    })
    for (const [alias, ids] of Object.entries(config.routes ?? {})) {
      ids.forEach((id, index) => {
        const provider = byId.get(id)
        if (!provider) {
          ctx.addIssue({
            code: 'custom',
            path: ['routes', alias, index],
            message: `unknown provider "${id}"`,
          })
        } else if (provider.models[alias as ModelAlias] === undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['routes', alias, index],
            message: `provider "${id}" has no model for ${alias} in its models map`,
          })
        }
      })
    }
  })

export type ProviderConfig = z.infer<typeof ProviderConfigSchema>
export type ProviderDefinition = ProviderConfig['providers'][number]
export type OpenAiCompatibleProvider = z.infer<typeof OpenAiCompatibleProviderSchema>
export type RetrySettings = z.infer<typeof RetrySettingsSchema>
export type BreakerSettings = z.infer<typeof BreakerSettingsSchema>

/** The built-in test-mode model (never configured, never reachable with a live key). */
export interface SimulatedProvider {
  readonly id: 'svc-test-mode'
  readonly kind: 'simulated'
  readonly timeoutMs: number
  readonly streamIdleTimeoutMs: number
}

export const SIMULATED_PROVIDER: SimulatedProvider = {
  id: 'svc-test-mode',
  kind: 'simulated',
  timeoutMs: 30_000,
  streamIdleTimeoutMs: 60_000,
}

/** One place a model alias can be served: a provider plus the upstream model name. */
export interface ProviderTarget {
  readonly provider: ProviderDefinition | SimulatedProvider
  readonly upstreamModel: string
  /** Key of the circuit breaker: `${provider id}/${upstream model}`. */
  readonly key: string
}

export interface ProviderRegistry {
  readonly config: ProviderConfig
  /** Targets for an alias in failover order (empty when none is configured). */
  targetsFor(alias: ModelAlias): readonly ProviderTarget[]
}

export class ProviderConfigError extends Error {
  override readonly name = 'ProviderConfigError'
}

/** Parses and validates a provider configuration; throws ProviderConfigError with every problem named. */
export function parseProviderConfig(json: string): ProviderRegistry {
  let raw: unknown
  try {
    raw = JSON.parse(json)
  } catch (err) {
    throw new ProviderConfigError(`${MODEL_PROVIDERS_VAR} is not valid JSON (${(err as Error).message})`)
  }
  const parsed = ProviderConfigSchema.safeParse(raw, { reportInput: true })
  if (!parsed.success) {
    throw new ProviderConfigError(
      `${MODEL_PROVIDERS_VAR} is invalid: ${describeIssues(parsed.error, raw, { root: 'the configuration', showValues: false })}`,
    )
  }
  return createRegistry(parsed.data)
}

function createRegistry(config: ProviderConfig): ProviderRegistry {
  const targets = new Map<ModelAlias, ProviderTarget[]>()
  for (const alias of MODEL_ALIASES) {
    const order =
      config.routes?.[alias] ?? config.providers.filter((p) => p.models[alias] !== undefined).map((p) => p.id)
    const list: ProviderTarget[] = []
    for (const id of order) {
      const provider = config.providers.find((p) => p.id === id)
      const upstreamModel = provider?.models[alias]
      if (provider && upstreamModel)
        list.push({ provider, upstreamModel, key: `${provider.id}/${upstreamModel}` })
    }
    targets.set(alias, list)
  }
  return { config, targetsFor: (alias) => targets.get(alias) ?? [] }
}

let cached: { raw: string; registry: ProviderRegistry } | null = null

/**
 * The registry for this isolate, parsed from `MODEL_PROVIDERS` on first use. Returns null when
 * the variable is unset (every live request then gets the 503 naming it). An invalid value is
 * an operator error: a 503 whose internalMessage says exactly what is wrong.
 */
export function providerRegistryFromEnv(env: {
  readonly [MODEL_PROVIDERS_VAR]?: unknown
}): ProviderRegistry | null {
  const raw = env[MODEL_PROVIDERS_VAR]
  if (raw === undefined || raw === null || raw === '') return null
  const text = typeof raw === 'string' ? raw : JSON.stringify(raw)
  if (cached?.raw === text) return cached.registry
  try {
    const registry = parseProviderConfig(text)
    cached = { raw: text, registry }
    return registry
  } catch (err) {
    throw new AppError(
      503,
      'provider_config_invalid',
      `Model providers are misconfigured on this deployment (${MODEL_PROVIDERS_VAR} is invalid). The operator must fix the configuration; retrying will not help until then.`,
      { internalMessage: (err as Error).message, cause: err },
    )
  }
}

/** Targets for test mode: only the built-in simulated model. */
export function simulatedTargets(alias: ModelAlias): readonly ProviderTarget[] {
  return [{ provider: SIMULATED_PROVIDER, upstreamModel: alias, key: `${SIMULATED_PROVIDER.id}/${alias}` }]
}

/**
 * The one 503 for a model no provider serves here (every family and the upstream client use it):
 * names the alias, what the operator must set and that test keys need nothing. `detail` says why
 * configured targets are unusable (a secret or binding missing).
 */
export function providerNotConfigured(alias: string, detail?: string): AppError {
  return new AppError(
    503,
    'provider_not_configured',
    `No model provider is configured for ${alias} on this deployment${detail ? ` (${detail})` : ''}. The operator must map ${alias} to a provider in ${MODEL_PROVIDERS_VAR} (see docs/providers.md); test keys (svc_sk_test_) use the built-in model and need none.`,
  )
}

/** The registry and the failover targets of a live request's alias, or the 503 above. */
export function requireProvider(
  env: { readonly [MODEL_PROVIDERS_VAR]?: unknown },
  alias: ModelAlias,
): { registry: ProviderRegistry; targets: readonly ProviderTarget[] } {
  const registry = providerRegistryFromEnv(env)
  const targets = registry?.targetsFor(alias) ?? []
  if (!registry || targets.length === 0) throw providerNotConfigured(alias)
  return { registry, targets }
}
