/**
 * The SQLite storage of one AgentRun object (`ctx.storage.sql`). Every read goes through a zod
 * row schema, so a row written by an older version that no longer fits fails loudly instead of
 * being misread. All calls are synchronous: a handler that writes and then streams cannot be
 * interleaved with another request between the two, and the output gate holds what it sends until
 * the write is durable.
 *
 * | table       | holds                                                                        |
 * |-------------|------------------------------------------------------------------------------|
 * | run         | one row: owner, state, model/mode of the last turn, id counter,              |
 * |             | usage and cost so far                                                        |
 * | events      | the event log: seq (gapless from 1) -> the NDJSON line as served              |
 * | turns       | one row per turn: body hash (reattach), its settings, state, stop reason,    |
 * |             | first/terminal seq, rounds and model attempts, usage                          |
 * | messages    | the model conversation of the run (OpenAI chat messages)                      |
 * | tool_calls  | every tool call the model made, its executor and status                       |
 * | approvals   | approvals asked for, their expiry and how they were resolved                  |
 * | due_work    | what the single alarm must do and when (turn timeout, approval expiry,        |
 * |             | model retry, interrupted turn, metering settle, the Postgres index write)    |
 */
import { z } from 'zod'
import { type MeterGrant, MeterGrantSchema } from '../../shared/metering/metering.schemas'
import type { ProviderChatMessage } from '../../shared/providers/chat-wire'
import type { Identity } from '../../shared/worker/request-context'
import { parseStoredRows, StoredIdentitySchema, type StoredRow, storedJson } from '../stored-rows'
import { RUN_STATES, type RunState, type TokenUsage, TokenUsageSchema } from './agent-events'
import { type FileChange, FileChangeSchema } from './file-changes'
import { type TurnSettings, TurnSettingsSchema } from './turn-settings'

/**
 * 2: `turns.plan_json` became `settings_json` and its `plan_id` became `billing_plan_id` (the
 * word "plan" had four meanings in the agent plane); a version-1 object is migrated in place.
 * 3: `run.index_version`, the version of the run's row in the Postgres index (agent_runs); an
 * older object gets the column and an index write, so runs from before the index are listed too.
 */
export const SCHEMA_VERSION = 3

/** The `ref` of the one `index_sync` due-work row (there is one run per object). */
export const INDEX_SYNC_REF = 'run'

const DDL = [
  `CREATE TABLE IF NOT EXISTS schema_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS run (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    run_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    principal_id TEXT NOT NULL,
    test_mode INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    state TEXT NOT NULL,
    model TEXT NOT NULL,
    mode TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    active_turn_id TEXT,
    next_id INTEGER NOT NULL DEFAULT 1,
    usage_json TEXT NOT NULL,
    cost_usd REAL NOT NULL DEFAULT 0,
    cancel_reason TEXT,
    index_version INTEGER NOT NULL DEFAULT 0
  )`,
  `CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    turn_id TEXT NOT NULL,
    type TEXT NOT NULL,
    line TEXT NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS turns (
    turn_id TEXT PRIMARY KEY,
    ordinal INTEGER NOT NULL UNIQUE,
    body_hash TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    state TEXT NOT NULL,
    stop_reason TEXT,
    started_seq INTEGER NOT NULL,
    terminal_seq INTEGER,
    started_at INTEGER NOT NULL,
    ended_at INTEGER,
    rounds INTEGER NOT NULL DEFAULT 0,
    attempt INTEGER NOT NULL DEFAULT 1,
    usage_json TEXT NOT NULL,
    file_changes_json TEXT NOT NULL DEFAULT '[]',
    provider TEXT,
    usage_estimated INTEGER NOT NULL DEFAULT 0,
    meter_json TEXT
  )`,
  `CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    turn_id TEXT NOT NULL,
    json TEXT NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS tool_calls (
    call_id TEXT PRIMARY KEY,
    turn_id TEXT NOT NULL,
    name TEXT NOT NULL,
    executor TEXT NOT NULL,
    arguments_json TEXT NOT NULL,
    status TEXT NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS approvals (
    approval_id TEXT PRIMARY KEY,
    call_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    decided_by TEXT,
    reported INTEGER NOT NULL DEFAULT 0
  )`,
  `CREATE TABLE IF NOT EXISTS due_work (
    kind TEXT NOT NULL,
    ref TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    PRIMARY KEY (kind, ref)
  )`,
  `CREATE INDEX IF NOT EXISTS due_work_due_idx ON due_work (due_at)`,
]

