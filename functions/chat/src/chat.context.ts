import type { DatabaseEnv } from '../../../shared/db/client'
import type { RateLimiterNamespace } from '../../../shared/metering/metering-client'
import type { ProviderEnv } from '../../../shared/providers/upstream-client'

/**
 * Bindings and configuration of the chat worker (functions/chat/wrangler.toml). The README's
 * configuration table is the reference; see docs/providers.md and docs/plans.md.
 */
export interface ChatEnv extends DatabaseEnv {
  /** The RateLimiter Durable Object, hosted by svc-metering (functions/metering). */
  RATE_LIMITER: RateLimiterNamespace
  /** The provider registry (JSON, docs/providers.md). Unset: live keys get 503 provider_not_configured. */
  MODEL_PROVIDERS?: string
  /** Replaces the built-in plan catalog (JSON, docs/plans.md). */
  PLAN_CATALOG?: string
}

/**
 * The env as the provider layer reads it: API-key secrets and Workers AI bindings are looked up
 * by the names MODEL_PROVIDERS gives them (`apiKeySecret`, `binding`), so they are not fields of
 * ChatEnv.
 */
export function providerEnv(env: ChatEnv): ProviderEnv {
  return env as unknown as ProviderEnv
}
