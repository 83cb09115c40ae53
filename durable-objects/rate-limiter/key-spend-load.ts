/**
 * What the RateLimiter keeps of keys' spend limits in its storage, and how it reads a key's spend
 * back (docs/plans.md, "Per-key limits"; the decisions are key-account.ts):
 *
 *   key_reservations  the worst case each admitted request of a spend-limited key reserved, written
 *                     in the acquire's own event (durable before the grant leaves, by the output
 *                     gate) and deleted with the request's ledger row, so a restart keeps them.
 *   loadKeySpend      the key's spend in the current period: the object's rows of the key not yet
 *                     marked flushed (and those in the group being written), plus Postgres' other
 *                     rows of the key (the two sets exclude each other, so a flush in progress is
 *                     counted once); then the reservations still open.
 */
import { type KeySpendQuery, listCostUnits } from '../../shared/metering/key-spend'
import type { KeyLimitInput, LedgerEntry, MeteringMode } from '../../shared/metering/metering.schemas'
import { spendPeriodAt } from '../../shared/metering/spend-period'
import type { PlanCatalog } from '../../shared/plans/plan-catalog'
import type { KeyAccounts } from './key-account'
import { readLedgerRow } from './metering-check'

export function createKeyReservationsTable(sql: SqlStorage): void {
  sql.exec(`create table if not exists key_reservations (
    reservation_id text primary key,
    key_id text not null,
    cost_units integer not null,
    at integer not null)`)
}

export function recordKeyReservation(
  sql: SqlStorage,
  reservation: { reservationId: string; keyId: string; costUnits: number; at: number },
): void {
  sql.exec(
    `insert or ignore into key_reservations (reservation_id, key_id, cost_units, at) values (?, ?, ?, ?)`,
    reservation.reservationId,
    reservation.keyId,
    reservation.costUnits,
    reservation.at,
  )
}

/** Reservations whose request settled (a JSON array of reservation ids, as writeLedger has it). */
export function forgetKeyReservations(sql: SqlStorage, reservationIdsJson: string): void {
  sql.exec(
    `delete from key_reservations where reservation_id in (select value from json_each(?))`,
    reservationIdsJson,
  )
}

export function pruneKeyReservations(sql: SqlStorage, before: number): void {
  sql.exec(`delete from key_reservations where at < ?`, before)
}

export interface KeySpendSource {
  readonly sql: SqlStorage
  /** Postgres' rows of the key; null without a database (test mode then counts its own rows only). */
  readonly loadStored: ((query: KeySpendQuery, catalog: PlanCatalog) => Promise<number>) | null
  /** Rows settled in memory whose write is still forming (writeInGroup). */
  readonly pending: readonly LedgerEntry[]
  readonly scope: { readonly tenantId: string; readonly mode: MeteringMode }
  readonly catalog: PlanCatalog
  /** Reservations older than this are no longer held (their request is gone). */
  readonly reservationTtlMs: number
}

/** Loads the key's spend in the current period of its limit into its account; throws when it cannot. */
export async function loadKeySpend(
  source: KeySpendSource,
  accounts: KeyAccounts,
  key: KeyLimitInput,
  now: number,
): Promise<void> {
  if (key.period === undefined) return
  const current = spendPeriodAt(key.period, now)
  const principal = `key:${key.keyId}`
  const local = source.sql
    .exec(
      `select * from ledger where flushed = 0 and principal = ? and created_at >= ?`,
      principal,
      current.start,
    )
    .toArray()
    .map((row) => readLedgerRow(row).entry)
    .concat(source.pending.filter((e) => e.principal === principal && e.createdAt >= current.start))
  let spent = 0
  for (const entry of local) spent += listCostUnits(source.catalog, entry)
  if (source.loadStored) {
    spent += await source.loadStored(
      {
        tenantId: source.scope.tenantId,
        mode: source.scope.mode,
        keyId: key.keyId,
        since: current.start,
        excludeRequestIds: local.map((e) => e.requestId),
      },
      source.catalog,
    )
  } else if (source.scope.mode === 'live') {
    throw new Error("DATABASE_URL is not set, so the key's spend cannot be loaded")
  }
  accounts.account(key.keyId).loadSpend(current, spent)
  // Requests admitted before a restart that have not settled yet still hold their worst case.
  const open = source.sql.exec<{ reservation_id: string; cost_units: number; at: number }>(
    `select reservation_id, cost_units, at from key_reservations where key_id = ? and at > ?
       and reservation_id not in (select reservation_id from ledger)`,
    key.keyId,
    now - source.reservationTtlMs,
  )
  for (const row of open) accounts.restoreReservation(key.keyId, row.reservation_id, row.cost_units, row.at)
}