const json = storedJson

export const RunRowSchema = z.object({
  run_id: z.string(),
  tenant_id: z.string(),
  principal_id: z.string(),
  test_mode: z.union([z.literal(0), z.literal(1)]).transform((v) => v === 1),
  session_id: z.string(),
  state: z.enum(RUN_STATES),
  model: z.string(),
  mode: z.string(),
  created_at: z.number(),
  updated_at: z.number(),
  active_turn_id: z.string().nullable(),
  next_id: z.number().int().min(1),
  usage_json: json(TokenUsageSchema),
  cost_usd: z.number().min(0),
  cancel_reason: z.string().nullable(),
  /** Grows with every change the index shows; a write carries it (agent_runs.version). */
  index_version: z.number().int().min(0),
})
export type RunRow = z.infer<typeof RunRowSchema>

/** What settling a turn's metering needs after a restart: who was admitted, and the grant. */
export const TurnMeterSchema = z.object({
  identity: StoredIdentitySchema,
  /** The grant as the metering client returned it (its own schema: one definition). */
  grant: MeterGrantSchema,
})
/** Written from the metering client's own types; read back through TurnMeterSchema. */
export interface TurnMeter {
  identity: Identity
  grant: MeterGrant
}

export const TURN_STATES = ['running', 'completed', 'failed', 'cancelled'] as const
export type TurnState = (typeof TURN_STATES)[number]

export const TurnRowSchema = z.object({
  turn_id: z.string(),
  ordinal: z.number().int().min(1),
  body_hash: z.string(),
  settings_json: json(TurnSettingsSchema),
  state: z.enum(TURN_STATES),
  stop_reason: z.string().nullable(),
  started_seq: z.number().int().min(1),
  terminal_seq: z.number().int().nullable(),
  started_at: z.number(),
  ended_at: z.number().nullable(),
  rounds: z.number().int().min(0),
  attempt: z.number().int().min(1),
  usage_json: json(TokenUsageSchema),
  file_changes_json: json(z.array(FileChangeSchema)),
  /** Provider that answered the turn's last model call (metering). */
  provider: z.string().nullable(),
  /** Some of the turn's usage was counted with the tokenizer rather than reported by a provider. */
  usage_estimated: z.union([z.literal(0), z.literal(1)]).transform((v) => v === 1),
  /** The metering admission of the turn, settled when it ends (null when metering is not bound). */
  meter_json: json(TurnMeterSchema).nullable(),
})
export type TurnRow = z.infer<typeof TurnRowSchema>

export const TOOL_CALL_STATES = [
  /** waiting for an approval answer */
  'awaiting_approval',
  /** approved (by mode or user), a server tool not run yet */
  'approved',
  /** a client tool the client must run and report */
  'awaiting_result',
  'completed',
  'failed',
  'denied',
] as const
export type ToolCallState = (typeof TOOL_CALL_STATES)[number]

export const ToolCallRowSchema = z.object({
  call_id: z.string(),
  turn_id: z.string(),
  name: z.string(),
  executor: z.enum(['server', 'client', 'mcp']),
  arguments_json: json(z.record(z.string(), z.unknown())),
  status: z.enum(TOOL_CALL_STATES),
})
export type ToolCallRow = z.infer<typeof ToolCallRowSchema>

export const APPROVAL_STATES = ['pending', 'approved', 'denied', 'expired', 'cancelled'] as const
export type ApprovalState = (typeof APPROVAL_STATES)[number]

export const ApprovalRowSchema = z.object({
  approval_id: z.string(),
  call_id: z.string(),
  turn_id: z.string(),
  reason: z.string(),
  expires_at: z.number(),
  status: z.enum(APPROVAL_STATES),
  decided_by: z.enum(['user', 'mode_policy', 'expiry']).nullable(),
  reported: z.union([z.literal(0), z.literal(1)]).transform((v) => v === 1),
})
export type ApprovalRow = z.infer<typeof ApprovalRowSchema>

