/**
 * What an AgentRun object needs from the env of the worker that hosts it (the code worker, whose
 * own env extends this one). Every variable is listed in README's configuration table.
 */
import type { RateLimiterNamespace } from '../../shared/metering'
import type { PlanCatalogEnv } from '../../shared/plans'
import type { SearchEnv } from '../../shared/search/search-chain'
import type { AgentSettingsEnv } from './agent-settings'

export type AgentRunEnv = SearchEnv &
  AgentSettingsEnv &
  PlanCatalogEnv & {
    /** The RateLimiter objects: turn admission and metering. */
    readonly RATE_LIMITER: RateLimiterNamespace
    /** Model providers (docs/providers.md); unset: live-key turns cannot run. */
    readonly MODEL_PROVIDERS?: string
    /** Secrets named by MODEL_PROVIDERS (`apiKeySecret`) and other bindings it names. */
    readonly [name: string]: unknown
  }
