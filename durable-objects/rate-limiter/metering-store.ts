/**
 * Where the RateLimiter object keeps the system of record: Postgres (`tenant_balances`,
 * `usage_ledger`). The object calls it off the request path only: once when it starts (load the
 * period's balance), and from its alarm (flush a batch of ledger rows, re-read the balance).
 *
 * flushLedger is idempotent, because alarms are at-least-once: in one transaction it inserts the
 * batch with `ON CONFLICT (tenant_id, request_id) DO NOTHING` and adds to the balance only what
 * was actually inserted (a data-modifying CTE's RETURNING). Replaying a batch changes nothing.
 * A request id reused by the caller (a different row under an id already recorded) is kept
 * under `<id>~<epoch ms>`, so it is billed too.
 * Both calls first roll the balance row over to the current calendar month when needed, so rows
 * of a new month are never added to the previous month's totals.
 */
import { sql } from 'drizzle-orm'
import { type DatabaseEnv, type Drizzle, openDatabase } from '../../shared/db/client'
import { type KeySpendQuery, storedKeySpendUnits } from '../../shared/metering/key-spend'
import type {
  BalanceRow,
  LedgerEntry,
  MeteringMode,
  StoredBalance,
} from '../../shared/metering/metering.schemas'
import { CREDIT_UNITS_PER_CENT, centsToUnits, unitsToCents } from '../../shared/metering/pricing'
import type { BillingPlan, PlanCatalog } from '../../shared/plans/plan-catalog'
import { billingPeriodAt } from './billing-period'

export interface MeteringStore {
  /** The balance for the period containing `now` (created or rolled over if needed), with per-model tokens. */
  loadBalance(tenantId: string, plan: BillingPlan, now: number): Promise<StoredBalance>
  /** Re-reads the balance row (credits bought, usage credits switched on, cap changed elsewhere). */
  readBalance(tenantId: string, plan: BillingPlan, now: number): Promise<BalanceRow>
  /** A key's spend at list price since `since` (shared/metering/key-spend.ts), in credit units. */
  loadKeySpend(query: KeySpendQuery, catalog: PlanCatalog): Promise<number>
  /** Writes a batch of ledger rows; for live rows, returns the balance after adding them. */
  flushLedger(
    tenantId: string,
    mode: MeteringMode,
    entries: readonly LedgerEntry[],
    plan: BillingPlan,
    now: number,
  ): Promise<BalanceRow | null>
}

/** Rows per INSERT statement (one JSON parameter). */
export const FLUSH_BATCH_SIZE = 500

interface BalanceQueryRow extends Record<string, unknown> {
  period_start: string | Date
  tokens_used: string | number
  credits_balance_cents: string
  overage_cents: string
  usage_credits_enabled: boolean
  spend_cap_cents: number | null
}

function toBalanceRow(row: BalanceQueryRow | undefined, tenantId: string): BalanceRow {
  if (!row) throw new Error(`tenant_balances has no row for tenant ${tenantId}`)
  return {
    periodStart: new Date(row.period_start).getTime(),
    tokensUsed: Number(row.tokens_used),
    creditsUnits: centsToUnits(row.credits_balance_cents),
    overageUnits: centsToUnits(row.overage_cents),
    usageCreditsEnabled: row.usage_credits_enabled,
    spendCapCents: row.spend_cap_cents === null ? null : Number(row.spend_cap_cents),
  }
}

const BALANCE_COLUMNS = sql.raw(
  'period_start, tokens_used, credits_balance_cents::text as credits_balance_cents, overage_cents::text as overage_cents, usage_credits_enabled, spend_cap_cents',
)

/** Creates the tenant's balance row, or rolls it over to the current month; idempotent. */
async function ensurePeriod(db: Drizzle, tenantId: string, plan: BillingPlan, now: number): Promise<void> {
  const period = billingPeriodAt(now)
  const start = new Date(period.start).toISOString()
  const included = unitsToCents(plan.includedCreditsCents * CREDIT_UNITS_PER_CENT)
  await db.execute(sql`
    insert into tenant_balances (tenant_id, period_start, credits_balance_cents)
    values (${tenantId}::uuid, ${start}::timestamptz, ${included}::numeric)
    on conflict (tenant_id) do update set
      period_start = excluded.period_start,
      tokens_used = 0,
      overage_cents = 0,
      credits_balance_cents = greatest(tenant_balances.credits_balance_cents, excluded.credits_balance_cents),
      updated_at = now()
    where tenant_balances.period_start < excluded.period_start`)
}

async function selectBalance(db: Drizzle, tenantId: string): Promise<BalanceRow> {
  const result = await db.execute<BalanceQueryRow>(
    sql`select ${BALANCE_COLUMNS} from tenant_balances where tenant_id = ${tenantId}::uuid`,
  )
  return toBalanceRow(result.rows[0], tenantId)
}

export async function loadBalance(
  db: Drizzle,
  tenantId: string,
  plan: BillingPlan,
  now: number,
): Promise<StoredBalance> {
  await ensurePeriod(db, tenantId, plan, now)
  const balance = await selectBalance(db, tenantId)
  // Per resource, in its unit: tokens for a model, the tool's units for a paid tool.
  const perResource = await db.execute<{ model: string; used: string }>(sql`
    select model,
      sum(case when unit = 'tokens' then prompt_tokens + completion_tokens else quantity end)::text as used
    from usage_ledger
    where tenant_id = ${tenantId}::uuid and mode = 'live' and created_at >= ${new Date(balance.periodStart).toISOString()}::timestamptz
    group by model`)
  const resourceUse: Record<string, number> = {}
  for (const row of perResource.rows) resourceUse[row.model] = Number(row.used)
  return { ...balance, resourceUse }
}