export const DUE_WORK_KINDS = [
  /** the turn has run for AGENT_TURN_TIMEOUT_MS: fail it */
  'turn_timeout',
  /** an approval reached expires_at: resolve it as a deny by expiry */
  'approval_expiry',
  /** retry the model round after a transient upstream failure */
  'model_retry',
  /** the object restarted while a turn was running: fail the turn as interrupted */
  'turn_interrupted',
  /**
   * the turn ended and its usage is not yet acknowledged by the tenant's RateLimiter: (re)send
   * the settle (written with the terminal event, so a crash cannot lose it)
   */
  'meter_settle',
  /**
   * the run changed (created, a turn started or ended, cancelled) and its row in the Postgres index
   * (agent_runs) is older: write it (written with the change; retried while Postgres is down)
   */
  'index_sync',
] as const
export type DueWorkKind = (typeof DUE_WORK_KINDS)[number]

export const DueWorkRowSchema = z.object({
  kind: z.enum(DUE_WORK_KINDS),
  ref: z.string(),
  due_at: z.number(),
})
export type DueWorkRow = z.infer<typeof DueWorkRowSchema>

const StoredMessageSchema = z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']) }).loose()

type Row = StoredRow

export interface NewRun {
  runId: string
  tenantId: string
  principalId: string
  testMode: boolean
  sessionId: string
  model: string
  mode: string
  now: number
  usage: TokenUsage
}

export interface NewTurn {
  turnId: string
  meter: TurnMeter | null
  bodyHash: string
  settings: TurnSettings
  startedSeq: number
  now: number
  usage: TokenUsage
}

export class RunStore {
  /** This object is the only writer of its storage, so these can live in memory once read. */
  private head: number | null = null
  private id: string | null = null

  constructor(private readonly sql: SqlStorage) {}

  /** The run's id, once the run exists. */
  runId(): string | null {
    this.id ??=
      this.sql.exec<{ run_id: string }>(`SELECT run_id FROM run WHERE id = 1`).toArray()[0]?.run_id ?? null
    return this.id
  }

