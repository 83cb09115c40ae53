import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { handleQpuBatch, type QpuQueueEnv } from './qpu-queue-handler'
import { reasoningApp } from './reasoning.app'
import type { ReasoningEnv } from './reasoning.context'

export { ReasoningJob } from '../../../durable-objects/reasoning-job/reasoning-job.do'
export { ReasoningRunQueue } from '../../../durable-objects/reasoning-run-queue/reasoning-run-queue.do'

export default class ReasoningWorker extends FamilyEntrypoint<ReasoningEnv> {
  protected readonly app = reasoningApp

  /** The QPU queue and its dead-letter queue (qpu-queue-handler.ts). */
  override async queue(batch: MessageBatch<unknown>): Promise<void> {
    // The consumer drives the QPU port of the job objects (durable-objects/reasoning-job/quantum/qpu-queue.ts).
    await handleQpuBatch(batch, this.env as unknown as QpuQueueEnv)
  }
}
