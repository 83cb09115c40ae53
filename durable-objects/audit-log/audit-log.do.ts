/**
 * AuditLog: one append-only, Merkle-rooted log per tenant (`tenant:<uuid>`) and one for the
 * platform (`platform`), hosted by the platform worker (svc-platform) and bound by the workers
 * that record security events (gateway, auth, reasoning, telemetry) with `script_name =
 * "svc-platform"`. Workers append through durable-objects/audit-log/audit-client.ts; the platform
 * worker serves checkpoints and proofs.
 *
 * Append: the event is validated, wrapped in an entry {v, log, index, appended_at, event} whose
 * canonical JSON is the Merkle leaf, and written with the leaf hash and every perfect subtree it
 * completes, in one SQLite transaction. Concurrent appends are batched: each call queues its event
 * and the queue is written in arrival order as one transaction on the next turn of the event loop,
 * so a burst costs one commit. The call answers only after its batch is committed (the output gate
 * holds the answer until the write is durable): an acknowledged event is never lost, so callers
 * await it before they acknowledge the action it records (an enforce-mode block is answered only
 * once it is logged).
 *
 * Checkpoints (shared/audit/checkpoint.ts): signed on the object's alarm AUDIT_CHECKPOINT_INTERVAL_MS
 * after the first entry not yet covered, and on demand (a proof for an entry no checkpoint covers
 * yet, or POST .../checkpoint). Before signing, the object proves the new head consistent with the
 * last checkpoint from its own storage and refuses to sign otherwise (storage was altered).
 *
 * One alarm drives the due-work table: `checkpoint`, and `self_test` (platform log: the crypto
 * self-tests, re-run every AUDIT_SELF_TEST_INTERVAL_MS, whose report the conformance page shows).
 */
import { DurableObject } from 'cloudflare:workers'
import { z } from 'zod'
import { type AuditEntry, type AuditEvent, AuditEventSchema } from '../../shared/audit/audit-events'
import { signCheckpoint } from '../../shared/audit/checkpoint'
import { canonicalJson } from '../../shared/crypto/digests'
import { utf8 } from '../../shared/crypto/encoding'
import { createSelfTestSuite, type SelfTestReport } from '../../shared/crypto/self-test'
import { AppError, type Refused } from '../../shared/http/errors'
import { describeError, errorFields, log, refused } from '../../shared/worker/log'
import { AuditLogStore, type CheckpointRow, type LogMeta } from './audit-log.store'
import { DEFAULT_LOG_ORIGIN, logKeyRing, logOrigin } from './log-keys'
import {
  completedLevels,
  consistencyProof,
  hashChildren,
  hashLeaf,
  inclusionProof,
  rangeHash,
  verifyConsistency,
} from './merkle'

export const AuditLogEnvSchema = z.object({
  LOG_SIGNING_KEYS: z.string().optional(),
  AUDIT_LOG_ORIGIN: z
    .string()
    .regex(/^[^\s+]+$/, 'AUDIT_LOG_ORIGIN must be a schema-less URL without spaces or "+"')
    .default(DEFAULT_LOG_ORIGIN),
  AUDIT_CHECKPOINT_INTERVAL_MS: z.coerce.number().int().min(1000).default(60_000),
  AUDIT_SELF_TEST_INTERVAL_MS: z.coerce.number().int().min(60_000).default(3_600_000),
})
export type AuditLogEnv = z.input<typeof AuditLogEnvSchema>
type AuditLogSettings = z.output<typeof AuditLogEnvSchema>

/** What an append answers: where the event is in the log. */
export interface AuditReceipt {
  /** The log's origin. */
  log: string
  index: number
  leafHash: Uint8Array
}

/** Refusals are values (shared/http/errors.ts `AppErrorData`): an AppError does not cross RPC as itself. */
export type Answer<T> = ({ ok: true } & T) | Refused

export interface CheckpointView {
  origin: string
  size: number
  rootHash: Uint8Array
  timestamp: number
  note: string
}

export interface EntryView {
  index: number
  entry: string
  leafHash: Uint8Array
}

const RETRY_CHECKPOINT_MS = 30_000

function refusal(err: unknown): Refused {
  if (err instanceof AppError) return refused(err)
  return refused(
    new AppError(500, 'audit_log_failed', 'The audit log failed; retry shortly.', {
      internalMessage: describeError(err),
      cause: err,
    }),
  )
}

function refuse(status: number, code: string, message: string): Refused {
  return refused(new AppError(status, code, message))
}

