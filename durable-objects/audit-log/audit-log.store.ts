/**
 * The SQLite storage of one AuditLog object. Every read goes through a zod row schema. All calls
 * are synchronous, so an append batch is one transaction and the object's output gate holds every
 * answer until it is durable.
 *
 * | table       | holds                                                                          |
 * |-------------|--------------------------------------------------------------------------------|
 * | meta        | schema version, the log's name, tenant and origin (fixed at its first append)   |
 * | entries     | index → the entry's canonical JSON (the Merkle leaf), kind, time, idempotency key |
 * | nodes       | (level, index) → hash of every perfect subtree (level 0 = leaf hashes)          |
 * | checkpoints | tree size → root hash, cosignature timestamp and the signed note as served       |
 * | self_tests  | the last crypto self-test report the object ran (platform log only)             |
 * | due_work    | what the single alarm must do and when (checkpoint, self_test)                  |
 */
import { z } from 'zod'
import type { PerfectNodes } from './merkle'

export const SCHEMA_VERSION = 1

const DDL = [
  `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS entries (
    idx INTEGER PRIMARY KEY,
    entry TEXT NOT NULL,
    kind TEXT NOT NULL,
    appended_at INTEGER NOT NULL,
    idempotency_key TEXT UNIQUE
  )`,
  `CREATE INDEX IF NOT EXISTS entries_kind_idx ON entries (kind, idx)`,
  `CREATE TABLE IF NOT EXISTS nodes (
    level INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    hash BLOB NOT NULL,
    PRIMARY KEY (level, idx)
  ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS checkpoints (
    size INTEGER PRIMARY KEY,
    root BLOB NOT NULL,
    timestamp INTEGER NOT NULL,
    note TEXT NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS self_tests (id INTEGER PRIMARY KEY CHECK (id = 1), report TEXT NOT NULL, ran_at INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS due_work (kind TEXT PRIMARY KEY, due_at INTEGER NOT NULL)`,
]

const bytes = z.instanceof(ArrayBuffer).transform((b): Uint8Array => new Uint8Array(b))

const EntryRowSchema = z.object({ idx: z.number().int().min(0), entry: z.string(), kind: z.string() })
export type EntryRow = z.infer<typeof EntryRowSchema>

const NodeRowSchema = z.object({ hash: bytes })

const CheckpointRowSchema = z.object({
  size: z.number().int().min(0),
  root: bytes,
  timestamp: z.number().int().min(0),
  note: z.string(),
})
export type CheckpointRow = z.infer<typeof CheckpointRowSchema>

export const DUE_WORK_KINDS = [
  /** entries were appended since the last checkpoint: sign one */
  'checkpoint',
  /** run the crypto self-tests and keep the report (platform log) */
  'self_test',
] as const
export type DueWorkKind = (typeof DUE_WORK_KINDS)[number]
const DueWorkRowSchema = z.object({ kind: z.enum(DUE_WORK_KINDS), due_at: z.number() })

const SelfTestRowSchema = z.object({ report: z.string(), ran_at: z.number() })

export const LogMetaSchema = z.object({
  name: z.string().min(1),
  tenantId: z.string().uuid().nullable(),
  origin: z.string().min(1),
})
export type LogMeta = z.infer<typeof LogMetaSchema>

type Row = Record<string, SqlStorageValue>

function parseRow<T extends z.ZodType>(schema: T, row: Row | undefined, table: string): z.infer<T> | null {
  if (row === undefined) return null
  const parsed = schema.safeParse(row)
  if (!parsed.success) throw new Error(`audit log storage: unreadable ${table} row: ${parsed.error.message}`)
  return parsed.data
}

export class MissingNodeError extends Error {}

export class AuditLogStore implements PerfectNodes {
  constructor(private readonly sql: SqlStorage) {
    for (const statement of DDL) this.sql.exec(statement)
    const version = this.metaValue('schema_version')
    if (version === null) this.setMeta('schema_version', String(SCHEMA_VERSION))
    else if (Number(version) !== SCHEMA_VERSION) {
      throw new Error(`audit log storage has schema version ${version}; this code reads ${SCHEMA_VERSION}`)
    }
  }

  private metaValue(key: string): string | null {
    const row = this.sql.exec(`SELECT value FROM meta WHERE key = ?`, key).toArray()[0]
    return row ? String(row.value) : null
  }