  /** Idempotent: creates the tables, migrates an older version in place, records the version. */
  migrate(): void {
    for (const statement of DDL) this.sql.exec(statement)
    const stored = this.sql
      .exec<{ value: string }>(`SELECT value FROM schema_meta WHERE key = 'schema_version'`)
      .toArray()[0]
    if (stored && Number(stored.value) > SCHEMA_VERSION) {
      throw new Error(`storage schema ${stored.value} is newer than this code (${SCHEMA_VERSION})`)
    }
    if (stored && Number(stored.value) < 2) {
      this.sql.exec(`ALTER TABLE turns RENAME COLUMN plan_json TO settings_json`)
      this.sql.exec(
        `UPDATE turns SET settings_json = json_set(json_remove(settings_json, '$.plan_id'),
           '$.billing_plan_id', json_extract(settings_json, '$.plan_id'))
         WHERE json_type(settings_json, '$.plan_id') IS NOT NULL`,
      )
    }
    if (stored && Number(stored.value) < 3) {
      // Idempotent: a run table made by this code's DDL already has the column.
      const columns = this.sql
        .exec<{ n: number }>(
          `SELECT count(*) AS n FROM pragma_table_info('run') WHERE name = 'index_version'`,
        )
        .one().n
      if (columns === 0) this.sql.exec(`ALTER TABLE run ADD COLUMN index_version INTEGER NOT NULL DEFAULT 0`)
      if (this.run()) this.indexChanged(Date.now())
    }
    this.sql.exec(
      `INSERT INTO schema_meta (key, value) VALUES ('schema_version', ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      String(SCHEMA_VERSION),
    )
  }

  // --- run --------------------------------------------------------------------------------------

  run(): RunRow | null {
    const rows = this.sql.exec<Row>(`SELECT * FROM run WHERE id = 1`).toArray()
    return rows.length === 0 ? null : parseStoredRows(RunRowSchema, rows, 'run')[0]!
  }

  createRun(run: NewRun): void {
    this.sql.exec(
      `INSERT INTO run (id, run_id, tenant_id, principal_id, test_mode, session_id, state, model, mode,
        created_at, updated_at, usage_json) VALUES (1, ?, ?, ?, ?, ?, 'completed', ?, ?, ?, ?, ?)`,
      run.runId,
      run.tenantId,
      run.principalId,
      run.testMode ? 1 : 0,
      run.sessionId,
      run.model,
      run.mode,
      run.now,
      run.now,
      JSON.stringify(run.usage),
    )
    this.indexChanged(run.now)
  }

  /**
   * The run changed in a way its index row shows: a new index version, and the write of it due
   * now, in the same implicit transaction as the change (so a crash cannot lose the write).
   */
  private indexChanged(now: number): void {
    this.sql.exec(`UPDATE run SET index_version = index_version + 1 WHERE id = 1`)
    this.schedule('index_sync', INDEX_SYNC_REF, now)
  }

  setRunState(state: RunState, now: number, activeTurnId: string | null): void {
    this.sql.exec(
      `UPDATE run SET state = ?, active_turn_id = ?, updated_at = ? WHERE id = 1`,
      state,
      activeTurnId,
      now,
    )
    this.indexChanged(now)
  }

  setRunTurnSettings(model: string, mode: string, sessionId: string): void {
    this.sql.exec(`UPDATE run SET model = ?, mode = ?, session_id = ? WHERE id = 1`, model, mode, sessionId)
  }

  setCancelReason(reason: string): void {
    this.sql.exec(`UPDATE run SET cancel_reason = ? WHERE id = 1`, reason)
  }

  addRunUsage(usage: TokenUsage, costUsd: number, now: number): void {
    const run = this.run()
    if (!run) throw new Error('no run to add usage to')
    const total: TokenUsage = {
      input_tokens: run.usage_json.input_tokens + usage.input_tokens,
      output_tokens: run.usage_json.output_tokens + usage.output_tokens,
      reasoning_tokens: run.usage_json.reasoning_tokens + usage.reasoning_tokens,
      cached_input_tokens: run.usage_json.cached_input_tokens + usage.cached_input_tokens,
      total_tokens: run.usage_json.total_tokens + usage.total_tokens,
    }
    this.sql.exec(
      `UPDATE run SET usage_json = ?, cost_usd = cost_usd + ?, updated_at = ? WHERE id = 1`,
      JSON.stringify(total),
      costUsd,
      now,
    )
    // Not an index change of its own: every turn ends with a state change, whose write carries the
    // usage, so a turn of many model rounds writes its row twice rather than once a round.
  }

  /** A fresh run-wide number for ids (`msg_7`, `call_8`, `appr_9`). */
  allocateId(prefix: string): string {
    const row = this.sql
      .exec<{ next_id: number }>(`UPDATE run SET next_id = next_id + 1 WHERE id = 1 RETURNING next_id`)
      .one()
    return `${prefix}_${row.next_id - 1}`
  }

  // --- events -----------------------------------------------------------------------------------

  /** seq of the last stored event (0 before the first); kept in memory after the first read. */
  lastSeq(): number {
    this.head ??= this.sql.exec<{ seq: number }>(`SELECT coalesce(max(seq), 0) AS seq FROM events`).one().seq
    return this.head
  }

  /** Appends one event line; `seq` must be lastSeq() + 1 (the primary key refuses a duplicate). */
  appendEvent(seq: number, turnId: string, type: string, line: string): void {
    this.sql.exec(
      `INSERT INTO events (seq, turn_id, type, line) VALUES (?, ?, ?, ?)`,
      seq,
      turnId,
      type,
      line,
    )
    this.head = seq
  }

  /** Type of the last stored event, or null. */
  lastEventType(): string | null {
    const row = this.sql
      .exec<{ type: string }>(`SELECT type FROM events ORDER BY seq DESC LIMIT 1`)
      .toArray()[0]
    return row?.type ?? null
  }

  /** Lines with after < seq <= upTo, in order. */
  eventLines(after: number, upTo: number): string[] {
    return this.sql
      .exec<{ line: string }>(`SELECT line FROM events WHERE seq > ? AND seq <= ? ORDER BY seq`, after, upTo)
      .toArray()
      .map((row) => row.line)
  }

  // --- turns ------------------------------------------------------------------------------------

  turn(turnId: string): TurnRow | null {
    const rows = this.sql.exec<Row>(`SELECT * FROM turns WHERE turn_id = ?`, turnId).toArray()
    return rows.length === 0 ? null : parseStoredRows(TurnRowSchema, rows, 'turns')[0]!
  }

  lastTurn(): TurnRow | null {
    const rows = this.sql.exec<Row>(`SELECT * FROM turns ORDER BY ordinal DESC LIMIT 1`).toArray()
    return rows.length === 0 ? null : parseStoredRows(TurnRowSchema, rows, 'turns')[0]!
  }

  turnCount(): number {
    return this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM turns`).one().n
  }

