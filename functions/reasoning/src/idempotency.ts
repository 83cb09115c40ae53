/**
 * Which request creates a job (docs/reasoning-jobs.md, "Idempotency"). The first request with an
 * `Idempotency-Key` claims it: in one Postgres transaction, under a transaction-scoped advisory
 * lock on (tenant, mode, key), it finds no row, checks the queue limit of the tenant's mode
 * (under a second lock on the tenant and mode, so two new keys cannot both take the last place),
 * and inserts the key row naming a new job id. Keys, like jobs, are per mode: a key used in test
 * mode is unused in live mode. Every later request with that key finds the row: the same request (same hash of the
 * canonical body) replays it (the job id, answered 200 with the job as it is now), a different
 * one is refused (409 idempotency_key_reused). The row's primary key (tenant, mode, key) backs the lock:
 * two rows for one key cannot exist whatever happens.
 *
 * Creating the job's object happens after the commit, by the winner and by every replay alike
 * (the object's create is idempotent per job id, and a replay carries the same request), so a
 * crash between the commit and the object leaves nothing a retry with the same key cannot finish.
 * Keys are kept 24 hours; an expired key is free again.
 */
import { sql } from 'drizzle-orm'
import { type JobCreateRequest, RUNNING_STATUSES } from '../../../durable-objects/reasoning-job/job.schemas'
import { canonicalJson, sha256Hex } from '../../../shared/crypto/digests'
import type { Drizzle } from '../../../shared/db/client'
import { AppError } from '../../../shared/http/errors'
import {
  type BillingPlan,
  buildUpgradeDecision,
  type PlanCatalog,
  upgradeHeaders,
} from '../../../shared/plans'
import { cheapestUpgrade } from '../../../shared/plans/plan-catalog'
import type { TenantScope } from '../../../shared/worker/request-context'

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key'
export const KEY_TTL_HOURS = 24
/** A claimed key whose job has not reached the index yet counts as queued for this long. */
const PENDING_CLAIM_SECONDS = 120
/** What a client is told to wait when the queue is full. */
const QUEUE_RETRY_AFTER_SECONDS = 30

export type KeyClaim =
  | { readonly kind: 'new'; readonly jobId: string }
  | { readonly kind: 'replay'; readonly jobId: string }

/** The header's value, checked: 16 to 160 characters of visible ASCII. */
export function idempotencyKeyOf(value: string | undefined): string {
  if (value === undefined || value === '') {
    throw new AppError(
      400,
      'missing_idempotency_key',
      `The ${IDEMPOTENCY_KEY_HEADER} header is required: send a unique value of 16 to 160 characters (a UUID works) with each new job, and the same value when you retry it.`,
      { param: IDEMPOTENCY_KEY_HEADER },
    )
  }
  if (value.length < 16 || value.length > 160 || !/^[\x21-\x7e]+$/.test(value)) {
    throw new AppError(
      400,
      'invalid_idempotency_key',
      `The ${IDEMPOTENCY_KEY_HEADER} header must be 16 to 160 visible ASCII characters (got ${value.length} characters${/^[\x21-\x7e]*$/.test(value) ? '' : ' including spaces or other characters'}).`,
      { param: IDEMPOTENCY_KEY_HEADER },
    )
  }
  return value
}

/**
 * SHA-256 of the request as it was understood (absent optional fields = null), and of the key
 * mode: a test key replaying a live key's request is a different request.
 */
export function requestHash(request: JobCreateRequest, mode: 'live' | 'test'): string {
  const canonical = canonicalJson({
    mode,
    prompt: request.prompt,
    model: request.model,
    product: request.product,
    provider_connection_id: request.provider_connection_id ?? null,
    workspace_id: request.workspace_id ?? null,
  })
  return `sha256:${sha256Hex(canonical)}`
}

