/**
 * The QPU queue consumer (docs/quantum-selector.md, "The queue"): for each message it asks the
 * job's object what the attempt needs (durable-objects/reasoning-job/quantum/qpu-queue.ts), then talks to the provider:
 *
 * - submit: look the attempt up at the provider by our metadata, create the provider job only if
 *   none exists, record its id on the job, then poll;
 * - poll: read the provider job; terminal → results (or the failure) to the job; not yet → a new
 *   `poll` message after POLL_DELAY (the original is acknowledged, so polling a slow QPU never
 *   spends the retry budget);
 * - provider trouble (429 with Retry-After, 5xx, network): the message is retried with backoff;
 *   after `max_retries` (wrangler.toml) it lands on the dead-letter queue, whose consumer ends the
 *   attempt (`qpuUnreachable`): classical fallback, reservation released;
 * - a create whose answer was lost: the job's object is told (`outcome_unknown`) and reconciles
 *   from its alarm; the message is acknowledged, never resent blindly;
 * - a permanent refusal (credentials, validation): the attempt fails with the provider's reason.
 */
import { openQpuProvider } from '../../../durable-objects/reasoning-job/quantum/providers/ionq-v03'
import {
  isTerminalProviderStatus,
  type ProviderAccount,
  type QpuProvider,
  QpuProviderError,
} from '../../../durable-objects/reasoning-job/quantum/providers/qpu-provider'
import {
  type QpuAccountRef,
  type QpuJobPort,
  type QpuQueueMessage,
  QpuQueueMessageSchema,
} from '../../../durable-objects/reasoning-job/quantum/qpu-queue'
import { errorFields, log } from '../../../shared/worker/log'

/** What the consumer needs from a queue message (Cloudflare's `Message`). */
export interface QueuedMessage {
  readonly body: unknown
  readonly attempts: number
  ack(): void
  retry(options?: { delaySeconds?: number }): void
}

export interface QpuConsumerDeps {
  /** The job's object. */
  port(message: QpuQueueMessage): QpuJobPort
  /** The account of the attempt (managed: the platform's; connection: the tenant's), or null if gone. */
  openAccount(tenantId: string, ref: QpuAccountRef): Promise<ProviderAccount | null>
  provider?(account: ProviderAccount): QpuProvider
  /** Sends a message to the QPU queue after `delaySeconds`. */
  enqueue(message: QpuQueueMessage, delaySeconds: number): Promise<void>
  /** Seconds between polls of a running provider job. */
  readonly pollDelaySeconds: number
  /** Longest backoff of a retried message (default 60). */
  readonly maxRetryDelaySeconds?: number
}

/** Backoff of a retried message: 2, 4, 8 … 60 s (`max`), or the provider's Retry-After when longer. */
export function retryDelaySeconds(attempts: number, retryAfterMs?: number, max = 60): number {
  const backoff = Math.min(max, 2 ** Math.max(1, attempts))
  return Math.max(backoff, Math.ceil((retryAfterMs ?? 0) / 1000))
}