  insertTurn(turn: NewTurn): void {
    this.sql.exec(
      `INSERT INTO turns (turn_id, ordinal, body_hash, settings_json, state, started_seq, started_at, usage_json, meter_json)
       VALUES (?, (SELECT coalesce(max(ordinal), 0) + 1 FROM turns), ?, ?, 'running', ?, ?, ?, ?)`,
      turn.turnId,
      turn.bodyHash,
      JSON.stringify(turn.settings),
      turn.startedSeq,
      turn.now,
      JSON.stringify(turn.usage),
      turn.meter ? JSON.stringify(turn.meter) : null,
    )
  }

  endTurn(
    turnId: string,
    state: Exclude<TurnState, 'running'>,
    stopReason: string | null,
    seq: number,
    now: number,
  ) {
    this.sql.exec(
      `UPDATE turns SET state = ?, stop_reason = ?, terminal_seq = ?, ended_at = ? WHERE turn_id = ?`,
      state,
      stopReason,
      seq,
      now,
      turnId,
    )
  }

  setTurnProgress(
    turnId: string,
    progress: {
      rounds?: number
      attempt?: number
      usage?: TokenUsage
      provider?: string
      estimated?: boolean
    },
  ): void {
    if (progress.estimated) this.sql.exec(`UPDATE turns SET usage_estimated = 1 WHERE turn_id = ?`, turnId)
    if (progress.provider !== undefined)
      this.sql.exec(`UPDATE turns SET provider = ? WHERE turn_id = ?`, progress.provider, turnId)
    if (progress.rounds !== undefined)
      this.sql.exec(`UPDATE turns SET rounds = ? WHERE turn_id = ?`, progress.rounds, turnId)
    if (progress.attempt !== undefined)
      this.sql.exec(`UPDATE turns SET attempt = ? WHERE turn_id = ?`, progress.attempt, turnId)
    if (progress.usage !== undefined)
      this.sql.exec(
        `UPDATE turns SET usage_json = ? WHERE turn_id = ?`,
        JSON.stringify(progress.usage),
        turnId,
      )
  }

  addTurnFileChanges(turnId: string, changes: readonly FileChange[]): void {
    const turn = this.turn(turnId)
    if (!turn) throw new Error(`no turn ${turnId}`)
    this.sql.exec(
      `UPDATE turns SET file_changes_json = ? WHERE turn_id = ?`,
      JSON.stringify([...turn.file_changes_json, ...changes]),
      turnId,
    )
  }

  // --- conversation -----------------------------------------------------------------------------

  addMessage(turnId: string, message: ProviderChatMessage): void {
    this.sql.exec(`INSERT INTO messages (turn_id, json) VALUES (?, ?)`, turnId, JSON.stringify(message))
  }

  /**
   * The conversation in the order a model API requires: every assistant message that called tools
   * is followed directly by the tool messages answering its calls, whenever those were stored.
   */
  conversation(): ProviderChatMessage[] {
    const rows = this.sql.exec<{ json: string }>(`SELECT json FROM messages ORDER BY id`).toArray()
    const messages = rows.map((row) => {
      const parsed = StoredMessageSchema.safeParse(JSON.parse(row.json))
      if (!parsed.success) throw new Error('stored message does not fit its schema')
      return parsed.data as ProviderChatMessage
    })
    const toolAnswers = new Map<string, ProviderChatMessage>()
    for (const message of messages) {
      if (message.role === 'tool' && typeof message.tool_call_id === 'string')
        toolAnswers.set(message.tool_call_id, message)
    }
    const ordered: ProviderChatMessage[] = []
    for (const message of messages) {
      if (message.role === 'tool') continue
      ordered.push(message)
      for (const call of message.tool_calls ?? []) {
        const answer = toolAnswers.get(call.id)
        if (answer) ordered.push(answer)
      }
    }
    return ordered
  }

  // --- tool calls -------------------------------------------------------------------------------

  insertToolCall(call: {
    callId: string
    turnId: string
    name: string
    executor: 'server' | 'client' | 'mcp'
    arguments: Record<string, unknown>
    status: ToolCallState
  }): void {
    this.sql.exec(
      `INSERT INTO tool_calls (call_id, turn_id, name, executor, arguments_json, status) VALUES (?, ?, ?, ?, ?, ?)`,
      call.callId,
      call.turnId,
      call.name,
      call.executor,
      JSON.stringify(call.arguments),
      call.status,
    )
  }

  toolCall(callId: string): ToolCallRow | null {
    const rows = this.sql.exec<Row>(`SELECT * FROM tool_calls WHERE call_id = ?`, callId).toArray()
    return rows.length === 0 ? null : parseStoredRows(ToolCallRowSchema, rows, 'tool_calls')[0]!
  }

