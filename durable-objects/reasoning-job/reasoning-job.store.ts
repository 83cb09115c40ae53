/**
 * The SQLite storage of one ReasoningJob object (`ctx.storage.sql`). Reads go through zod row
 * schemas; calls are synchronous, so a state change and the due work it schedules commit together
 * (one implicit transaction per event), before anything is sent or called.
 *
 * | table      | holds                                                                          |
 * |------------|--------------------------------------------------------------------------------|
 * | job        | one row: owner, request, state machine fields, selection, metering, receipt   |
 * | content_key| one row: the job's data key, wrapped under a CONTENT_KEKS key (content-crypto) |
 * | content    | the job's sealed content: the prompt (AES-256-GCM under the data key)         |
 * | candidates | one row per generated candidate: sealed text, logprobs, usage, evidence        |
 * | verdicts   | one row per judge comparison (swarm_judge): the verdict and its usage          |
 * | receipt    | one row once the job finished: the signed inference receipt and its log entry |
 * | run_slot   | one row once the job asked its workspace's run queue: waiting, admitted, released |
 * | due_work   | what the single alarm must do and when                                         |
 *
 * The real-hardware attempt and its reservation live in their own table (qpu.store.ts).
 */
import { z } from 'zod'
import { type MeterGrant, MeterGrantSchema } from '../../shared/metering/metering.schemas'
import type { NormalizedUsage } from '../../shared/providers'
import type { Identity } from '../../shared/worker/request-context'
import { parseStoredRows, StoredIdentitySchema, type StoredRow, storedJson } from '../stored-rows'
import {
  type ReceiptEnvelope,
  ReceiptEnvelopeSchema,
  type ReceiptLogEntry,
  ReceiptLogEntrySchema,
  type ReceiptStatement,
  ReceiptStatementSchema,
} from './inference-receipt'
import {
  FALLBACK_REASONS,
  JOB_STATUSES,
  OUTCOME_STATES,
  REAL_REQUEST_STATUSES,
  REASONING_MODELS,
  REASONING_PRODUCTS,
} from './job.schemas'

/** 2: the run slot (run_slot, due work `release_slot`). */
export const SCHEMA_VERSION = 2

const DDL = [
  `CREATE TABLE IF NOT EXISTS schema_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS job (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    job_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    model TEXT NOT NULL,
    product TEXT NOT NULL,
    requested_real INTEGER NOT NULL,
    test_mode INTEGER NOT NULL,
    workspace_id TEXT,
    provider_connection_id TEXT,
    request_id TEXT NOT NULL,
    status TEXT NOT NULL,
    candidate_count INTEGER NOT NULL,
    attempt_count INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    next_attempt_at INTEGER,
    outcome_state TEXT NOT NULL,
    real_request_status TEXT NOT NULL,
    selected_index INTEGER,
    selector_backend TEXT,
    selector_confidence REAL,
    fallback_reason TEXT,
    error_json TEXT,
    quoted_units INTEGER NOT NULL,
    meter_json TEXT NOT NULL,
    settled INTEGER NOT NULL DEFAULT 0,
    receipt_id TEXT,
    erased_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    completed_at INTEGER,
    record_version INTEGER NOT NULL DEFAULT 1
  )`,
  `CREATE TABLE IF NOT EXISTS content_key (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    wrapped TEXT NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS content (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS candidates (
    idx INTEGER PRIMARY KEY,
    text TEXT NOT NULL,
    digest TEXT NOT NULL,
    logprobs_json TEXT,
    finish_reason TEXT,
    provider TEXT NOT NULL,
    usage_json TEXT NOT NULL,
    evidence_json TEXT,
    created_at INTEGER NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS verdicts (
    comparison TEXT PRIMARY KEY,
    first INTEGER NOT NULL,
    second INTEGER NOT NULL,
    verdict TEXT NOT NULL,
    valid INTEGER NOT NULL,
    provider TEXT NOT NULL,
    usage_json TEXT NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS receipt (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    receipt_id TEXT NOT NULL,
    statement_json TEXT NOT NULL,
    envelope_json TEXT,
    kid TEXT,
    log_json TEXT
  )`,
  `CREATE TABLE IF NOT EXISTS run_slot (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    state TEXT NOT NULL CHECK (state IN ('waiting', 'admitted', 'released')),
    updated_at INTEGER NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS due_work (
    kind TEXT PRIMARY KEY,
    due_at INTEGER NOT NULL
  )`,
]

const json = storedJson

const flag = z.union([z.literal(0), z.literal(1)]).transform((v) => v === 1)

export const UsageSchema = z.object({
  promptTokens: z.int().min(0),
  completionTokens: z.int().min(0),
  totalTokens: z.int().min(0),
  cachedTokens: z.int().min(0),
  reasoningTokens: z.int().min(0),
})

