/**
 * The RPC protocol of a ReasoningJob object as the reasoning worker speaks it: who calls (tenant,
 * mode, principal, role), what a create carries, and the replies. Errors cross RPC as data, because
 * an AppError's class does not survive serialisation; the worker turns them back into AppErrors.
 */
import { AppError, type Refused } from '../../shared/http/errors'
import type { Identity, Mode } from '../../shared/worker/request-context'
import type { InferenceReceiptResponse } from './inference-receipt'
import type { JobCreateRequest, ReasoningJob as ReasoningJobRecord } from './job.schemas'
import type { JobRow } from './reasoning-job.store'

/** The object of a job: named by tenant and job id, so another tenant's id reaches an empty object. */
export function jobObjectName(tenantId: string, jobId: string): string {
  return `${tenantId}/${jobId}`
}

/**
 * Who asks: the job's tenant and mode must match (another mode's job is as absent as another
 * tenant's); the principal and role decide who may delete.
 */
export interface JobCaller {
  tenantId: string
  mode: Mode
  principal: string
  role: 'owner' | 'admin' | 'member'
}

export interface CreateJobCall {
  jobId: string
  identity: Identity
  request: JobCreateRequest
  /** The x-request-id of the request that created the job. */
  requestId: string
}

/** Errors cross RPC as data (an AppError's class does not survive serialisation). */

export type ReceiptReply = { ok: true; receipt: InferenceReceiptResponse } | Refused

export type JobReply = { ok: true; job: ReasoningJobRecord } | Refused

export function jobNotFound(): AppError {
  return new AppError(
    404,
    'job_not_found',
    'No reasoning job with this id exists in your workspace. Check the id (it is the `id` of the job the create request returned).',
    { param: 'jobId' },
  )
}

/** Whether the job is in the caller's tenant and mode: anything else is a job that does not exist. */
export function visibleTo(job: JobRow, caller: Pick<JobCaller, 'tenantId' | 'mode'>): boolean {
  return job.tenant_id === caller.tenantId && job.test_mode === (caller.mode === 'test')
}

/** Whether a caller may cancel or erase another member's job: owners and admins. */
export function canManageJobs(role: JobCaller['role']): boolean {
  return role === 'owner' || role === 'admin'
}