  private setMeta(key: string, value: string): void {
    this.sql.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, key, value)
  }

  meta(): LogMeta | null {
    const text = this.metaValue('log')
    if (text === null) return null
    return LogMetaSchema.parse(JSON.parse(text))
  }

  setLogMeta(meta: LogMeta): void {
    this.setMeta('log', JSON.stringify(LogMetaSchema.parse(meta)))
  }

  size(): number {
    const row = this.sql.exec(`SELECT COALESCE(MAX(idx) + 1, 0) AS size FROM entries`).toArray()[0]
    return Number(row?.size ?? 0)
  }

  indexForKey(key: string): number | null {
    const row = this.sql.exec(`SELECT idx FROM entries WHERE idempotency_key = ?`, key).toArray()[0]
    return row ? Number(row.idx) : null
  }

  insertEntry(index: number, entry: string, kind: string, appendedAt: number, key: string | null): void {
    this.sql.exec(
      `INSERT INTO entries (idx, entry, kind, appended_at, idempotency_key) VALUES (?, ?, ?, ?, ?)`,
      index,
      entry,
      kind,
      appendedAt,
      key,
    )
  }

  insertNode(level: number, index: number, hash: Uint8Array): void {
    this.sql.exec(`INSERT INTO nodes (level, idx, hash) VALUES (?, ?, ?)`, level, index, hash)
  }

  node(level: number, index: number): Uint8Array {
    const row = this.sql.exec(`SELECT hash FROM nodes WHERE level = ? AND idx = ?`, level, index).toArray()[0]
    const parsed = parseRow(NodeRowSchema, row, 'nodes')
    if (!parsed) throw new MissingNodeError(`audit log storage has no node (${level}, ${index})`)
    return parsed.hash
  }

  entries(start: number, end: number): EntryRow[] {
    return this.sql
      .exec(`SELECT idx, entry, kind FROM entries WHERE idx >= ? AND idx < ? ORDER BY idx`, start, end)
      .toArray()
      .map((row) => parseRow(EntryRowSchema, row, 'entries')!)
  }

  entriesOfKinds(kinds: readonly string[], before: number, limit: number): EntryRow[] {
    const marks = kinds.map(() => '?').join(', ')
    return this.sql
      .exec(
        `SELECT idx, entry, kind FROM entries WHERE kind IN (${marks}) AND idx < ? ORDER BY idx DESC LIMIT ?`,
        ...kinds,
        before,
        limit,
      )
      .toArray()
      .map((row) => parseRow(EntryRowSchema, row, 'entries')!)
  }

  latestCheckpoint(): CheckpointRow | null {
    const row = this.sql
      .exec(`SELECT size, root, timestamp, note FROM checkpoints ORDER BY size DESC LIMIT 1`)
      .toArray()[0]
    return parseRow(CheckpointRowSchema, row, 'checkpoints')
  }

  checkpointAt(size: number): CheckpointRow | null {
    const row = this.sql
      .exec(`SELECT size, root, timestamp, note FROM checkpoints WHERE size = ?`, size)
      .toArray()[0]
    return parseRow(CheckpointRowSchema, row, 'checkpoints')
  }

  saveCheckpoint(row: CheckpointRow): void {
    this.sql.exec(
      `INSERT OR REPLACE INTO checkpoints (size, root, timestamp, note) VALUES (?, ?, ?, ?)`,
      row.size,
      row.root,
      row.timestamp,
      row.note,
    )
  }

  selfTestReport(): { report: string; ranAt: number } | null {
    const row = parseRow(
      SelfTestRowSchema,
      this.sql.exec(`SELECT report, ran_at FROM self_tests`).toArray()[0],
      'self_tests',
    )
    return row ? { report: row.report, ranAt: row.ran_at } : null
  }

  saveSelfTestReport(report: string, ranAt: number): void {
    this.sql.exec(`INSERT OR REPLACE INTO self_tests (id, report, ran_at) VALUES (1, ?, ?)`, report, ranAt)
  }

  scheduleWork(kind: DueWorkKind, dueAt: number): void {
    this.sql.exec(
      `INSERT INTO due_work (kind, due_at) VALUES (?, ?) ON CONFLICT (kind) DO UPDATE SET due_at = MIN(due_at, excluded.due_at)`,
      kind,
      dueAt,
    )
  }

  dueWork(now: number): DueWorkKind[] {
    return this.sql
      .exec(`SELECT kind, due_at FROM due_work WHERE due_at <= ? ORDER BY due_at`, now)
      .toArray()
      .map((row) => parseRow(DueWorkRowSchema, row, 'due_work')!.kind)
  }

  completeWork(kind: DueWorkKind): void {
    this.sql.exec(`DELETE FROM due_work WHERE kind = ?`, kind)
  }

  nextDue(): number | null {
    const row = this.sql.exec(`SELECT MIN(due_at) AS due FROM due_work`).toArray()[0]
    return row?.due === null || row?.due === undefined ? null : Number(row.due)
  }
}
