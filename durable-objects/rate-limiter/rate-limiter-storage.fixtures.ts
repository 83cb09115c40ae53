/**
 * What a RateLimiter keeps, read from its storage by tests, so the class needs no methods that only
 * tests call: inside the hosting worker through `runInDurableObject(stub, (_, state) =>
 * keptLedger(state.storage))`; from other workers' tests through the auxiliary metering worker's
 * subclass (test/support/metering-test-worker.ts).
 */
import type { LedgerEntry } from '../../shared/metering/metering.schemas'
import { readLedgerRow } from './metering-check'

/** The ledger rows the object keeps (unflushed, or flushed in the last ten minutes), oldest first. */
export function keptLedger(storage: DurableObjectStorage): LedgerEntry[] {
  return storage.sql
    .exec(`select * from ledger order by seq`)
    .toArray()
    .map((row) => readLedgerRow(row).entry)
}

/** Ledger rows not yet flushed to Postgres. */
export function unflushedCount(storage: DurableObjectStorage): number {
  return storage.sql.exec<{ n: number }>(`select count(*) as n from ledger where flushed = 0`).one().n
}

/** Requests checkpointed and not settled yet. */
export function openRequestCount(storage: DurableObjectStorage): number {
  return storage.sql.exec<{ n: number }>(`select count(*) as n from open_requests`).one().n
}
