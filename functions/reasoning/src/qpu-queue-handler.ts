/**
 * The reasoning worker's `queue()` entry: the QPU queue and its dead-letter queue (wrangler.toml),
 * wired to the consumer (qpu-consumer.ts) with this deployment's accounts: the platform's own
 * (QPU_IONQ_*) for managed_qpu, a tenant's connection (decrypted from Postgres) for byopa_managed.
 */
import { openDatabase } from '../../../shared/db/client'
import { openConnectionAccount } from '../../../shared/quantum/providers/provider-connections.store'
import type { ProviderAccount } from '../../../shared/quantum/providers/qpu-provider'
import type { QpuAccountRef, QpuJobPort, QpuQueueMessage } from '../../../shared/quantum/qpu-queue'
import type { ProviderConnectionsEnv } from './provider-connections'
import { handleDeadLetter, handleQpuMessage } from './qpu-consumer'

export const QPU_QUEUE_NAME = 'svc-qpu-submissions'
export const QPU_DEAD_LETTER_QUEUE_NAME = 'svc-qpu-submissions-dlq'

export interface QpuQueueEnv extends ProviderConnectionsEnv {
  /** The ReasoningJob objects (the QPU job port is part of their RPC surface). */
  REASONING_JOB?: DurableObjectNamespace<QpuJobPort & Rpc.DurableObjectBranded>
  QPU_QUEUE?: Queue<QpuQueueMessage>
  QPU_IONQ_BASE_URL?: string
  QPU_IONQ_API_KEY?: string
  QPU_IONQ_TARGET?: string
  /** Seconds between polls of a running provider job (default 2). */
  QPU_POLL_INTERVAL_SECONDS?: string
}

/** The platform's own account, or null when this deployment has none. */
export function managedAccount(env: QpuQueueEnv): ProviderAccount | null {
  if (!env.QPU_IONQ_BASE_URL || !env.QPU_IONQ_API_KEY) return null
  return {
    kind: 'ionq',
    baseUrl: env.QPU_IONQ_BASE_URL,
    apiKey: env.QPU_IONQ_API_KEY,
    target: env.QPU_IONQ_TARGET || 'qpu.aria-1',
  }
}

async function openAccount(
  env: QpuQueueEnv,
  tenantId: string,
  ref: QpuAccountRef,
): Promise<ProviderAccount | null> {
  if (ref.kind === 'managed') return managedAccount(env)
  const database = openDatabase(env, { max: 1 })
  try {
    return await openConnectionAccount(database.db, env.PROVIDER_CREDENTIAL_KEYS, tenantId, ref.connection_id)
  } finally {
    await database.close()
  }
}

export async function handleQpuBatch(batch: MessageBatch<unknown>, env: QpuQueueEnv): Promise<void> {
  const jobs = env.REASONING_JOB
  if (!jobs) {
    // Nothing can record an outcome: leave the messages for a deployment that has the objects.
    batch.retryAll({ delaySeconds: 60 })
    return
  }
  const port = (m: QpuQueueMessage) => jobs.get(jobs.idFromName(`${m.tenant_id}/${m.job_id}`))
  const pollDelaySeconds = Number(env.QPU_POLL_INTERVAL_SECONDS ?? 2) || 2
  await Promise.all(
    batch.messages.map((message) =>
      batch.queue === QPU_DEAD_LETTER_QUEUE_NAME
        ? handleDeadLetter(message, { port })
        : handleQpuMessage(message, {
            port,
            openAccount: (tenantId, ref) => openAccount(env, tenantId, ref),
            enqueue: async (body, delaySeconds) => {
              if (!env.QPU_QUEUE) throw new Error('QPU_QUEUE is not bound')
              await env.QPU_QUEUE.send(body, { delaySeconds })
            },
            pollDelaySeconds,
          }),
    ),
  )
}