export async function handleQpuMessage(message: QueuedMessage, deps: QpuConsumerDeps): Promise<void> {
  const parsed = QpuQueueMessageSchema.safeParse(message.body)
  if (!parsed.success) {
    // Not ours to retry: a malformed message would only come back malformed.
    log('error', 'qpu_message_invalid', { detail: parsed.error.issues[0]?.message })
    message.ack()
    return
  }
  const msg = parsed.data
  const port = deps.port(msg)
  let claim: Awaited<ReturnType<QpuJobPort['qpuClaim']>>
  try {
    claim = await port.qpuClaim(msg.attempt_id)
  } catch (err) {
    log('info', 'qpu_job_unreachable', { job_id: msg.job_id, ...errorFields(err) })
    message.retry({ delaySeconds: retryDelaySeconds(message.attempts, undefined, deps.maxRetryDelaySeconds) })
    return
  }
  if (claim.kind === 'done') return message.ack()
  if (claim.kind === 'busy') {
    // A duplicate while another delivery submits: come back when its lease ends, without spending
    // this message's retries (a duplicate must never reach the dead-letter queue).
    await deps.enqueue(msg, Math.max(1, Math.ceil(claim.retryAfterMs / 1000)))
    return message.ack()
  }

  const ref = claim.kind === 'submit' ? claim.submission.account : claim.account
  const account = await deps.openAccount(msg.tenant_id, ref)
  if (!account) {
    await port.qpuUnreachable(
      msg.attempt_id,
      ref.kind === 'managed'
        ? 'no managed QPU provider is configured on this deployment (QPU_IONQ_BASE_URL, QPU_IONQ_API_KEY)'
        : `the provider connection ${ref.connection_id} no longer exists in this workspace`,
    )
    return message.ack()
  }
  const provider = deps.provider ? deps.provider(account) : openQpuProvider(account)
  let providerJobId: string
  try {
    if (claim.kind === 'submit') {
      const { submission } = claim
      const found = await provider.findByMetadata(submission.metadata, submission.since - 60_000)
      if (found) {
        providerJobId = found.id
        log('info', 'qpu_job_adopted', {
          job_id: msg.job_id,
          attempt: msg.attempt_id,
          provider_job_id: found.id,
        })
      } else {
        try {
          providerJobId = (
            await provider.submit({
              name: submission.name,
              circuit: submission.circuit,
              target: account.target,
              shots: submission.shots,
              metadata: submission.metadata,
            })
          ).id
        } catch (err) {
          if (err instanceof QpuProviderError && err.kind === 'outcome_unknown') {
            await port.qpuOutcomeUnknown(msg.attempt_id, claim.token, err.message)
            return message.ack()
          }
          throw err
        }
      }
      await port.qpuSubmitted(msg.attempt_id, claim.token, providerJobId, Boolean(found))
    } else {
      providerJobId = claim.providerJobId
    }
    const job = await provider.get(providerJobId)
    if (!isTerminalProviderStatus(job.status)) {
      await deps.enqueue({ ...msg, kind: 'poll' }, deps.pollDelaySeconds)
      return message.ack()
    }
    if (job.status === 'completed') {
      const result = await provider.results(providerJobId)
      await port.qpuFinished(msg.attempt_id, claim.token, {
        kind: 'completed',
        providerJobId,
        probabilities: [...result.probabilities.entries()],
        executedOn: job.executedOn ?? (job.target.startsWith('qpu') ? 'qpu' : 'simulator'),
        target: job.target,
        costUsd: job.costUsd,
      })
    } else {
      await port.qpuFinished(msg.attempt_id, claim.token, {
        kind: 'failed',
        providerJobId,
        code: job.failure?.code ?? job.status,
        message: job.failure?.message ?? `the provider job was ${job.status}`,
      })
    }
    message.ack()
  } catch (err) {
    if (
      err instanceof QpuProviderError &&
      (err.kind === 'credentials' || err.kind === 'rejected' || err.kind === 'not_found')
    ) {
      await port.qpuFinished(msg.attempt_id, claim.token, {
        kind: 'failed',
        providerJobId: null,
        code: `provider_${err.kind}`,
        message: err.message,
      })
      return message.ack()
    }
    const retryAfter = err instanceof QpuProviderError ? err.details.retryAfterMs : undefined
    if (claim.kind === 'submit') await port.qpuRelease(msg.attempt_id, claim.token).catch(() => {})
    log('info', 'qpu_attempt_retry', {
      job_id: msg.job_id,
      attempt: msg.attempt_id,
      tries: message.attempts,
      ...errorFields(err),
    })
    message.retry({
      delaySeconds: retryDelaySeconds(message.attempts, retryAfter, deps.maxRetryDelaySeconds),
    })
  }
}

/** The dead-letter queue's consumer: the retry budget is spent, the attempt ends. */
export async function handleDeadLetter(
  message: QueuedMessage,
  deps: Pick<QpuConsumerDeps, 'port'>,
): Promise<void> {
  const parsed = QpuQueueMessageSchema.safeParse(message.body)
  if (!parsed.success) return message.ack()
  try {
    await deps
      .port(parsed.data)
      .qpuUnreachable(
        parsed.data.attempt_id,
        `the provider stayed unreachable through every retry of the QPU queue`,
      )
    message.ack()
  } catch {
    message.retry({ delaySeconds: 30 })
  }
}