/** Who was admitted and the grant, to settle the job's metering after a restart. */
export const JobMeterSchema = z.object({ identity: StoredIdentitySchema, grant: MeterGrantSchema })
export interface JobMeter {
  identity: Identity
  grant: MeterGrant
}

export const JobRowSchema = z.object({
  job_id: z.string(),
  tenant_id: z.string(),
  principal: z.string(),
  model: z.enum(REASONING_MODELS),
  product: z.enum(REASONING_PRODUCTS),
  requested_real: flag,
  test_mode: flag,
  workspace_id: z.string().nullable(),
  provider_connection_id: z.string().nullable(),
  request_id: z.string(),
  status: z.enum(JOB_STATUSES),
  candidate_count: z.int().min(1),
  attempt_count: z.int().min(0),
  max_attempts: z.int().min(1),
  next_attempt_at: z.number().nullable(),
  outcome_state: z.enum(OUTCOME_STATES),
  real_request_status: z.enum(REAL_REQUEST_STATUSES),
  selected_index: z.int().min(0).nullable(),
  selector_backend: z.string().nullable(),
  selector_confidence: z.number().nullable(),
  fallback_reason: z.enum(FALLBACK_REASONS).nullable(),
  error_json: json(z.object({ code: z.string(), message: z.string() })).nullable(),
  quoted_units: z.int().min(0),
  meter_json: json(JobMeterSchema),
  settled: flag,
  receipt_id: z.string().nullable(),
  erased_at: z.number().nullable(),
  created_at: z.number(),
  updated_at: z.number(),
  completed_at: z.number().nullable(),
  record_version: z.int().min(1),
})
export type JobRow = z.infer<typeof JobRowSchema>

export const CandidateRowSchema = z.object({
  idx: z.int().min(0),
  text: z.string(),
  digest: z.string(),
  logprobs_json: json(z.array(z.number())).nullable(),
  finish_reason: z.string().nullable(),
  provider: z.string(),
  usage_json: json(UsageSchema),
  evidence_json: json(z.record(z.string(), z.unknown())).nullable(),
  created_at: z.number(),
})
export type CandidateRow = z.infer<typeof CandidateRowSchema>

export const VerdictRowSchema = z.object({
  comparison: z.string(),
  first: z.int().min(0),
  second: z.int().min(0),
  verdict: z.enum(['A', 'B', 'tie']),
  valid: flag,
  provider: z.string(),
  usage_json: json(UsageSchema),
})
export type VerdictRow = z.infer<typeof VerdictRowSchema>

export const ReceiptRowSchema = z.object({
  receipt_id: z.string(),
  statement_json: json(ReceiptStatementSchema),
  envelope_json: json(ReceiptEnvelopeSchema).nullable(),
  kid: z.string().nullable(),
  log_json: json(ReceiptLogEntrySchema).nullable(),
})
export type ReceiptRow = z.infer<typeof ReceiptRowSchema>

export const DUE_WORK_KINDS = [
  /** run the job's next step (or retry the current one) */
  'advance',
  /** write the job's record to the Postgres index (list pages, queue limit) */
  'record_sync',
  /** settle the job's metering reservation: commit the usage, or release it */
  'meter_settle',
  /** sign the finished job's inference receipt and record it in the tenant's audit log */
  'issue_receipt',
  /** send the QPU attempt's message to the queue (then the re-drive watchdog while it waits) */
  'qpu_dispatch',
  /** ask the provider about an attempt whose outcome is unknown (qpu-attempt.ts) */
  'qpu_reconcile',
  /** settle the real_qpu reservation: commit it when the QPU ran the job, or release it */
  'qpu_settle',
  /** give the job's run slot (or its place in line) back to the workspace's run queue */
  'release_slot',
] as const
export type DueWorkKind = (typeof DUE_WORK_KINDS)[number]

const RunSlotStateSchema = z.enum(['waiting', 'admitted', 'released'])
export type RunSlotState = z.infer<typeof RunSlotStateSchema>

const DueWorkRowSchema = z.object({ kind: z.enum(DUE_WORK_KINDS), due_at: z.number() })

type Row = StoredRow

export interface NewJob {
  jobId: string
  tenantId: string
  principal: string
  model: (typeof REASONING_MODELS)[number]
  product: (typeof REASONING_PRODUCTS)[number]
  requestedReal: boolean
  testMode: boolean
  workspaceId: string | null
  providerConnectionId: string | null
  requestId: string
  candidateCount: number
  maxAttempts: number
  realRequestStatus: (typeof REAL_REQUEST_STATUSES)[number]
  quotedUnits: number
  meter: JobMeter
  now: number
}

