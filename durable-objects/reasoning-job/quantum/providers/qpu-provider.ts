/**
 * The contract between the job logic and a QPU provider (docs/quantum-selector.md, "Provider
 * adapter contract"). The job logic (the ReasoningJob object, the queue consumer) only uses this
 * interface; an adapter turns it into one provider's HTTPS API (ionq-v03.ts). A second provider
 * (IBM Runtime, Braket) is a second adapter and a `kind` in the provider connection, nothing else.
 *
 * What every adapter guarantees:
 * - `submit` creates exactly one provider job per call and puts `metadata` (our job id and attempt
 *   id) on it, so `findByMetadata` can find the job again when the answer to `submit` was lost.
 * - Every method either returns the provider's answer or throws a `QpuProviderError` whose `kind`
 *   tells the caller what to do: `retryable` (429, 5xx, network; `retryAfterMs` when the provider
 *   said), `outcome_unknown` (the request may have reached the provider, the answer did not come
 *   back: never resend blindly, look the job up by metadata), `credentials` (401/403: the
 *   connection's key is wrong or lacks access; permanent), `rejected` (4xx: the request itself is
 *   wrong; permanent), `not_found`.
 * - `executedOn` reports what the provider says ran the job (`qpu` or `simulator`), which can
 *   differ from the target asked for; `null` until the provider says.
 * - Results are probabilities keyed by basis-state integer with qubit k in bit k (IonQ's order);
 *   an adapter for a provider with another order converts.
 * - Adapters never log or return the credential.
 */
import type { IonqCircuit } from '../ionq-circuit'

export const PROVIDER_KINDS = ['ionq'] as const
export type ProviderKind = (typeof PROVIDER_KINDS)[number]

export const PROVIDER_JOB_STATUSES = [
  'submitted',
  'ready',
  'running',
  'completed',
  'failed',
  'canceled',
] as const
export type ProviderJobStatus = (typeof PROVIDER_JOB_STATUSES)[number]

export function isTerminalProviderStatus(status: ProviderJobStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'canceled'
}

/** Our identifiers on a provider job (strings: providers keep metadata as strings). */
export interface QpuJobMetadata {
  readonly svc_job_id: string
  readonly svc_attempt: string
}

export interface QpuJobRequest {
  readonly name: string
  readonly circuit: IonqCircuit
  /** `simulator` or a QPU (`qpu.aria-1`, ...). */
  readonly target: string
  readonly shots: number
  readonly metadata: QpuJobMetadata
}

export interface ProviderJob {
  readonly id: string
  readonly status: ProviderJobStatus
  /** The target the provider reports for the job. */
  readonly target: string
  /** What ran it, as the provider reports; null before it ran. */
  readonly executedOn: 'qpu' | 'simulator' | null
  readonly failure: { readonly code: string; readonly message: string } | null
  readonly metadata: Readonly<Record<string, string>>
  /** Seconds since the epoch when the provider accepted it. */
  readonly createdAt: number | null
  readonly costUsd: number | null
}

export interface ProviderResult {
  /** Basis-state integer → probability (they sum to 1). */
  readonly probabilities: ReadonlyMap<number, number>
}

export type QpuErrorKind = 'retryable' | 'outcome_unknown' | 'credentials' | 'rejected' | 'not_found'

export class QpuProviderError extends Error {
  readonly kind: QpuErrorKind
  readonly details: { status?: number; code?: string; retryAfterMs?: number }
  constructor(kind: QpuErrorKind, message: string, details: QpuProviderError['details'] = {}) {
    super(message)
    this.name = 'QpuProviderError'
    this.kind = kind
    this.details = details
  }
}

export interface QpuProvider {
  readonly kind: ProviderKind
  submit(request: QpuJobRequest): Promise<ProviderJob>
  get(providerJobId: string): Promise<ProviderJob>
  results(providerJobId: string): Promise<ProviderResult>
  /** The job carrying exactly this metadata, searching jobs created since `since` (ms); null if none. */
  findByMetadata(metadata: QpuJobMetadata, since: number): Promise<ProviderJob | null>
  cancel(providerJobId: string): Promise<ProviderJob>
  /** Checks that the credential works (a cheap authenticated read); throws like the others. */
  verify(): Promise<void>
}

/** How to reach one provider account (the platform's own, or a tenant's connection). */
export interface ProviderAccount {
  readonly kind: ProviderKind
  readonly baseUrl: string
  readonly apiKey: string
  /** The QPU a real-hardware job targets (e.g. `qpu.aria-1`). */
  readonly target: string
}
