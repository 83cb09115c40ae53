/**
 * The reasoning worker's `queue()` entry: the QPU queue and its dead-letter queue (wrangler.toml),
 * wired to the consumer (qpu-consumer.ts) with this deployment's accounts: the platform's own
 * (QPU_IONQ_*) for managed_qpu, a tenant's connection (decrypted from Postgres) for byopa_managed
 * (durable-objects/reasoning-job/quantum/providers/provider-accounts.ts).
 */
import { type QpuSettingsEnv, qpuSettingsFromEnv } from '../../../durable-objects/reasoning-job/qpu-settings'
import {
  openQpuAccount,
  type QpuAccountEnv,
} from '../../../durable-objects/reasoning-job/quantum/providers/provider-accounts'
import type { QpuJobPort, QpuQueueMessage } from '../../../durable-objects/reasoning-job/quantum/qpu-queue'
import { handleDeadLetter, handleQpuMessage } from './qpu-consumer'

export const QPU_DEAD_LETTER_QUEUE_NAME = 'svc-qpu-submissions-dlq'

export type QpuQueueEnv = QpuAccountEnv &
  QpuSettingsEnv & {
    /** The ReasoningJob objects (the QPU job port is part of their RPC surface). */
    REASONING_JOB?: DurableObjectNamespace<QpuJobPort & Rpc.DurableObjectBranded>
    QPU_QUEUE?: Queue<QpuQueueMessage>
  }

export async function handleQpuBatch(batch: MessageBatch<unknown>, env: QpuQueueEnv): Promise<void> {
  const jobs = env.REASONING_JOB
  if (!jobs) {
    // Nothing can record an outcome: leave the messages for a deployment that has the objects.
    batch.retryAll({ delaySeconds: 60 })
    return
  }
  const port = (m: QpuQueueMessage) => jobs.get(jobs.idFromName(`${m.tenant_id}/${m.job_id}`))
  const settings = qpuSettingsFromEnv(env)
  await Promise.all(
    batch.messages.map((message) =>
      batch.queue === QPU_DEAD_LETTER_QUEUE_NAME
        ? handleDeadLetter(message, { port })
        : handleQpuMessage(message, {
            port,
            openAccount: (tenantId, ref) => openQpuAccount(env, tenantId, ref),
            enqueue: async (body, delaySeconds) => {
              if (!env.QPU_QUEUE) throw new Error('QPU_QUEUE is not bound')
              await env.QPU_QUEUE.send(body, { delaySeconds })
            },
            pollDelaySeconds: settings.pollIntervalSeconds,
            maxRetryDelaySeconds: settings.retryMaxDelaySeconds,
          }),
    ),
  )
}
