/**
 * GET /svc/quantum-reasoning/jobs: pages of the jobs of the caller's tenant and mode from the
 * Postgres index, newest first, with the caller's capabilities.
 *
 * Order and cursor: (created_at, id) descending, a key no job ever changes (shared/db/page-cursor.ts).
 * Filters (`status`, `model`) apply per page.
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
import { canManageJobs } from '../../../durable-objects/reasoning-job/job-calls'
import type { Drizzle } from '../../../shared/db/client'
import { decodePageCursor, encodePageCursor } from '../../../shared/db/page-cursor'
import { CREDIT_UNITS_PER_CENT, centsToUnits } from '../../../shared/metering'
import type { BillingPlan } from '../../../shared/plans'
import type { Identity, TenantScope } from '../../../shared/worker/request-context'

export interface JobPageQuery {
  readonly limit: number
  readonly cursor?: string | undefined
  readonly status?: JobStatus | undefined
  readonly model?: ReasoningModel | undefined
}

export async function readJobPage(
  db: Drizzle,
  scope: TenantScope,
  query: JobPageQuery,
): Promise<{ jobs: ReasoningJob[]; nextCursor: string | null }> {
  const after = query.cursor ? decodePageCursor(query.cursor, 'cursor') : null
  const result = await db.execute<{ record: unknown }>(sql`
    select record from reasoning_jobs
    where tenant_id = ${scope.tenantId}::uuid and mode = ${scope.mode}
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
  return {
    jobs,
    nextCursor:
      rows.length > query.limit && last
        ? encodePageCursor({ createdAt: last.created_at, id: last.id })
        : null,
  }
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
