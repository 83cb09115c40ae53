/**
 * The RateLimiter object's per-request inputs: every settle that reaches it, the lease returns,
 * and every ledger row it reads back to flush. They are checked by the validators generated from
 * their schemas (scripts/generate-validators.ts): inside workerd zod cannot compile its parsers and
 * its generic path cost the object tens of microseconds per metered request. The schemas transform
 * nothing, so a value the generated check accepts is what the schema would return; anything else
 * goes to the schema, which decides and words the failure (metering-check.test.ts).
 */
import {
  type LeaseReturnInput,
  LeaseReturnsSchema,
  type LedgerEntry,
  LedgerEntrySchema,
  SettleBatchSchema,
  type SettleInput,
} from '../../shared/metering/metering.schemas'
import { isLeaseReturns, isLedgerEntry, isSettleBatch } from './metering.validator.generated'

type Obj = Record<string, unknown>

/** A settle batch as SettleBatchSchema returns it; throws its error for anything else. */
export function readSettleBatch(raw: unknown): SettleInput[] {
  if (isSettleBatch(raw)) return raw as SettleInput[]
  return SettleBatchSchema.parse(raw)
}

/** Lease returns as LeaseReturnsSchema returns them; throws its error for anything else. */
export function readLeaseReturns(raw: unknown): LeaseReturnInput[] {
  if (isLeaseReturns(raw)) return raw as LeaseReturnInput[]
  return LeaseReturnsSchema.parse(raw)
}

/** One row of the object's `ledger` table as SQLite returns it. */
export interface StoredLedgerRow {
  readonly seq: number
  readonly entry: LedgerEntry
}

/**
 * A ledger row read back from storage. Rows that do not hold what the object writes (a damaged
 * or hand-edited database) fail LedgerEntrySchema, whose error names the column.
 */
export function readLedgerRow(row: Obj): StoredLedgerRow {
  if (typeof row.seq !== 'number') throw new Error(`ledger row without a numeric seq: ${String(row.seq)}`)
  const entry = {
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
    status: row.status ?? null,
    latencyMs: row.latency_ms ?? null,
  }
  return {
    seq: row.seq,
    entry: isLedgerEntry(entry) ? (entry as LedgerEntry) : LedgerEntrySchema.parse(entry),
  }
}