  toolCallsIn(status: ToolCallState): ToolCallRow[] {
    return parseStoredRows(
      ToolCallRowSchema,
      this.sql.exec<Row>(`SELECT * FROM tool_calls WHERE status = ? ORDER BY rowid`, status).toArray(),
      'tool_calls',
    )
  }

  setToolCallStatus(callId: string, status: ToolCallState): void {
    this.sql.exec(`UPDATE tool_calls SET status = ? WHERE call_id = ?`, status, callId)
  }

  // --- approvals --------------------------------------------------------------------------------

  insertApproval(approval: {
    approvalId: string
    callId: string
    turnId: string
    reason: string
    expiresAt: number
  }) {
    this.sql.exec(
      `INSERT INTO approvals (approval_id, call_id, turn_id, reason, expires_at, status) VALUES (?, ?, ?, ?, ?, 'pending')`,
      approval.approvalId,
      approval.callId,
      approval.turnId,
      approval.reason,
      approval.expiresAt,
    )
  }

  approval(approvalId: string): ApprovalRow | null {
    const rows = this.sql.exec<Row>(`SELECT * FROM approvals WHERE approval_id = ?`, approvalId).toArray()
    return rows.length === 0 ? null : parseStoredRows(ApprovalRowSchema, rows, 'approvals')[0]!
  }

  approvalsIn(status: ApprovalState): ApprovalRow[] {
    return parseStoredRows(
      ApprovalRowSchema,
      this.sql.exec<Row>(`SELECT * FROM approvals WHERE status = ? ORDER BY rowid`, status).toArray(),
      'approvals',
    )
  }

  /** Expired approvals whose resolution events have not been emitted yet. */
  unreportedExpiries(): ApprovalRow[] {
    return parseStoredRows(
      ApprovalRowSchema,
      this.sql
        .exec<Row>(`SELECT * FROM approvals WHERE status = 'expired' AND reported = 0 ORDER BY rowid`)
        .toArray(),
      'approvals',
    )
  }

  resolveApproval(
    approvalId: string,
    status: Exclude<ApprovalState, 'pending'>,
    decidedBy: 'user' | 'mode_policy' | 'expiry' | null,
    reported: boolean,
  ): void {
    this.sql.exec(
      `UPDATE approvals SET status = ?, decided_by = ?, reported = ? WHERE approval_id = ?`,
      status,
      decidedBy,
      reported ? 1 : 0,
      approvalId,
    )
  }

  markApprovalReported(approvalId: string): void {
    this.sql.exec(`UPDATE approvals SET reported = 1 WHERE approval_id = ?`, approvalId)
  }

  // --- due work ---------------------------------------------------------------------------------

  schedule(kind: DueWorkKind, ref: string, dueAt: number): void {
    this.sql.exec(
      `INSERT INTO due_work (kind, ref, due_at) VALUES (?, ?, ?)
       ON CONFLICT (kind, ref) DO UPDATE SET due_at = excluded.due_at`,
      kind,
      ref,
      dueAt,
    )
  }

  unschedule(kind: DueWorkKind, ref: string): void {
    this.sql.exec(`DELETE FROM due_work WHERE kind = ? AND ref = ?`, kind, ref)
  }

  /**
   * Drops the run's pending work (a cancel), except what still has to leave the object: usage to
   * be delivered to metering and the index write.
   */
  clearDueWork(): void {
    this.sql.exec(`DELETE FROM due_work WHERE kind NOT IN ('meter_settle', 'index_sync')`)
  }

  dueWork(now: number): DueWorkRow[] {
    return parseStoredRows(
      DueWorkRowSchema,
      this.sql
        .exec<Row>(`SELECT * FROM due_work WHERE due_at <= ? ORDER BY due_at, kind, ref`, now)
        .toArray(),
      'due_work',
    )
  }

  allDueWork(): DueWorkRow[] {
    return parseStoredRows(
      DueWorkRowSchema,
      this.sql.exec<Row>(`SELECT * FROM due_work ORDER BY due_at, kind, ref`).toArray(),
      'due_work',
    )
  }

  nextDueAt(): number | null {
    const row = this.sql.exec<{ due_at: number | null }>(`SELECT min(due_at) AS due_at FROM due_work`).one()
    return row.due_at
  }
}
