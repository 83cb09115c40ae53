/**
 * The real-hardware part of a ReasoningJob object's SQLite storage (docs/quantum-selector.md): the
 * job's one QPU attempt (qpu-attempt.ts), the `real_qpu` reservation that pays for it, and when a
 * queue consumer last asked about it (the re-drive watchdog). Its own table beside JobStore's, so
 * a job that never asks for hardware has no row. Writes are synchronous: a transition and the due
 * work it implies commit together, before the object acts.
 */
import { z } from 'zod'
import { MeterGrantSchema } from '../../shared/metering/metering.schemas'
import { parseStoredRows, type StoredRow } from '../stored-rows'
import type { QpuAttempt } from './qpu-attempt'
import { QpuSubmissionSchema } from './quantum/qpu-queue'

const DDL = `CREATE TABLE IF NOT EXISTS qpu_attempt (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  attempt_json TEXT NOT NULL,
  grant_json TEXT NOT NULL,
  settled INTEGER NOT NULL DEFAULT 0,
  last_contact_at INTEGER NOT NULL
)`

const QpuOutcomeSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('completed'),
    providerJobId: z.string(),
    probabilities: z.array(z.tuple([z.number(), z.number()])),
    executedOn: z.enum(['qpu', 'simulator']),
    target: z.string(),
    costUsd: z.number().nullable(),
  }),
  z.object({
    kind: z.literal('failed'),
    providerJobId: z.string().nullable(),
    code: z.string(),
    message: z.string(),
  }),
])

const QpuAttemptSchema = z.object({
  attemptId: z.string(),
  status: z.enum(['prepared', 'submitting', 'submitted', 'outcome_unknown', 'finished', 'abandoned']),
  submission: QpuSubmissionSchema,
  lease: z.object({ token: z.string(), until: z.number() }).nullable(),
  providerJobId: z.string().nullable(),
  adopted: z.boolean(),
  reconciled: z.boolean(),
  unknownSince: z.number().nullable(),
  reconcileTries: z.int().min(0),
  outcome: QpuOutcomeSchema.nullable(),
  detail: z.string().nullable(),
})

const RowSchema = z.object({
  attempt_json: z.string(),
  grant_json: z.string(),
  settled: z.union([z.literal(0), z.literal(1)]),
  last_contact_at: z.number(),
})

/** A JSON column read back through its schema; a value that does not fit names the column. */
function storedJson<T extends z.ZodType>(schema: T, text: string, column: string): z.infer<T> {
  const parsed = schema.safeParse(JSON.parse(text))
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new Error(
      `stored qpu_attempt.${column} does not fit its schema: ${issue?.path.join('.')}: ${issue?.message}`,
    )
  }
  return parsed.data
}

export interface QpuRecord {
  readonly attempt: QpuAttempt
  readonly grant: z.infer<typeof MeterGrantSchema>
  readonly settled: boolean
  readonly lastContactAt: number
}

export class QpuStore {
  constructor(private readonly sql: SqlStorage) {}

  migrate(): void {
    this.sql.exec(DDL)
  }

  record(): QpuRecord | null {
    const [row] = parseStoredRows(
      RowSchema,
      this.sql.exec<StoredRow>(`SELECT * FROM qpu_attempt WHERE id = 1`).toArray(),
      'qpu_attempt',
    )
    if (!row) return null
    return {
      attempt: storedJson(QpuAttemptSchema, row.attempt_json, 'attempt_json') as QpuAttempt,
      grant: storedJson(MeterGrantSchema, row.grant_json, 'grant_json'),
      settled: row.settled === 1,
      lastContactAt: row.last_contact_at,
    }
  }

  /**
   * The attempt and the reservation that pays for it, stored once (a second call changes nothing);
   * no message sent yet (last contact 0: the first dispatch sends at once).
   */
  create(attempt: QpuAttempt, grant: z.infer<typeof MeterGrantSchema>): void {
    this.sql.exec(
      `INSERT OR IGNORE INTO qpu_attempt (id, attempt_json, grant_json, last_contact_at) VALUES (1, ?, ?, 0)`,
      JSON.stringify(attempt),
      JSON.stringify(grant),
    )
  }

  /** The next dispatch sends a message at once (an adopted attempt must be polled now). */
  sendSoon(): void {
    this.sql.exec(`UPDATE qpu_attempt SET last_contact_at = 0 WHERE id = 1`)
  }

  saveAttempt(attempt: QpuAttempt): void {
    this.sql.exec(`UPDATE qpu_attempt SET attempt_json = ? WHERE id = 1`, JSON.stringify(attempt))
  }

  /** A consumer asked about the attempt: the messages are alive, no re-drive is needed yet. */
  touch(now: number): void {
    this.sql.exec(`UPDATE qpu_attempt SET last_contact_at = ? WHERE id = 1`, now)
  }

  markSettled(): void {
    this.sql.exec(`UPDATE qpu_attempt SET settled = 1 WHERE id = 1`)
  }
}
