/**
 * GET /svc/quantum-reasoning/jobs: pages of the tenant's jobs from the Postgres index, newest
 * first, with the caller's capabilities.
 *
 * Order and cursor: (created_at, id) descending, a key no job ever changes; the cursor is the last
 * job's key, opaque (base64url), and the next page is what comes strictly after it. So pages never
 * repeat or skip a job that existed when the first page was read, however many jobs are created
 * meanwhile (new jobs sort before the first page). Filters (`status`, `model`) apply per page.
 */
import { sql } from 'drizzle-orm'
import {
  type JobCapabilities,
  type JobStatus,
  REASONING_MODELS,
  type ReasoningJob,
  ReasoningJobSchema,
  type ReasoningModel,
} from '../../../durable-objects/reasoning-job/job.schemas'
import { canManageJobs } from '../../../durable-objects/reasoning-job/reasoning-job.do'
import type { Drizzle } from '../../../shared/db/client'
import { AppError } from '../../../shared/http/errors'
import { CREDIT_UNITS_PER_CENT, centsToUnits } from '../../../shared/metering'
import type { BillingPlan } from '../../../shared/plans'
import type { Identity } from '../../../shared/worker/request-context'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

interface CursorKey {
  readonly createdAt: string
  readonly id: string
}

export function encodeCursor(job: Pick<ReasoningJob, 'created_at' | 'id'>): string {
  const bytes = new TextEncoder().encode(`${job.created_at}|${job.id}`)
  return btoa(String.fromCharCode(...bytes))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '')
}

export function decodeCursor(cursor: string): CursorKey {
  const invalid = () =>
    new AppError(
      400,
      'invalid_cursor',
      'cursor is not a cursor this API returned; pass the next_cursor of the previous page unchanged, or omit it for the first page.',
      { param: 'cursor' },
    )
  let text: string
  try {
    text = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'))
  } catch {
    throw invalid()
  }
  const [createdAt, id, ...rest] = text.split('|')
  if (rest.length > 0 || !createdAt || !id || !UUID.test(id) || Number.isNaN(Date.parse(createdAt)))
    throw invalid()
  return { createdAt, id }
}

export interface JobPageQuery {
  readonly limit: number
  readonly cursor?: string | undefined
  readonly status?: JobStatus | undefined
  readonly model?: ReasoningModel | undefined
}

export async function readJobPage(
  db: Drizzle,
  tenantId: string,
  query: JobPageQuery,
): Promise<{ jobs: ReasoningJob[]; nextCursor: string | null }> {
  const after = query.cursor ? decodeCursor(query.cursor) : null
  const result = await db.execute<{ record: unknown }>(sql`
    select record from reasoning_jobs
    where tenant_id = ${tenantId}::uuid
      ${query.status ? sql`and status = ${query.status}` : sql``}
      ${query.model ? sql`and model = ${query.model}` : sql``}
      ${after ? sql`and (created_at, id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)` : sql``}
    order by created_at desc, id desc
    limit ${query.limit + 1}`)
  const rows = result.rows.map((row) => {
    const record = typeof row.record === 'string' ? JSON.parse(row.record) : row.record
    return ReasoningJobSchema.parse(record)
  })
  const jobs = rows.slice(0, query.limit)
  const last = jobs.at(-1)
  return { jobs, nextCursor: rows.length > query.limit && last ? encodeCursor(last) : null }
}

/**
 * What the caller can do, from the plan (models, real hardware), the ledger (this period's credits:
 * spent and what is left of the balance, in credits = US cents) and the caller's role.
 */
export async function readCapabilities(
  db: Drizzle,
  identity: Identity,
  plan: BillingPlan,
): Promise<JobCapabilities> {
  const balance = await db.execute<{ overage_cents: string; credits_balance_cents: string }>(sql`
    select overage_cents::text as overage_cents, credits_balance_cents::text as credits_balance_cents
    from tenant_balances where tenant_id = ${identity.tenantId}::uuid`)
  const row = balance.rows[0]
  const usedUnits = row ? centsToUnits(row.overage_cents) : 0
  const remainingUnits = row ? Math.max(0, centsToUnits(row.credits_balance_cents)) : 0
  const toCredits = (units: number) => Math.round((units / CREDIT_UNITS_PER_CENT) * 1e4) / 1e4
  const realEnabled = plan.features.includes('real_qpu')
  const manager = canManageJobs(identity.role)
  return {
    allowed_models: REASONING_MODELS.filter((m) => plan.models.includes(m)),
    real_enabled: realEnabled,
    allowance_credits: toCredits(usedUnits + remainingUnits),
    used_credits: toCredits(usedUnits),
    remaining_credits: toCredits(remainingUnits),
    workspace_role: identity.role,
    can_run_real: realEnabled && manager,
    can_manage_jobs: manager,
  }
}
