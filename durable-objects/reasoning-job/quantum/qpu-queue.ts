/**
 * The QPU dispatch queue between a ReasoningJob object (producer) and the reasoning worker's queue
 * consumer (docs/quantum-selector.md, "The queue"): one message shape, and the RPC surface the
 * consumer uses on the job's object. Queues deliver at least once, so a message only names an
 * attempt; what to do with it is decided by the object, which holds the attempt's state:
 *
 *   claim  → submit (with a lease: one submitter at a time) | poll (provider job known) | busy | done
 *   submit → the consumer first looks the attempt up at the provider by our metadata, and creates
 *            the provider job only when none exists: a second delivery, or a retry after a lost
 *            answer, never makes a second provider job for one attempt.
 */
import { z } from 'zod'
import { IonqCircuitSchema } from './ionq-circuit'

export const QpuQueueMessageSchema = z
  .object({
    v: z.literal(1),
    /** submit: start (or resume) the attempt; poll: check the provider job again. */
    kind: z.enum(['submit', 'poll']),
    tenant_id: z.uuid(),
    job_id: z.uuid(),
    attempt_id: z.string().min(1).max(100),
  })
  .strict()
export type QpuQueueMessage = z.infer<typeof QpuQueueMessageSchema>

/** Which account runs the attempt: the platform's (managed_qpu) or a tenant connection (byopa_managed). */
export const QpuAccountRefSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('managed') }).strict(),
  z.object({ kind: z.literal('connection'), connection_id: z.uuid() }).strict(),
])
export type QpuAccountRef = z.infer<typeof QpuAccountRefSchema>

export const QpuSubmissionSchema = z
  .object({
    name: z.string(),
    circuit: IonqCircuitSchema,
    shots: z.int().min(1),
    account: QpuAccountRefSchema,
    metadata: z.object({ svc_job_id: z.string(), svc_attempt: z.string() }).strict(),
    /** When the attempt was first handed to a consumer (ms): the lookup searches from here. */
    since: z.number(),
  })
  .strict()
export type QpuSubmission = z.infer<typeof QpuSubmissionSchema>

export type QpuClaim =
  | { readonly kind: 'submit'; readonly token: string; readonly submission: QpuSubmission }
  | {
      readonly kind: 'poll'
      readonly token: string
      readonly providerJobId: string
      readonly account: QpuAccountRef
    }
  /** Another delivery holds the lease: try again after `retryAfterMs`. */
  | { readonly kind: 'busy'; readonly retryAfterMs: number }
  /** Finished, cancelled or superseded: acknowledge the message. */
  | { readonly kind: 'done' }

export type QpuOutcome =
  | {
      readonly kind: 'completed'
      readonly providerJobId: string
      /** [basis-state integer, probability] pairs as the provider returned them. */
      readonly probabilities: readonly (readonly [number, number])[]
      readonly executedOn: 'qpu' | 'simulator'
      readonly target: string
      readonly costUsd: number | null
    }
  | {
      readonly kind: 'failed'
      readonly providerJobId: string | null
      readonly code: string
      readonly message: string
    }

/** The ReasoningJob object's side of the queue (its RPC methods). */
export interface QpuJobPort {
  qpuClaim(attemptId: string): Promise<QpuClaim>
  /** The provider job exists (created, or found by metadata: `adopted`). */
  qpuSubmitted(attemptId: string, token: string, providerJobId: string, adopted: boolean): Promise<void>
  /** The submitter hit a transient error and gives its lease back (the next delivery submits). */
  qpuRelease(attemptId: string, token: string): Promise<void>
  /** A create may have reached the provider and no answer came back: the object reconciles. */
  qpuOutcomeUnknown(attemptId: string, token: string, detail: string): Promise<void>
  qpuFinished(attemptId: string, token: string, outcome: QpuOutcome): Promise<void>
  /** The provider cannot be used for this attempt (not configured, connection gone, retries spent). */
  qpuUnreachable(attemptId: string, detail: string): Promise<void>
}
