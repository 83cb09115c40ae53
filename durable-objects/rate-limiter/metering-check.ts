/**
 * The RateLimiter object's per-request inputs checked by hand: every settle that reaches it and
 * every ledger row it reads back to flush. Inside workerd zod cannot compile its parsers (code
 * generation from strings is disallowed), and its generic path cost the object tens of
 * microseconds per metered request. Each check accepts a subset of what its schema accepts —
 * exactly the shape the metering client and the object's own storage produce, with no unknown
 * fields — and returns what the schema would; anything else goes to the schema, which decides and
 * words the failure (metering-check.test.ts holds both to the same answer).
 */
import {
  type LeaseReturnInput,
  LeaseReturnsSchema,
  type LedgerEntry,
  LedgerEntrySchema,
  MAX_SETTLE_BATCH,
  MeteredResourceSchema,
  SettleBatchSchema,
  type SettleInput,
  USAGE_UNITS,
} from '../../shared/metering/metering.schemas'

type Obj = Record<string, unknown>

const RESOURCES: ReadonlySet<unknown> = new Set(MeteredResourceSchema.options)
const UNITS: ReadonlySet<unknown> = new Set(USAGE_UNITS)
const GUID = /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$/

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0
const isText = (v: unknown, min: number, max: number): v is string =>
  typeof v === 'string' && v.length >= min && v.length <= max

const SETTLE_FIELDS: ReadonlySet<string> = new Set([
  'tenantId',
  'mode',
  'planId',
  'reservationId',
  'leaseId',
  'estimatedTokens',
  'requestId',
  'model',
  'endpoint',
  'principal',
  'provider',
  'usage',
  'estimated',
])
const USAGE_FIELDS: ReadonlySet<string> = new Set([
  'promptTokens',
  'completionTokens',
  'cachedTokens',
  'reasoningTokens',
  'quantity',
])

function onlyFields(o: Obj, fields: ReadonlySet<string>): boolean {
  for (const key in o) if (!fields.has(key)) return false
  return true
}

function usageOk(usage: unknown): boolean {
  if (usage === null) return true
  return (
    isObject(usage) &&
    onlyFields(usage, USAGE_FIELDS) &&
    isCount(usage.promptTokens) &&
    isCount(usage.completionTokens) &&
    isCount(usage.cachedTokens) &&
    isCount(usage.reasoningTokens) &&
    (!('quantity' in usage) || isCount(usage.quantity))
  )
}

/** SettleInputSchema by hand (true only for values it accepts and returns unchanged). */
export function looksLikeSettleInput(v: unknown): v is SettleInput {
  return (
    isObject(v) &&
    onlyFields(v, SETTLE_FIELDS) &&
    typeof v.tenantId === 'string' &&
    GUID.test(v.tenantId) &&
    (v.mode === 'live' || v.mode === 'test') &&
    isText(v.planId, 1, 64) &&
    isText(v.reservationId, 1, 64) &&
    (!('leaseId' in v) || isText(v.leaseId, 1, 64)) &&
    (!('estimatedTokens' in v) || isCount(v.estimatedTokens)) &&
    isText(v.requestId, 1, 200) &&
    RESOURCES.has(v.model) &&
    isText(v.endpoint, 1, 64) &&
    isText(v.principal, 1, 256) &&
    isText(v.provider, 1, 64) &&
    'usage' in v &&
    usageOk(v.usage) &&
    typeof v.estimated === 'boolean'
  )
}

/** A settle batch as SettleBatchSchema returns it; throws its error for anything else. */
export function readSettleBatch(raw: unknown): SettleInput[] {
  if (Array.isArray(raw) && raw.length <= MAX_SETTLE_BATCH && raw.every(looksLikeSettleInput)) return raw
  return SettleBatchSchema.parse(raw)
}

/** Lease returns as LeaseReturnsSchema returns them; throws its error for anything else. */
export function readLeaseReturns(raw: unknown): LeaseReturnInput[] {
  if (Array.isArray(raw) && raw.length === 0) return raw
  return LeaseReturnsSchema.parse(raw)
}

/** One row of the object's `ledger` table as SQLite returns it. */
export interface StoredLedgerRow {
  readonly seq: number
  readonly entry: LedgerEntry
}

const LEDGER_TEXT_COLUMNS = ['principal', 'endpoint', 'provider'] as const
const LEDGER_COUNT_COLUMNS = [
  'created_at',
  'prompt_tokens',
  'completion_tokens',
  'cached_tokens',
  'reasoning_tokens',
  'quantity',
  'credits_units',
] as const

/** The row as its ledger entry, when it holds what the object writes; null otherwise. */
function ledgerRowByHand(row: Obj): StoredLedgerRow | null {
  if (typeof row.seq !== 'number' || !isText(row.reservation_id, 1, 64) || !isText(row.request_id, 1, 200))
    return null
  if (row.mode !== 'live' && row.mode !== 'test') return null
  if (!RESOURCES.has(row.model) || !UNITS.has(row.unit) || (row.estimated !== 0 && row.estimated !== 1))
    return null
  for (const column of LEDGER_TEXT_COLUMNS) if (typeof row[column] !== 'string') return null
  for (const column of LEDGER_COUNT_COLUMNS) if (!isCount(row[column])) return null
  return {
    seq: row.seq,
    entry: {
      reservationId: row.reservation_id,
      requestId: row.request_id,
      createdAt: row.created_at as number,
      principal: row.principal as string,
      mode: row.mode,
      endpoint: row.endpoint as string,
      model: row.model as LedgerEntry['model'],
      provider: row.provider as string,
      promptTokens: row.prompt_tokens as number,
      completionTokens: row.completion_tokens as number,
      cachedTokens: row.cached_tokens as number,
      reasoningTokens: row.reasoning_tokens as number,
      unit: row.unit as LedgerEntry['unit'],
      quantity: row.quantity as number,
      creditsUnits: row.credits_units as number,
      estimated: row.estimated === 1,
    },
  }
}

/**
 * A ledger row read back from storage. Rows that do not hold what the object writes (a damaged
 * or hand-edited database) are validated by LedgerEntrySchema, whose error names the column.
 */
export function readLedgerRow(row: Obj): StoredLedgerRow {
  const byHand = ledgerRowByHand(row)
  if (byHand) return byHand
  if (typeof row.seq !== 'number') throw new Error(`ledger row without a numeric seq: ${String(row.seq)}`)
  return {
    seq: row.seq,
    entry: LedgerEntrySchema.parse({
      reservationId: row.reservation_id,
      requestId: row.request_id,
      createdAt: row.created_at,
      principal: row.principal,
      mode: row.mode,
      endpoint: row.endpoint,
      model: row.model,
      provider: row.provider,
      promptTokens: row.prompt_tokens,
      completionTokens: row.completion_tokens,
      cachedTokens: row.cached_tokens,
      reasoningTokens: row.reasoning_tokens,
      unit: row.unit,
      quantity: row.quantity,
      creditsUnits: row.credits_units,
      estimated: row.estimated === 1,
    }),
  }
}
