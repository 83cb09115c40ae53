/**
 * The SQLite storage of one ReasoningRunQueue object: one row per job that entered the workspace's
 * queue, in arrival order (`seq`), with its state:
 *
 *   waiting ──(a slot is free: promote)──▶ running ──(the job ended: release)──▶ released
 *      └──────────────────────(cancelled while waiting: release)─────────────────────┘
 *
 * A released row is kept a day as a tombstone, so an enqueue that was in flight when its job ended
 * cannot put the job back in line. `contact_at` is when a running job is next told it has its slot
 * (at once after a promotion, then as a watchdog, in case the job's own release was lost). Calls are
 * synchronous: a promotion and the contact it implies commit together, before any job is called.
 */
import { z } from 'zod'
import { parseStoredRows, type StoredRow } from '../stored-rows'

export const SCHEMA_VERSION = 1

const DDL = [
  `CREATE TABLE IF NOT EXISTS schema_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS entries (
    job_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    seq INTEGER NOT NULL UNIQUE,
    state TEXT NOT NULL CHECK (state IN ('waiting', 'running', 'released')),
    enqueued_at INTEGER NOT NULL,
    started_at INTEGER,
    released_at INTEGER,
    contact_at INTEGER
  )`,
  `CREATE INDEX IF NOT EXISTS entries_state_seq ON entries (state, seq)`,
]

export const ENTRY_STATES = ['waiting', 'running', 'released'] as const
export type EntryState = (typeof ENTRY_STATES)[number]

const EntryRowSchema = z.object({
  job_id: z.string(),
  holder: z.string(),
  seq: z.int().min(1),
  state: z.enum(ENTRY_STATES),
  enqueued_at: z.number(),
  started_at: z.number().nullable(),
  released_at: z.number().nullable(),
  contact_at: z.number().nullable(),
})
export type EntryRow = z.infer<typeof EntryRowSchema>

/** Slots before any job said what its plan allows (replaced by the first enqueue). */
const DEFAULT_SLOTS = 1

export class RunQueueStore {
  constructor(private readonly sql: SqlStorage) {}

  migrate(): void {
    for (const statement of DDL) this.sql.exec(statement)
    const stored = this.sql
      .exec<{ value: string }>(`SELECT value FROM schema_meta WHERE key = 'schema_version'`)
      .toArray()[0]
    if (stored && Number(stored.value) > SCHEMA_VERSION) {
      throw new Error(`storage schema ${stored.value} is newer than this code (${SCHEMA_VERSION})`)
    }
    this.sql.exec(
      `INSERT OR REPLACE INTO schema_meta (key, value) VALUES ('schema_version', ?)`,
      String(SCHEMA_VERSION),
    )
  }

  private setting(key: string): number | null {
    return (
      this.sql.exec<{ value: number }>(`SELECT value FROM settings WHERE key = ?`, key).toArray()[0]?.value ??
      null
    )
  }