function view(row: CheckpointRow, origin: string): CheckpointView {
  return { origin, size: row.size, rootHash: row.root, timestamp: row.timestamp, note: row.note }
}

interface Pending {
  event: AuditEvent
  idempotencyKey: string | null
  resolve(answer: Answer<{ receipt: AuditReceipt }>): void
}

export class AuditLog extends DurableObject<AuditLogEnv> {
  /** The clock. Tests substitute their own. */
  clock: () => number = () => Date.now()

  private readonly store: AuditLogStore
  private readonly settings: AuditLogSettings
  private size: number
  private logMeta: LogMeta | null
  private queue: Pending[] = []
  private flushScheduled = false
  private signing: { size: number; promise: Promise<CheckpointRow> } | null = null

  constructor(ctx: DurableObjectState, env: AuditLogEnv) {
    super(ctx, env)
    this.settings = AuditLogEnvSchema.parse(env)
    this.store = new AuditLogStore(ctx.storage.sql)
    this.size = this.store.size()
    this.logMeta = this.store.meta()
  }

  /** Fixes the log's identity at first use; afterwards every call must name the same tenant. */
  private identify(tenantId: string | null): LogMeta | Refused {
    if (this.logMeta) {
      if (this.logMeta.tenantId !== tenantId) {
        return refuse(500, 'audit_log_mismatch', 'This audit log belongs to another tenant.')
      }
      return this.logMeta
    }
    const meta: LogMeta = {
      name: tenantId ? `tenant:${tenantId}` : 'platform',
      tenantId,
      origin: logOrigin(this.settings.AUDIT_LOG_ORIGIN, tenantId),
    }
    this.store.setLogMeta(meta)
    this.logMeta = meta
    if (tenantId === null) this.schedule('self_test', this.clock())
    return meta
  }

  // ------------------------------------------------------------------------------------ append

