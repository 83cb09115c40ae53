/**
 * The rows of a key's usage statement: every request the key settled in the period, each exactly
 * once, although a settled request lives first in the tenant's RateLimiter object (acknowledged,
 * durable) and reaches Postgres' usage_ledger only when the object's alarm flushes it (within
 * RATE_LIMIT_LEDGER_FLUSH_MS, later when Postgres is down).
 *
 * How (decision): read the object's unflushed rows of the key first, then Postgres, and merge.
 * The object marks a row flushed only after Postgres committed it, so a row is in the first read,
 * or committed before the second read began, or both (a flush between the reads): never in
 * neither. Both is resolved by the row's identity, (request id, settle instant): Postgres keeps a
 * request id reused by its caller as `<id>~<epoch ms>`, so that suffix is taken off first. The
 * alternative, asking the object to flush before reading, writes to Postgres on a read, races
 * with the object's own alarm, and fails whenever Postgres does; this read needs neither.
 */
import { and, asc, eq, gte, lt, type SQL } from 'drizzle-orm'
import type { Drizzle } from '../../../shared/db/client'
import { usageLedger } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { LedgerEntry, MeteringMode } from '../../../shared/metering/metering.schemas'
import type { RateLimiterNamespace } from '../../../shared/metering/metering-client'
import { centsToUnits } from '../../../shared/metering/pricing'
import type { SpendPeriod } from '../../../shared/metering/spend-period'
import type { UsageStatement } from './usage-statement.schemas'

/** Most rows one statement holds; a key with more in the period asks for a shorter one. */
export const MAX_STATEMENT_ROWS = 10_000

/** One settled request, from either source. */
export interface SettledRequest {
  readonly requestId: string
  /** Epoch ms of the settle (the ledger's created_at). */
  readonly createdAt: number
  readonly endpoint: string
  readonly model: string
  readonly unit: string
  readonly quantity: number
  readonly promptTokens: number
  readonly completionTokens: number
  /** 1e-6 USD (shared/metering/pricing.ts). */
  readonly creditsUnits: number
  readonly status: number | null
  readonly estimated: boolean
}

export function fromObject(e: LedgerEntry): SettledRequest {
  return {
    requestId: e.requestId,
    createdAt: e.createdAt,
    endpoint: e.endpoint,
    model: e.model,
    unit: e.unit,
    quantity: e.quantity,
    promptTokens: e.promptTokens,
    completionTokens: e.completionTokens,
    creditsUnits: e.creditsUnits,
    status: e.status,
    estimated: e.estimated,
  }
}

/** A request's identity across both stores: its request id as the object wrote it, and its settle instant. */
function identityOf(row: SettledRequest): string {
  const renamed = `~${row.createdAt}`
  const id = row.requestId.endsWith(renamed) ? row.requestId.slice(0, -renamed.length) : row.requestId
  return `${row.createdAt}\u0000${id}`
}

/**
 * The object's rows (read first) and Postgres' rows (read second) as one list, each request once,
 * oldest first. A request in both is taken as Postgres has it (its id as the ledger keeps it).
 */
export function mergeSettled(
  object: readonly SettledRequest[],
  postgres: readonly SettledRequest[],
): SettledRequest[] {
  const byIdentity = new Map<string, SettledRequest>()
  for (const row of object) byIdentity.set(identityOf(row), row)
  for (const row of postgres) byIdentity.set(identityOf(row), row)
  return [...byIdentity.values()].sort(
    (a, b) =>
      a.createdAt - b.createdAt || (a.requestId < b.requestId ? -1 : a.requestId > b.requestId ? 1 : 0),
  )
}

function tooLarge(period: SpendPeriod): AppError {
  return new AppError(
    422,
    'usage_statement_too_large',
    `This key settled more than ${MAX_STATEMENT_ROWS} requests in the ${period.kind} asked for; ask for a shorter period (period=day or period=week, with at= to pick one).`,
    { param: 'period' },
  )
}