  private setSetting(key: string, value: number): void {
    this.sql.exec(
      `INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      key,
      value,
    )
  }

  /** How many jobs may run at once: what the latest job to enqueue said its plan allows. */
  slots(): number {
    return this.setting('slots') ?? DEFAULT_SLOTS
  }

  setSlots(slots: number): void {
    this.setSetting('slots', slots)
  }

  entry(jobId: string): EntryRow | null {
    const rows = this.sql.exec<StoredRow>(`SELECT * FROM entries WHERE job_id = ?`, jobId).toArray()
    return parseStoredRows(EntryRowSchema, rows, 'entries')[0] ?? null
  }

  entries(state: EntryState): EntryRow[] {
    const rows = this.sql
      .exec<StoredRow>(`SELECT * FROM entries WHERE state = ? ORDER BY seq`, state)
      .toArray()
    return parseStoredRows(EntryRowSchema, rows, 'entries')
  }

  /** The next place in line: a counter, so a pruned row never lets a later job jump ahead. */
  private nextSeq(): number {
    const next = (this.setting('last_seq') ?? 0) + 1
    this.setSetting('last_seq', next)
    return next
  }

  /** A job joins the end of the line. */
  addWaiting(jobId: string, holder: string, now: number): void {
    this.sql.exec(
      `INSERT INTO entries (job_id, holder, seq, state, enqueued_at) VALUES (?, ?, ?, 'waiting', ?)`,
      jobId,
      holder,
      this.nextSeq(),
      now,
    )
  }

  /** A job that ended before it ever joined (its enqueue lost or still in flight): a tombstone. */
  addReleased(jobId: string, now: number): void {
    this.sql.exec(
      `INSERT INTO entries (job_id, holder, seq, state, enqueued_at, released_at) VALUES (?, '', ?, 'released', ?, ?)`,
      jobId,
      this.nextSeq(),
      now,
      now,
    )
  }

  markReleased(jobId: string, now: number): void {
    this.sql.exec(
      `UPDATE entries SET state = 'released', released_at = ?, contact_at = NULL WHERE job_id = ? AND state != 'released'`,
      now,
      jobId,
    )
  }

  /**
   * Fills the free slots with the longest-waiting jobs; each promoted job is due to be told at once.
   * Returns the promoted job ids, oldest first.
   */
  promote(now: number): string[] {
    const running = this.sql
      .exec<{ n: number }>(`SELECT count(*) AS n FROM entries WHERE state = 'running'`)
      .one().n
    const free = this.slots() - running
    if (free <= 0) return []
    const next = this.sql
      .exec<{ job_id: string }>(
        `SELECT job_id FROM entries WHERE state = 'waiting' ORDER BY seq LIMIT ?`,
        free,
      )
      .toArray()
      .map((r) => r.job_id)
    for (const jobId of next) {
      this.sql.exec(
        `UPDATE entries SET state = 'running', started_at = ?, contact_at = ? WHERE job_id = ?`,
        now,
        now,
        jobId,
      )
    }
    return next
  }

  setContact(jobId: string, at: number): void {
    this.sql.exec(`UPDATE entries SET contact_at = ? WHERE job_id = ? AND state = 'running'`, at, jobId)
  }

  /** Running jobs due to be told (or asked) about their slot at `now`. */
  dueContacts(now: number): EntryRow[] {
    const rows = this.sql
      .exec<StoredRow>(`SELECT * FROM entries WHERE state = 'running' AND contact_at <= ? ORDER BY seq`, now)
      .toArray()
    return parseStoredRows(EntryRowSchema, rows, 'entries')
  }

  /** The job's 1-based place among the waiting jobs, or null when it is not waiting. */
  position(jobId: string): number | null {
    const entry = this.entry(jobId)
    if (entry?.state !== 'waiting') return null
    return this.sql
      .exec<{ n: number }>(
        `SELECT count(*) AS n FROM entries WHERE state = 'waiting' AND seq <= ?`,
        entry.seq,
      )
      .one().n
  }

  positions(): Record<string, number> {
    return Object.fromEntries(this.entries('waiting').map((e, i) => [e.job_id, i + 1]))
  }

  /** Forgets tombstones released before `before`. */
  pruneReleased(before: number): void {
    this.sql.exec(`DELETE FROM entries WHERE state = 'released' AND released_at < ?`, before)
  }

  /** When the alarm must next run: the earliest contact, or the earliest tombstone to forget. */
  nextWakeAt(tombstoneMs: number): number | null {
    const row = this.sql
      .exec<{ contact: number | null; released: number | null }>(
        `SELECT (SELECT min(contact_at) FROM entries WHERE state = 'running') AS contact,
                (SELECT min(released_at) FROM entries WHERE state = 'released') AS released`,
      )
      .one()
    const times = [row.contact, row.released === null ? null : row.released + tombstoneMs].filter(
      (t): t is number => t !== null,
    )
    return times.length === 0 ? null : Math.min(...times)
  }
}
