/**
 * What an AgentRun object needs from the env of the worker that hosts it (the code worker, whose
 * own env extends this one). Every variable is listed in README's configuration table.
 */
import type { DatabaseEnv } from '../../shared/db/client'
import type { RateLimiterNamespace } from '../../shared/metering'
import type { PlanCatalogEnv } from '../../shared/plans'
import type { AgentSettingsEnv } from './agent-settings'
import type { SearchEnv } from './web-search/search-chain'

export type AgentRunEnv = SearchEnv &
  AgentSettingsEnv &
  /** Postgres, for the run index (agent_runs); unreachable: the write waits for it. */
  DatabaseEnv &
  PlanCatalogEnv & {
    /** The RateLimiter objects: turn admission and metering. */
    readonly RATE_LIMITER: RateLimiterNamespace
    /** Model providers (docs/providers.md); unset: live-key turns cannot run. */
    readonly MODEL_PROVIDERS?: string
    /** Secrets named by MODEL_PROVIDERS (`apiKeySecret`) and other bindings it names. */
    readonly [name: string]: unknown
  }
