/**
 * Bindings and configuration of the telemetry worker (functions/telemetry/wrangler.toml), parsed
 * once per distinct env values by one zod schema (envReader). README's configuration table lists the same rows.
 *
 * | variable                     | kind   | default        | meaning                                           |
 * |------------------------------|--------|----------------|---------------------------------------------------|
 * | OTLP_COLLECTOR_URL           | var    | unset (503)    | base URL of the OTLP/HTTP collector; /v1/<signal> |
 *   (`npm start` sets it to its local collector when unset: scripts/otlp-collector/)
 * | OTLP_COLLECTOR_AUTHORIZATION | secret | unset          | Authorization header value sent to the collector  |
 * | OTLP_COLLECTOR_TIMEOUT_MS    | var    | 10000          | longest wait for the collector's answer           |
 * | OTLP_DEPLOYMENT_ENVIRONMENT  | var    | development    | x-svc-deployment-environment for the collector    |
 * | OTLP_CLOUD_REGION            | var    | local          | x-svc-cloud-region for the collector              |
 * | OTLP_RESULTS_RETAINED        | var    | 1000           | ingestion results kept per tenant                 |
 */
import { z } from 'zod'
import type { AuditLogNamespace } from '../../../durable-objects/audit-log/audit-client'
import { envReader, textVar, urlVar, wholeNumberVar } from '../../../shared/config/worker-env'
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

/** The worker's settings, parsed by the one env reader every worker uses (shared/config/worker-env.ts). */
export const TelemetrySettingsSchema = z.object({
  OTLP_COLLECTOR_URL: urlVar(),
  OTLP_COLLECTOR_AUTHORIZATION: textVar(undefined),
  OTLP_COLLECTOR_TIMEOUT_MS: wholeNumberVar(10_000),
  OTLP_DEPLOYMENT_ENVIRONMENT: textVar('development'),
  OTLP_CLOUD_REGION: textVar('local'),
  OTLP_RESULTS_RETAINED: wholeNumberVar(1_000),
})

export type TelemetrySettings = z.output<typeof TelemetrySettingsSchema>

/** The settings of this env; a wrong value is 503 `service_misconfigured` naming the variable. */
export const telemetrySettings: (env: TelemetryEnv) => TelemetrySettings = envReader(
  'telemetry',
  TelemetrySettingsSchema,
)

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
