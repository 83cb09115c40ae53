/**
 * The Postgres job index (`reasoning_jobs`): one row per job with its public record minus the
 * content, written by the job's object after each state change (the due work `record_sync`), read
 * by the reasoning worker for list pages and the queue limit (both per tenant and mode). A write carries the
 * record's version and never replaces a newer one, so retries and reordered writes are harmless.
 */
import { sql } from 'drizzle-orm'
import type { Drizzle } from '../../shared/db/client'
import type { ReasoningJob } from './job.schemas'

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
