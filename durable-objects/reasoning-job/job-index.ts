/**
 * The Postgres job index (`reasoning_jobs`): one row per job with its public record minus the
 * content, written by the job's object after each state change (the due work `record_sync`, below), read
 * by the reasoning worker for list pages and the queue limit (both per tenant and mode). A write carries the
 * record's version and never replaces a newer one, so retries and reordered writes are harmless.
 */
import { sql } from 'drizzle-orm'
import type { Drizzle } from '../../shared/db/client'
import { indexRetryDelayMs, writeIndex } from '../postgres-index'
import type { ReasoningJob } from './job.schemas'
import { type JobHost, RETRY_SIDE_WORK_MS } from './job-host'
import type { JobViews } from './job-view'

export interface IndexedJob {
  readonly tenantId: string
  /** The job's mode (its creator's): lists and the queue limit are per tenant and mode. */
  readonly mode: 'test' | 'live'
  readonly principal: string
  readonly product: string
  readonly recordVersion: number
  /** The public record without prompt, candidates and result. */
  readonly record: ReasoningJob
}

export async function writeJobIndex(db: Drizzle, job: IndexedJob): Promise<void> {
  const r = job.record
  await db.execute(sql`
    insert into reasoning_jobs (id, tenant_id, mode, principal, model, product, status, record, record_version, created_at, updated_at)
    values (${r.id}::uuid, ${job.tenantId}::uuid, ${job.mode}, ${job.principal}, ${r.model}, ${job.product}, ${r.status},
      ${JSON.stringify(r)}::jsonb, ${job.recordVersion}, ${r.created_at}::timestamptz, ${r.updated_at}::timestamptz)
    on conflict (id) do update set
      status = excluded.status, record = excluded.record, record_version = excluded.record_version,
      updated_at = excluded.updated_at
    where reasoning_jobs.record_version < excluded.record_version and reasoning_jobs.tenant_id = excluded.tenant_id`)
}

/** How long a failed index write waits: it backs off as the row lags behind the job. */
export function indexRetryDelay(host: Pick<JobHost, 'store' | 'now'>): number {
  const job = host.store.job()
  return job ? indexRetryDelayMs(host.now(), job.updated_at) : RETRY_SIDE_WORK_MS
}

/** record_sync: writes the record to the index; done (unscheduled) when the stored version is in. */
export async function syncJobRecord(host: JobHost, views: JobViews): Promise<void> {
  const { store } = host
  const job = store.job()
  if (!job) {
    store.unschedule('record_sync')
    return
  }
  const record = await views.view(job, false)
  const written = await writeIndex(
    host.workerEnv,
    { event: 'reasoning_index_write_failed', ref: { job_id: job.job_id } },
    (db) =>
      writeJobIndex(db, {
        tenantId: job.tenant_id,
        mode: job.test_mode ? 'test' : 'live',
        principal: job.principal,
        product: job.product,
        recordVersion: job.record_version,
        record,
      }),
  )
  if (!written) {
    store.schedule('record_sync', host.now() + indexRetryDelay(host))
    return
  }
  if (store.job()?.record_version === job.record_version) store.unschedule('record_sync')
  else store.schedule('record_sync', host.now())
}