/** The columns a state change may set (the rest are fixed at creation). */
export type JobChange = Partial<
  Pick<
    JobRow,
    | 'status'
    | 'attempt_count'
    | 'next_attempt_at'
    | 'outcome_state'
    | 'real_request_status'
    | 'selected_index'
    | 'selector_backend'
    | 'selector_confidence'
    | 'fallback_reason'
    | 'receipt_id'
    | 'erased_at'
    | 'completed_at'
  > & { error: { code: string; message: string } | null }
>

export function toUsage(usage: NormalizedUsage): z.infer<typeof UsageSchema> {
  return {
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    totalTokens: usage.totalTokens,
    cachedTokens: usage.cachedTokens,
    reasoningTokens: usage.reasoningTokens,
  }
}

export class JobStore {
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

  job(): JobRow | null {
    const rows = this.sql.exec<Row>(`SELECT * FROM job WHERE id = 1`).toArray()
    return parseStoredRows(JobRowSchema, rows, 'job')[0] ?? null
  }

  createJob(job: NewJob): void {
    this.sql.exec(
      `INSERT INTO job (id, job_id, tenant_id, principal, model, product, requested_real, test_mode, workspace_id,
        provider_connection_id, request_id, status, candidate_count, max_attempts, outcome_state, real_request_status,
        quoted_units, meter_json, created_at, updated_at)
       VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, 'not_started', ?, ?, ?, ?, ?)`,
      job.jobId,
      job.tenantId,
      job.principal,
      job.model,
      job.product,
      job.requestedReal ? 1 : 0,
      job.testMode ? 1 : 0,
      job.workspaceId,
      job.providerConnectionId,
      job.requestId,
      job.candidateCount,
      job.maxAttempts,
      job.realRequestStatus,
      job.quotedUnits,
      JSON.stringify(job.meter),
      job.now,
      job.now,
    )
  }

  /** Applies a state change and bumps the record version (the Postgres index follows it). */
  update(change: JobChange, now: number): void {
    const sets: string[] = []
    const values: SqlStorageValue[] = []
    for (const [key, value] of Object.entries(change)) {
      if (key === 'error') {
        sets.push('error_json = ?')
        values.push(value === null ? null : JSON.stringify(value))
      } else if (typeof value === 'boolean') {
        sets.push(`${key} = ?`)
        values.push(value ? 1 : 0)
      } else {
        sets.push(`${key} = ?`)
        values.push((value ?? null) as SqlStorageValue)
      }
    }
    sets.push('updated_at = ?', 'record_version = record_version + 1')
    values.push(now)
    this.sql.exec(`UPDATE job SET ${sets.join(', ')} WHERE id = 1`, ...values)
  }

  /** The reservation is settled (not part of the public record: no version bump). */
  markSettled(): void {
    this.sql.exec(`UPDATE job SET settled = 1 WHERE id = 1`)
  }

  // --- content ----------------------------------------------------------------------------------

  /** The job's wrapped data key; null before creation and after erasure. */
  dataKey(): string | null {
    return (
      this.sql.exec<{ wrapped: string }>(`SELECT wrapped FROM content_key WHERE id = 1`).toArray()[0]
        ?.wrapped ?? null
    )
  }

  setDataKey(wrapped: string): void {
    this.sql.exec(
      `INSERT INTO content_key (id, wrapped) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET wrapped = excluded.wrapped`,
      wrapped,
    )
  }