  async append(request: {
    tenantId: string | null
    event: unknown
    idempotencyKey?: string | null
  }): Promise<Answer<{ receipt: AuditReceipt }>> {
    const parsed = AuditEventSchema.safeParse(request.event)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      return refuse(
        400,
        'invalid_audit_event',
        `The audit event is invalid: ${issue?.path.join('.') || '(event)'}: ${issue?.message}.`,
      )
    }
    const meta = this.identify(request.tenantId)
    if ('ok' in meta) return meta
    return new Promise((resolve) => {
      this.queue.push({ event: parsed.data, idempotencyKey: request.idempotencyKey ?? null, resolve })
      if (!this.flushScheduled) {
        this.flushScheduled = true
        // The next turn: appends that arrive meanwhile join this batch, in arrival order.
        setTimeout(() => this.flush(), 0)
      }
    })
  }

  private flush(): void {
    this.flushScheduled = false
    const batch = this.queue
    this.queue = []
    if (batch.length === 0) return
    const receipts: AuditReceipt[] = []
    try {
      this.ctx.storage.transactionSync(() => {
        for (const item of batch) receipts.push(this.appendOne(item.event, item.idempotencyKey))
      })
    } catch (err) {
      this.size = this.store.size()
      log('error', 'audit_append_failed', errorFields(err))
      for (const item of batch) item.resolve(refusal(err))
      return
    }
    if (this.store.latestCheckpoint()?.size !== this.size) {
      this.schedule('checkpoint', this.clock() + this.settings.AUDIT_CHECKPOINT_INTERVAL_MS)
    }
    for (const [i, item] of batch.entries()) item.resolve({ ok: true, receipt: receipts[i]! })
  }

  private appendOne(event: AuditEvent, idempotencyKey: string | null): AuditReceipt {
    const origin = this.logMeta!.origin
    if (idempotencyKey) {
      const existing = this.store.indexForKey(idempotencyKey)
      if (existing !== null) return { log: origin, index: existing, leafHash: this.store.node(0, existing) }
    }
    const index = this.size
    const now = this.clock()
    const entry: AuditEntry = { v: 1, log: origin, index, appended_at: new Date(now).toISOString(), event }
    const text = canonicalJson(entry)
    const leafHash = hashLeaf(utf8.encode(text))
    this.store.insertEntry(index, text, event.kind, now, idempotencyKey)
    this.store.insertNode(0, index, leafHash)
    let hash = leafHash
    let nodeIndex = index
    for (let level = 1; level <= completedLevels(index); level++) {
      nodeIndex = Math.floor(nodeIndex / 2)
      hash = hashChildren(this.store.node(level - 1, nodeIndex * 2), hash)
      this.store.insertNode(level, nodeIndex, hash)
    }
    this.size = index + 1
    return { log: origin, index, leafHash }
  }

  // ------------------------------------------------------------------------------- checkpoints

  /** Signs the current head unless the last checkpoint already covers it (one signing at a time per size). */
  private async checkpointCurrent(): Promise<CheckpointRow> {
    const latest = this.store.latestCheckpoint()
    if (latest && latest.size >= this.size) return latest
    if (this.signing && this.signing.size === this.size) return this.signing.promise
    const size = this.size
    const promise = this.signHead(size).finally(() => {
      if (this.signing?.promise === promise) this.signing = null
    })
    this.signing = { size, promise }
    return promise
  }

  private async signHead(size: number): Promise<CheckpointRow> {
    const meta = this.logMeta!
    const ring = await logKeyRing(this.env.LOG_SIGNING_KEYS)
    const root = rangeHash(this.store, 0, size)
    const previous = this.store.latestCheckpoint()
    if (previous && previous.size > 0) {
      try {
        if (previous.size > size) throw new Error(`tree size ${size} is below the signed ${previous.size}`)
        verifyConsistency(
          previous.size,
          size,
          consistencyProof(this.store, previous.size, size),
          previous.root,
          root,
        )
      } catch (err) {
        log('error', 'audit_log_inconsistent', { log: meta.origin, ...errorFields(err) })
        throw new AppError(
          500,
          'audit_log_inconsistent',
          'The audit log refuses to sign a checkpoint: its stored tree is not consistent with its last signed checkpoint (storage was altered). The operator has been alerted.',
        )
      }
    }
    const timestamp = Math.floor(this.clock() / 1000)
    const signed = await signCheckpoint(
      { origin: meta.origin, size, rootHash: root },
      { ed25519: ring.ed25519, mlDsa44: ring.mlDsa44 },
      timestamp,
    )
    const row: CheckpointRow = { size, root, timestamp, note: signed.note }
    this.store.saveCheckpoint(row)
    if (this.store.latestCheckpoint()?.size === this.size) this.store.completeWork('checkpoint')
    return row
  }

  /** The latest signed checkpoint; `fresh` signs one now when entries are not yet covered. */
  async checkpoint(request: {
    tenantId: string | null
    fresh?: boolean
  }): Promise<Answer<{ checkpoint: CheckpointView }>> {
    const meta = this.identify(request.tenantId)
    if ('ok' in meta) return meta
    try {
      const latest = this.store.latestCheckpoint()
      const row = request.fresh || !latest ? await this.checkpointCurrent() : latest
      return { ok: true, checkpoint: view(row, meta.origin) }
    } catch (err) {
      return refusal(err)
    }
  }

  /** The signed checkpoint that covers `index` (or exactly `treeSize`), signing one when none does yet. */
  private async covering(index: number, treeSize: number | null): Promise<CheckpointRow | Refused> {
    if (treeSize !== null) {
      const row = this.store.checkpointAt(treeSize)
      if (!row) {
        const latest = this.store.latestCheckpoint()
        return refuse(
          404,
          'checkpoint_not_found',
          `This log has no checkpoint of size ${treeSize}; ask for a size one of its checkpoints has (the latest is ${latest?.size ?? 'none yet'}) or leave tree_size out.`,
        )
      }
      return row
    }
    const latest = this.store.latestCheckpoint()
    if (latest && latest.size > index) return latest
    return this.checkpointCurrent()
  }

  // ------------------------------------------------------------------------------------ reads

  async entries(request: {
    tenantId: string | null
    start: number
    end: number
  }): Promise<Answer<{ size: number; entries: EntryView[] }>> {
    const meta = this.identify(request.tenantId)
    if ('ok' in meta) return meta
    const end = Math.min(request.end, this.size)
    const rows = request.start < end ? this.store.entries(request.start, end) : []
    return {
      ok: true,
      size: this.size,
      entries: rows.map((r) => ({ index: r.idx, entry: r.entry, leafHash: this.store.node(0, r.idx) })),
    }
  }

  async inclusionProofs(request: {
    tenantId: string | null
    indexes: readonly number[]
    treeSize?: number | null
  }): Promise<Answer<{ checkpoint: CheckpointView; proofs: (EntryView & { proof: Uint8Array[] })[] }>> {
    const meta = this.identify(request.tenantId)
    if ('ok' in meta) return meta
    const beyond = request.indexes.find((i) => i >= this.size)
    if (beyond !== undefined) {
      return refuse(
        404,
        'audit_entry_not_found',
        `This log has ${this.size} entries; there is no entry ${beyond}.`,
      )
    }
    try {
      const highest = Math.max(-1, ...request.indexes)
      const row = await this.covering(highest, request.treeSize ?? null)
      if ('ok' in row) return row
      const outside = request.indexes.find((i) => i >= row.size)
      if (outside !== undefined) {
        return refuse(
          400,
          'entry_outside_checkpoint',
          `Entry ${outside} is not in the checkpoint of size ${row.size}; ask for a larger tree_size or leave it out.`,
        )
      }
      const proofs = request.indexes.map((index) => {
        const [entry] = this.store.entries(index, index + 1)
        return {
          index,
          entry: entry!.entry,
          leafHash: this.store.node(0, index),
          proof: inclusionProof(this.store, index, row.size),
        }
      })
      return { ok: true, checkpoint: view(row, meta.origin), proofs }
    } catch (err) {
      return refusal(err)
    }
  }

  async consistency(request: {
    tenantId: string | null
    first: number
    second?: number | null
  }): Promise<Answer<{ checkpoint: CheckpointView; first: number; proof: Uint8Array[] }>> {
    const meta = this.identify(request.tenantId)
    if ('ok' in meta) return meta
    try {
      const row =
        request.second !== null && request.second !== undefined
          ? this.store.checkpointAt(request.second)
          : await this.checkpointCurrent()
      if (!row) {
        return refuse(
          404,
          'checkpoint_not_found',
          `This log has no checkpoint of size ${request.second}; leave second out to use the latest checkpoint.`,
        )
      }
      if (request.first < 1 || request.first > row.size) {
        return refuse(
          400,
          'invalid_consistency_range',
          `first must be between 1 and ${row.size} (the checkpoint's size); got ${request.first}.`,
        )
      }
      return {
        ok: true,
        checkpoint: view(row, meta.origin),
        first: request.first,
        proof: consistencyProof(this.store, request.first, row.size),
      }
    } catch (err) {
      return refusal(err)
    }
  }

  /** Entries of the given kinds, newest first (the platform's decision listing reads these). */
  async entriesOfKinds(request: {
    tenantId: string | null
    kinds: readonly string[]
    before?: number | null
    limit: number
  }): Promise<Answer<{ entries: EntryView[] }>> {
    const meta = this.identify(request.tenantId)
    if ('ok' in meta) return meta
    const rows = this.store.entriesOfKinds(request.kinds, request.before ?? this.size, request.limit)
    return {
      ok: true,
      entries: rows.map((r) => ({ index: r.idx, entry: r.entry, leafHash: this.store.node(0, r.idx) })),
    }
  }

  /** The last self-test report this object ran (platform log), without running anything. */
  async selfTests(): Promise<{ report: SelfTestReport; ranAt: number } | null> {
    this.identify(null)
    const stored = this.store.selfTestReport()
    if (!stored) {
      this.schedule('self_test', this.clock())
      return null
    }
    return { report: JSON.parse(stored.report) as SelfTestReport, ranAt: stored.ranAt }
  }

  // ------------------------------------------------------------------------------------- alarm

  private schedule(kind: 'checkpoint' | 'self_test', at: number): void {
    this.store.scheduleWork(kind, at)
    void this.armAlarm()
  }

  private async armAlarm(): Promise<void> {
    const next = this.store.nextDue()
    if (next === null) return
    const current = await this.ctx.storage.getAlarm()
    if (current === null || current > next) await this.ctx.storage.setAlarm(next)
  }

  override async alarm(): Promise<void> {
    const now = this.clock()
    for (const kind of this.store.dueWork(now)) {
      if (kind === 'checkpoint') {
        try {
          if (this.logMeta) await this.checkpointCurrent()
          this.store.completeWork('checkpoint')
        } catch (err) {
          log('error', 'audit_checkpoint_failed', errorFields(err))
          this.store.completeWork('checkpoint')
          this.store.scheduleWork('checkpoint', now + RETRY_CHECKPOINT_MS)
        }
      } else {
        const report = await createSelfTestSuite().run()
        this.store.saveSelfTestReport(JSON.stringify(report), this.clock())
        this.store.completeWork('self_test')
        this.store.scheduleWork('self_test', now + this.settings.AUDIT_SELF_TEST_INTERVAL_MS)
      }
    }
    await this.armAlarm()
  }
}
