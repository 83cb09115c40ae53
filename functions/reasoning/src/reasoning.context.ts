/**
 * The reasoning worker's env (bindings and variables). The ReasoningJob Durable Object runs in this
 * worker and sees the same env, so it extends the object's own (ReasoningJobEnv). Every variable is
 * listed in README's configuration table.
 */
import type { ReasoningJobEnv } from '../../../durable-objects/reasoning-job/reasoning-job.context'
import type { ReasoningJob } from '../../../durable-objects/reasoning-job/reasoning-job.do'
import type { ProviderConnectionsEnv } from './provider-connections'

export type ReasoningEnv = ReasoningJobEnv &
  ProviderConnectionsEnv & {
    /** One ReasoningJob per (tenant, job id); see durable-objects/reasoning-job/reasoning-job.do.ts. */
    readonly REASONING_JOB: DurableObjectNamespace<ReasoningJob>
  }