  setContent(name: string, value: string): void {
    this.sql.exec(
      `INSERT INTO content (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
      name,
      value,
    )
  }

  content(name: string): string | null {
    return (
      this.sql.exec<{ value: string }>(`SELECT value FROM content WHERE name = ?`, name).toArray()[0]
        ?.value ?? null
    )
  }

  // --- candidates and verdicts ------------------------------------------------------------------

  addCandidate(
    row: Omit<CandidateRow, 'evidence_json' | 'logprobs_json' | 'usage_json'> & {
      logprobs: number[] | null
      usage: z.infer<typeof UsageSchema>
    },
  ): void {
    this.sql.exec(
      `INSERT OR IGNORE INTO candidates (idx, text, digest, logprobs_json, finish_reason, provider, usage_json, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      row.idx,
      row.text,
      row.digest,
      row.logprobs === null ? null : JSON.stringify(row.logprobs),
      row.finish_reason,
      row.provider,
      JSON.stringify(row.usage),
      row.created_at,
    )
  }

  candidates(): CandidateRow[] {
    return parseStoredRows(
      CandidateRowSchema,
      this.sql.exec<Row>(`SELECT * FROM candidates ORDER BY idx`).toArray(),
      'candidates',
    )
  }

  setEvidence(idx: number, evidence: Record<string, unknown>): void {
    this.sql.exec(`UPDATE candidates SET evidence_json = ? WHERE idx = ?`, JSON.stringify(evidence), idx)
  }

  addVerdict(
    row: Omit<VerdictRow, 'usage_json' | 'valid'> & { valid: boolean; usage: z.infer<typeof UsageSchema> },
  ): void {
    this.sql.exec(
      `INSERT OR IGNORE INTO verdicts (comparison, first, second, verdict, valid, provider, usage_json)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
      row.comparison,
      row.first,
      row.second,
      row.verdict,
      row.valid ? 1 : 0,
      row.provider,
      JSON.stringify(row.usage),
    )
  }

  verdicts(): VerdictRow[] {
    return parseStoredRows(
      VerdictRowSchema,
      this.sql.exec<Row>(`SELECT * FROM verdicts ORDER BY comparison`).toArray(),
      'verdicts',
    )
  }

  /**
   * Erasure: the data key and the content go (crypto-shredding: a copy of a ciphertext left
   * anywhere cannot be opened without the key), the metadata (digests, scores, usage) stays.
   */
  eraseContent(): void {
    this.sql.exec(`DELETE FROM content_key`)
    this.sql.exec(`DELETE FROM content`)
    this.sql.exec(`UPDATE candidates SET text = ''`)
  }

  // --- the inference receipt --------------------------------------------------------------------

  receipt(): ReceiptRow | null {
    return (
      parseStoredRows(
        ReceiptRowSchema,
        this.sql.exec<Row>(`SELECT * FROM receipt WHERE id = 1`).toArray(),
        'receipt',
      )[0] ?? null
    )
  }

  /** The statement is fixed once (its id and issue time): a retried step signs the same one. */
  createReceipt(statement: ReceiptStatement): void {
    this.sql.exec(
      `INSERT OR IGNORE INTO receipt (id, receipt_id, statement_json) VALUES (1, ?, ?)`,
      statement.receipt_id,
      JSON.stringify(statement),
    )
  }

  /** The envelope is kept before it is logged: the log records the digest of what was signed. */
  setReceiptEnvelope(envelope: ReceiptEnvelope, kid: string): void {
    this.sql.exec(`UPDATE receipt SET envelope_json = ?, kid = ? WHERE id = 1`, JSON.stringify(envelope), kid)
  }

  setReceiptLog(entry: ReceiptLogEntry): void {
    this.sql.exec(`UPDATE receipt SET log_json = ? WHERE id = 1`, JSON.stringify(entry))
  }

  // --- the run slot -----------------------------------------------------------------------------

  /**
   * Where the job stands with its workspace's run queue: null before it first asked (and for jobs
   * created before the queue existed), `waiting` in line, `admitted` (a slot is its own: it may
   * start), `released` (it ended and gave the slot back).
   */
  runSlot(): RunSlotState | null {
    const row = this.sql.exec<{ state: string }>(`SELECT state FROM run_slot WHERE id = 1`).toArray()[0]
    return row ? RunSlotStateSchema.parse(row.state) : null
  }

  setRunSlot(state: RunSlotState, now: number): void {
    this.sql.exec(
      `INSERT INTO run_slot (id, state, updated_at) VALUES (1, ?, ?)
       ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
      state,
      now,
    )
  }

  // --- due work ---------------------------------------------------------------------------------

  schedule(kind: DueWorkKind, dueAt: number): void {
    this.sql.exec(
      `INSERT INTO due_work (kind, due_at) VALUES (?, ?) ON CONFLICT (kind) DO UPDATE SET due_at = excluded.due_at`,
      kind,
      dueAt,
    )
  }

  unschedule(kind: DueWorkKind): void {
    this.sql.exec(`DELETE FROM due_work WHERE kind = ?`, kind)
  }

  isScheduled(kind: DueWorkKind): boolean {
    return this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM due_work WHERE kind = ?`, kind).one().n > 0
  }

  /** The earliest due row at `now`, or null. */
  nextDue(now: number): z.infer<typeof DueWorkRowSchema> | null {
    const rows = this.sql
      .exec<Row>(
        // The index write first: lists follow a job's steps as they happen; a freed slot soon after.
        `SELECT * FROM due_work WHERE due_at <= ?
         ORDER BY CASE kind WHEN 'record_sync' THEN 0 WHEN 'meter_settle' THEN 1 WHEN 'release_slot' THEN 1 ELSE 2 END, due_at LIMIT 1`,
        now,
      )
      .toArray()
    return parseStoredRows(DueWorkRowSchema, rows, 'due_work')[0] ?? null
  }

  nextDueAt(): number | null {
    return this.sql.exec<{ due_at: number | null }>(`SELECT min(due_at) AS due_at FROM due_work`).one().due_at
  }
}
