/**
 * The code worker's env (bindings and variables). The AgentRun Durable Object runs in this worker
 * and sees the same env, so it extends the object's own (AgentRunEnv). Every variable is listed in
 * README's configuration table.
 */

import type { AgentRunEnv } from '../../../durable-objects/agent-run/agent-run.context'
import type { AgentRun } from '../../../durable-objects/agent-run/agent-run.do'
import type { DatabaseEnv } from '../../../shared/db/client'
import type { SpeechEnv } from './audio/transcription-providers'

export type CodeEnv = AgentRunEnv &
  SpeechEnv &
  Partial<DatabaseEnv> & {
    /** One AgentRun per (account, run_id); see durable-objects/agent-run/agent-run.do.ts. */
    readonly AGENT_RUN: DurableObjectNamespace<AgentRun>
  }