export interface StatementScope {
  readonly tenantId: string
  readonly mode: MeteringMode
  readonly keyId: string
}

/** Every request of the key settled in `period` (before `until`), each once, oldest first. */
export async function settledRequests(
  db: Drizzle,
  limiters: RateLimiterNamespace,
  scope: StatementScope,
  period: SpendPeriod,
  until: number,
): Promise<SettledRequest[]> {
  const principal = `key:${scope.keyId}`
  const to = Math.min(period.end ?? until + 1, until + 1)
  // First the object (see the header: the order is what makes the merge exact).
  const limiter = limiters.get(limiters.idFromName(`${scope.tenantId}:${scope.mode}`))
  const unflushed = await limiter.unflushedUsage({
    tenantId: scope.tenantId,
    mode: scope.mode,
    principal,
    from: period.start,
    to,
  })
  const where: SQL[] = [
    eq(usageLedger.tenantId, scope.tenantId),
    eq(usageLedger.mode, scope.mode),
    eq(usageLedger.principal, principal),
    gte(usageLedger.createdAt, new Date(period.start)),
    lt(usageLedger.createdAt, new Date(to)),
  ]
  const stored = await db
    .select({
      requestId: usageLedger.requestId,
      createdAt: usageLedger.createdAt,
      endpoint: usageLedger.endpoint,
      model: usageLedger.model,
      unit: usageLedger.unit,
      quantity: usageLedger.quantity,
      promptTokens: usageLedger.promptTokens,
      completionTokens: usageLedger.completionTokens,
      creditsCents: usageLedger.creditsCents,
      status: usageLedger.status,
      estimated: usageLedger.estimated,
    })
    .from(usageLedger)
    .where(and(...where))
    .orderBy(asc(usageLedger.createdAt))
    .limit(MAX_STATEMENT_ROWS + 1)
  if (stored.length > MAX_STATEMENT_ROWS) throw tooLarge(period)
  const merged = mergeSettled(
    unflushed.map(fromObject),
    stored.map(({ creditsCents, createdAt, ...r }) => ({
      ...r,
      createdAt: createdAt.getTime(),
      creditsUnits: centsToUnits(creditsCents),
    })),
  )
  if (merged.length > MAX_STATEMENT_ROWS) throw tooLarge(period)
  return merged
}

/** 1e-6 USD units → "12.345678". */
export function usdOf(units: number): string {
  return `${Math.floor(units / 1_000_000)}.${String(units % 1_000_000).padStart(6, '0')}`
}

/** The agent run or reasoning job a ledger request id names (the ids their objects meter under). */
function resourceOf(requestId: string): UsageStatement['rows'][number]['resource'] {
  const [prefix, id] = requestId.split(':')
  if (!id) return null
  if (prefix === 'agent-turn' || prefix === 'agent-search') return { type: 'agent_run', id }
  if (prefix === 'reasoning-job') return { type: 'reasoning_job', id }
  return null
}

export function statementRows(requests: readonly SettledRequest[]): Pick<UsageStatement, 'rows' | 'totals'> {
  let prompt = 0
  let completion = 0
  let units = 0
  const rows = requests.map((r) => {
    prompt += r.promptTokens
    completion += r.completionTokens
    units += r.creditsUnits
    return {
      request_id: r.requestId,
      resource: resourceOf(r.requestId),
      endpoint: r.endpoint,
      model: r.model,
      unit: r.unit,
      quantity: r.quantity,
      prompt_tokens: r.promptTokens,
      completion_tokens: r.completionTokens,
      cost_usd: usdOf(r.creditsUnits),
      status: r.status,
      estimated: r.estimated,
      created_at: new Date(r.createdAt).toISOString(),
    }
  })
  return {
    rows,
    totals: {
      requests: rows.length,
      prompt_tokens: prompt,
      completion_tokens: completion,
      cost_usd: usdOf(units),
    },
  }
}