function queueFull(plan: BillingPlan, catalog: PlanCatalog, used: number, mode: string): AppError {
  const limit = plan.reasoningQueueLimit
  const decision = buildUpgradeDecision({
    reason: 'rate_limited',
    plan,
    requiredPlan: cheapestUpgrade(plan, (p) => p.reasoningQueueLimit > limit, catalog),
    bindingLimit: {
      kind: 'requests',
      unit: 'requests',
      used,
      limit,
      remaining: 0,
      resets_at: null,
      retry_after_seconds: QUEUE_RETRY_AFTER_SECONDS,
    },
    catalog,
  })
  return new AppError(
    429,
    'rate_limited',
    `Your workspace has ${used} ${mode}-mode reasoning jobs queued or running, the ${plan.name} plan's limit (${limit}). Wait for one to finish (retry in ${QUEUE_RETRY_AFTER_SECONDS} s), cancel a queued one, or upgrade for a longer queue.`,
    { headers: upgradeHeaders(decision), extraBody: { svc_upgrade: decision } },
  )
}

export async function claimIdempotencyKey(
  db: Drizzle,
  input: {
    readonly scope: TenantScope
    readonly key: string
    readonly requestHash: string
    readonly plan: BillingPlan
    readonly catalog: PlanCatalog
  },
): Promise<KeyClaim> {
  const { key } = input
  const { tenantId, mode } = input.scope
  return db.transaction(async (tx) => {
    await tx.execute(
      sql`select pg_advisory_xact_lock(hashtextextended(${`reasoning-key:${tenantId}:${mode}:${key}`}, 0))`,
    )
    const found = await tx.execute<{ request_hash: string; job_id: string }>(sql`
      select request_hash, job_id from reasoning_idempotency_keys
      where tenant_id = ${tenantId}::uuid and mode = ${mode} and key = ${key}
        and created_at > now() - make_interval(hours => ${KEY_TTL_HOURS})`)
    const row = found.rows[0]
    if (row) {
      if (row.request_hash !== input.requestHash) {
        throw new AppError(
          409,
          'idempotency_key_reused',
          `This ${IDEMPOTENCY_KEY_HEADER} was already used for a different request (job ${row.job_id}). Send the original request to get that job, or use a new key for a new job.`,
          { param: IDEMPOTENCY_KEY_HEADER },
        )
      }
      return { kind: 'replay', jobId: row.job_id }
    }
    await tx.execute(
      sql`select pg_advisory_xact_lock(hashtextextended(${`reasoning-queue:${tenantId}:${mode}`}, 0))`,
    )
    await tx.execute(sql`
      delete from reasoning_idempotency_keys
      where tenant_id = ${tenantId}::uuid and mode = ${mode} and created_at <= now() - make_interval(hours => ${KEY_TTL_HOURS})`)
    const running = ['queued', ...RUNNING_STATUSES]
    const counted = await tx.execute<{ n: string }>(sql`
      select (
        select count(*) from reasoning_jobs
        where tenant_id = ${tenantId}::uuid and mode = ${mode} and status in (${sql.join(
          running.map((s) => sql`${s}`),
          sql`, `,
        )})
      ) + (
        select count(*) from reasoning_idempotency_keys k
        where k.tenant_id = ${tenantId}::uuid and k.mode = ${mode}
          and k.created_at > now() - make_interval(secs => ${PENDING_CLAIM_SECONDS})
          and not exists (select 1 from reasoning_jobs j where j.id = k.job_id)
      ) as n`)
    const used = Number(counted.rows[0]?.n ?? 0)
    if (used >= input.plan.reasoningQueueLimit) throw queueFull(input.plan, input.catalog, used, mode)
    const jobId = crypto.randomUUID()
    await tx.execute(sql`
      insert into reasoning_idempotency_keys (tenant_id, mode, key, request_hash, job_id, response_status)
      values (${tenantId}::uuid, ${mode}, ${key}, ${input.requestHash}, ${jobId}::uuid, 202)`)
    return { kind: 'new', jobId }
  })
}

/** Frees a key whose job could not be created (refused by metering): the client may reuse it. */
export async function releaseIdempotencyKey(
  db: Drizzle,
  scope: TenantScope,
  key: string,
  jobId: string,
): Promise<void> {
  await db.execute(sql`
    delete from reasoning_idempotency_keys
    where tenant_id = ${scope.tenantId}::uuid and mode = ${scope.mode} and key = ${key} and job_id = ${jobId}::uuid
      and not exists (select 1 from reasoning_jobs j where j.id = ${jobId}::uuid)`)
}
