/**
 * The RateLimiter object's SQLite storage: its tables and their migrations, and the statements
 * that write settled requests and checkpoints. The object decides what to write and when (group
 * commit, rate-limiter.do.ts); this module only knows how the rows are laid out.
 *
 *   meta            which tenant/mode/plan the object serves, the schema version
 *   ledger          metered requests (`flushed` once in Postgres, kept ten minutes more)
 *   open_requests   the last checkpoint of each request still running
 *   key_reservations  worst cases reserved against per-key spend limits (key-spend-load.ts)
 */
import type { LedgerEntry } from '../../shared/metering/metering.schemas'
import { createKeyReservationsTable, forgetKeyReservations } from './key-spend-load'

/** 2: tool units (unit, quantity); 3: status and latency; 4: key reservations. */
export const SCHEMA_VERSION = 4

/** Creates the tables on first use and migrates those of an older version. */
export function prepareStorage(sql: SqlStorage): void {
  sql.exec(`create table if not exists meta (key text primary key, value text not null)`)
  sql.exec(`create table if not exists ledger (
    seq integer primary key autoincrement,
    reservation_id text not null unique,
    request_id text not null,
    created_at integer not null,
    principal text not null,
    mode text not null,
    endpoint text not null,
    model text not null,
    provider text not null,
    prompt_tokens integer not null,
    completion_tokens integer not null,
    cached_tokens integer not null,
    reasoning_tokens integer not null,
    unit text not null default 'tokens',
    quantity integer not null default 0,
    credits_units integer not null,
    estimated integer not null,
    flushed integer not null default 0,
    status integer,
    latency_ms integer)`)
  sql.exec(`create index if not exists ledger_pending on ledger (flushed, seq)`)
  // The alarm deletes flushed rows older than ten minutes and a restart rebuilds the rate windows
  // from the last minutes: both by time, so without this index each scans every row kept.
  sql.exec(`create index if not exists ledger_created on ledger (created_at)`)
  createKeyReservationsTable(sql)
  sql.exec(`create table if not exists open_requests (
    reservation_id text primary key,
    settle_json text not null,
    updated_at integer not null)`)
  const version = sql
    .exec<{ value: string }>(`select value from meta where key = 'schema_version'`)
    .toArray()[0]
  if (version && Number(version.value) < 2) {
    // Version 1 metered tokens only: its rows are token rows, their quantity the tokens used.
    sql.exec(`alter table ledger add column unit text not null default 'tokens'`)
    sql.exec(`alter table ledger add column quantity integer not null default 0`)
    sql.exec(`update ledger set quantity = prompt_tokens + completion_tokens`)
  }
  if (version && Number(version.value) < 3) {
    // Rows stored before version 3 keep null: their status and latency were never measured.
    sql.exec(`alter table ledger add column status integer`)
    sql.exec(`alter table ledger add column latency_ms integer`)
  }
  sql.exec(`insert or replace into meta (key, value) values ('schema_version', ?)`, String(SCHEMA_VERSION))
}

/**
 * Appends settled rows in one statement (a reservation id already stored is ignored: a resent
 * settle), so a group of settles is one write.
 */
export function insertLedgerRows(sql: SqlStorage, entries: readonly LedgerEntry[]): void {
  if (entries.length === 0) return
  const rows = entries.map((e) => [
    e.reservationId,
    e.requestId,
    e.createdAt,
    e.principal,
    e.mode,
    e.endpoint,
    e.model,
    e.provider,
    e.promptTokens,
    e.completionTokens,
    e.cachedTokens,
    e.reasoningTokens,
    e.creditsUnits,
    e.estimated ? 1 : 0,
    e.unit,
    e.quantity,
    e.status,
    e.latencyMs,
  ])
  sql.exec(
    `insert or ignore into ledger (reservation_id, request_id, created_at, principal, mode, endpoint, model,
      provider, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, credits_units, estimated,
      unit, quantity, status, latency_ms)
     select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6,
       value ->> 7, value ->> 8, value ->> 9, value ->> 10, value ->> 11, value ->> 12, value ->> 13,
       value ->> 14, value ->> 15, value ->> 16, value ->> 17
     from json_each(?)`,
    JSON.stringify(rows),
  )
}

/** Requests that ended: their checkpoints and key reservations go (in the same write as their rows). */
export function closeRequests(sql: SqlStorage, reservationIds: readonly string[]): void {
  const settled = JSON.stringify(reservationIds)
  sql.exec(`delete from open_requests where reservation_id in (select value from json_each(?))`, settled)
  forgetKeyReservations(sql, settled)
}

/** Keeps the latest report of each running request (one statement for the group). */
export function upsertCheckpoints(
  sql: SqlStorage,
  checkpoints: ReadonlyMap<string, { json: string; at: number }>,
): void {
  if (checkpoints.size === 0) return
  sql.exec(
    `insert into open_requests (reservation_id, settle_json, updated_at)
     select value ->> 0, value ->> 1, value ->> 2 from json_each(?) where true
     on conflict (reservation_id) do update set settle_json = excluded.settle_json, updated_at = excluded.updated_at`,
    JSON.stringify([...checkpoints].map(([id, { json, at }]) => [id, json, at])),
  )
}