export async function readBalance(
  db: Drizzle,
  tenantId: string,
  plan: BillingPlan,
  now: number,
): Promise<BalanceRow> {
  await ensurePeriod(db, tenantId, plan, now)
  return selectBalance(db, tenantId)
}

export async function flushLedger(
  db: Drizzle,
  tenantId: string,
  mode: MeteringMode,
  entries: readonly LedgerEntry[],
  plan: BillingPlan,
  now: number,
): Promise<BalanceRow | null> {
  if (entries.length > FLUSH_BATCH_SIZE) throw new Error(`at most ${FLUSH_BATCH_SIZE} rows per flush`)
  // The whole batch is one JSON parameter (an array of row arrays), unpacked by Postgres: a few
  // hundred rows of 17 columns as bind parameters would cost the worker a query of thousands of
  // placeholders to build and the server thousands of parameters to parse.
  const rows = JSON.stringify(
    entries.map((e) => [
      e.requestId,
      e.principal,
      e.mode,
      e.endpoint,
      e.model,
      e.provider,
      e.promptTokens,
      e.completionTokens,
      e.cachedTokens,
      e.reasoningTokens,
      unitsToCents(e.creditsUnits),
      e.estimated,
      new Date(e.createdAt).toISOString(),
      e.unit,
      e.quantity,
      e.status,
      e.latencyMs,
    ]),
  )
  // `inserted`: new rows. `reused`: a row whose request id is already in the ledger with another
  // time is a different request that reused the id (the caller chooses x-request-id): it is
  // recorded as `<id>~<epoch ms>`. A row with the same id and time is this batch being replayed
  // (alarms are at-least-once) and changes nothing. Only rows inserted now reach the balance.
  const write = sql`
    batch as (
      select ${tenantId}::uuid as tenant_id, r ->> 0 as request_id, r ->> 1 as principal, r ->> 2 as mode,
        r ->> 3 as endpoint, r ->> 4 as model, r ->> 5 as provider, (r ->> 6)::int as prompt_tokens,
        (r ->> 7)::int as completion_tokens, (r ->> 8)::int as cached_tokens, (r ->> 9)::int as reasoning_tokens,
        (r ->> 10)::numeric as credits_cents, (r ->> 11)::boolean as estimated, (r ->> 12)::timestamptz as created_at,
        r ->> 13 as unit, (r ->> 14)::bigint as quantity, (r ->> 15)::int as status, (r ->> 16)::int as latency_ms
      from jsonb_array_elements(${rows}::jsonb) as r
    ),
    inserted as (
      insert into usage_ledger (tenant_id, request_id, principal, mode, endpoint, model, provider,
        prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, credits_cents, estimated, created_at,
        unit, quantity, status, latency_ms)
      select * from batch
      on conflict (tenant_id, request_id) do nothing
      returning prompt_tokens + completion_tokens as tokens, credits_cents, created_at
    ),
    reused as (
      insert into usage_ledger (tenant_id, request_id, principal, mode, endpoint, model, provider,
        prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, credits_cents, estimated, created_at,
        unit, quantity, status, latency_ms)
      select b.tenant_id, b.request_id || '~' || (extract(epoch from b.created_at) * 1000)::bigint::text,
        b.principal, b.mode, b.endpoint, b.model, b.provider, b.prompt_tokens, b.completion_tokens,
        b.cached_tokens, b.reasoning_tokens, b.credits_cents, b.estimated, b.created_at, b.unit, b.quantity,
        b.status, b.latency_ms
      from batch b
      join usage_ledger u on u.tenant_id = b.tenant_id and u.request_id = b.request_id
      where u.created_at <> b.created_at
      on conflict (tenant_id, request_id) do nothing
      returning prompt_tokens + completion_tokens as tokens, credits_cents, created_at
    ),
    added as (select * from inserted union all select * from reused)`
  if (entries.length === 0) return mode === 'test' ? null : readBalance(db, tenantId, plan, now)
  if (mode === 'test') {
    await db.execute(sql`with ${write} select count(*) from added`)
    return null
  }
  return db.transaction(async (tx) => {
    await ensurePeriod(tx as unknown as Drizzle, tenantId, plan, now)
    const result = await tx.execute<BalanceQueryRow>(sql`
      with ${write}
      update tenant_balances b set
        tokens_used = b.tokens_used + coalesce((select sum(tokens) from added where created_at >= b.period_start), 0),
        overage_cents = b.overage_cents + coalesce((select sum(credits_cents) from added where created_at >= b.period_start), 0),
        credits_balance_cents = b.credits_balance_cents - coalesce((select sum(credits_cents) from added), 0),
        updated_at = now()
      where b.tenant_id = ${tenantId}::uuid
      returning ${BALANCE_COLUMNS}`)
    return toBalanceRow(result.rows[0], tenantId)
  })
}

/** The store over the worker's database configuration; one short-lived pool per call. */
export function postgresMeteringStore(env: DatabaseEnv): MeteringStore {
  const withDb = async <T>(work: (db: Drizzle) => Promise<T>): Promise<T> => {
    const database = openDatabase(env, { max: 1 })
    try {
      return await work(database.db)
    } finally {
      await database.close()
    }
  }
  return {
    loadBalance: (tenantId, plan, now) => withDb((db) => loadBalance(db, tenantId, plan, now)),
    readBalance: (tenantId, plan, now) => withDb((db) => readBalance(db, tenantId, plan, now)),
    flushLedger: (tenantId, mode, entries, plan, now) =>
      withDb((db) => flushLedger(db, tenantId, mode, entries, plan, now)),
    loadKeySpend: (query, catalog) => withDb((db) => storedKeySpendUnits(db, query, catalog)),
  }
}
