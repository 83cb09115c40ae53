/**
 * Bindings and configuration of the telemetry worker (functions/telemetry/wrangler.toml), parsed
 * once per distinct env by one zod schema. README's configuration table lists the same rows.
 *
 * | variable                     | kind   | default        | meaning                                           |
 * |------------------------------|--------|----------------|---------------------------------------------------|
 * | OTLP_COLLECTOR_URL           | var    | unset (503)    | base URL of the OTLP/HTTP collector; /v1/<signal> |
 * | OTLP_COLLECTOR_AUTHORIZATION | secret | unset          | Authorization header value sent to the collector  |
 * | OTLP_COLLECTOR_TIMEOUT_MS    | var    | 10000          | longest wait for the collector's answer           |
 * | OTLP_DEPLOYMENT_ENVIRONMENT  | var    | development    | x-svc-deployment-environment for the collector    |
 * | OTLP_CLOUD_REGION            | var    | local          | x-svc-cloud-region for the collector              |
 * | OTLP_RESULTS_RETAINED        | var    | 1000           | ingestion results kept per tenant                 |
 */
import { z } from 'zod'
import type { AuditLogNamespace } from '../../../durable-objects/audit-log/audit-client'
import type { DatabaseEnv } from '../../../shared/db/client'
import { AppError } from '../../../shared/http/errors'
import type { RateLimiterNamespace } from '../../../shared/metering/metering-client'
import type { PlanCatalogEnv } from '../../../shared/plans/plan-catalog'

export interface TelemetryEnv extends DatabaseEnv, PlanCatalogEnv {
  /** The tenants' audit logs, hosted by svc-platform (observability-token changes are recorded). */
  AUDIT_LOG?: AuditLogNamespace
  /** Ingestion rate limits and byte allowance: the RateLimiter objects hosted by svc-metering. */
  RATE_LIMITER?: RateLimiterNamespace
  OTLP_COLLECTOR_URL?: string
  OTLP_COLLECTOR_AUTHORIZATION?: string
  OTLP_COLLECTOR_TIMEOUT_MS?: string
  OTLP_DEPLOYMENT_ENVIRONMENT?: string
  OTLP_CLOUD_REGION?: string
  OTLP_RESULTS_RETAINED?: string
}

const positiveInt = (fallback: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return fallback
      if (!/^\d+$/.test(v.trim()) || Number(v) <= 0) {
        ctx.addIssue({ code: 'custom', message: `must be a positive integer (got ${JSON.stringify(v)})` })
        return z.NEVER
      }
      return Number(v)
    })

const optionalText = (fallback: string | null) =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? fallback : v.trim()))

export const TelemetrySettingsSchema = z.object({
  OTLP_COLLECTOR_URL: optionalText(null).pipe(
    z
      .string()
      .url({ message: 'must be an http(s) URL such as http://collector:4318' })
      .refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL')
      .nullable(),
  ),
  OTLP_COLLECTOR_AUTHORIZATION: optionalText(null),
  OTLP_COLLECTOR_TIMEOUT_MS: positiveInt(10_000),
  OTLP_DEPLOYMENT_ENVIRONMENT: optionalText('development'),
  OTLP_CLOUD_REGION: optionalText('local'),
  OTLP_RESULTS_RETAINED: positiveInt(1_000),
})

export type TelemetrySettings = z.output<typeof TelemetrySettingsSchema>

const parsed = new WeakMap<object, TelemetrySettings>()

/** The settings of this env (parsed once); a wrong value is a 503 naming the variable. */
export function telemetrySettings(env: TelemetryEnv): TelemetrySettings {
  const cached = parsed.get(env)
  if (cached) return cached
  const result = TelemetrySettingsSchema.safeParse(env)
  if (!result.success) {
    const issue = result.error.issues[0]!
    throw new AppError(
      503,
      'telemetry_misconfigured',
      `The telemetry receiver is misconfigured (${String(issue.path[0])} ${issue.message}); an operator must fix it.`,
    )
  }
  parsed.set(env, result.data)
  return result.data
}

/** The RateLimiter binding; without it the receiver cannot admit an export (503, nothing forwarded). */
export function meteringOf(env: TelemetryEnv): RateLimiterNamespace {
  if (env.RATE_LIMITER) return env.RATE_LIMITER
  throw new AppError(
    503,
    'metering_unavailable',
    'Usage limits cannot be checked right now, so the export was not forwarded. Retry in a few seconds.',
    { headers: { 'retry-after': '5' }, internalMessage: 'the RATE_LIMITER binding is missing' },
  )
}
