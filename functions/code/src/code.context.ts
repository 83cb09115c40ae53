/**
 * The code worker's env (bindings and variables). The AgentRun Durable Object runs in this worker
 * and sees the same env. Every variable is listed in README's configuration table.
 */

import type { AgentRun } from '../../../durable-objects/agent-run.do'
import type { SpeechEnv } from '../../../shared/audio/transcription-providers'
import type { DatabaseEnv } from '../../../shared/db/client'
import type { RateLimiterNamespace } from '../../../shared/metering'
import type { SearchEnv } from '../../../shared/search/search-chain'
import type { AgentSettingsEnv } from './agent-settings'

export interface CodeBindings {
  /** One AgentRun per (account, run_id); see durable-objects/agent-run.do.ts. */
  AGENT_RUN: DurableObjectNamespace<AgentRun>
  /** The RateLimiter objects hosted by svc-chat: turn admission and metering. */
  RATE_LIMITER: RateLimiterNamespace
  /** Model providers (docs/providers.md); unset: live-key turns answer 503. */
  MODEL_PROVIDERS?: string
  /** Replaces the built-in plan catalog; set it on every worker that meters (docs/plans.md). */
  PLAN_CATALOG?: string
}

export type CodeEnv = CodeBindings &
  SearchEnv &
  SpeechEnv &
  AgentSettingsEnv &
  Partial<DatabaseEnv> & {
    /** Secrets named by MODEL_PROVIDERS (`apiKeySecret`) and other bindings it names. */
    readonly [name: string]: unknown
  }
