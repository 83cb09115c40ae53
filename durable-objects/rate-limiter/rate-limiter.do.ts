/**
 * RateLimiter: one Durable Object per tenant and mode (`<tenantId>:live`, `<tenantId>:test`),
 * hosted by the metering worker (svc-metering, functions/metering) and bound by every worker
 * that meters usage (chat and code bind it with `script_name = "svc-metering"`). Clients use
 * shared/metering/metering-client.ts and its RateLimiterRpc, which this class implements; the
 * decisions themselves are tenant-limiter.ts beside it.
 *
 * Protocol (RPC):
 *   acquire(request)  → granted | refused (an UpgradeDecision) | unavailable
 *                       checks requests/min, tokens/min (reserving the estimate), the model's
 *                       and the monthly allowance, credits and the overage cap, then the calling
 *                       key's own rates and spend limit (key-account.ts, key-spend-load.ts), then
 *                       admits.
 *   settleMany(usage) → each reservation becomes the tokens used and its ledger row is written to
 *                       this object's SQLite storage, in one commit with the settles that arrived
 *                       with it (writeInGroup), before the call answers (the output gate
 *                       holds the answer until the write is durable: an acknowledged settle
 *                       survives a crash); the flush alarm is armed. Idempotent per reservation id
 *                       (chosen by the client per request: request ids come from x-request-id and
 *                       may repeat). usage = null releases the reservation (with a failure
 *                       status, a zero-charge row for the request log).
 *   checkpoint(usage) → what a request still running has used so far (a stream's delivered
 *                       tokens), kept in `open_requests` until it settles; one silent for
 *                       ORPHAN_AFTER_MS (its isolate died mid-stream) is settled by the alarm with
 *                       its last checkpoint, marked estimated.
 *   snapshot(scope)   → the rate-limit counters (for x-ratelimit-* headers on early refusals).
 *   unflushedUsage(q) → one principal's durable rows not yet in Postgres (a key's usage
 *                       statement merges them with usage_ledger: each request exactly once).
 *   alarm()           → settles orphaned requests, flushes pending ledger rows to Postgres in
 *                       batches (idempotent insert + balance update in one transaction), re-reads
 *                       the balance, prunes.
 *
 * Exactness: the object handles one event at a time and acquire/settle do their check-and-update
 * without awaiting anything, so concurrent requests cannot race. The request path costs one RPC
 * to this object and no Postgres round trip: Postgres is read when the object starts (the
 * period's balance) and written only from the alarm, in batches.
 *
 * Storage: `meta` (which tenant/mode/plan this object serves, schema version), `ledger`
 * (metered requests; `flushed` once in Postgres; flushed rows are kept ten minutes so the rate
 * windows and the recently settled reservations can be rebuilt after a restart, and a resent
 * settle still meets its row's unique reservation id; then deleted) and `open_requests` (the
 * last checkpoint of each request still running).
 */
import { DurableObject } from 'cloudflare:workers'
import { z } from 'zod'
import { envReader, wholeNumberVar } from '../../shared/config/worker-env'
import { DATABASE_VARS, type DatabaseEnv } from '../../shared/db/client'
import {
  type AcquireInput,
  AcquireInputSchema,
  type AcquireResult,
  type BalanceRow,
  type KeyLimitInput,
  type LeaseReturnInput,
  type LedgerEntry,
  type MeteringMode,
  type MeteringScope,
  MeteringScopeSchema,
  type RateLimitSnapshot,
  type SettleInput,
  type SettleResult,
  type UnflushedUsageQuery,
  UnflushedUsageQuerySchema,
} from '../../shared/metering/metering.schemas'
import type { RateLimiterRpc } from '../../shared/metering/metering-client'
import {
  type BillingPlan,
  getPlan,
  type PlanCatalog,
  planCatalogFromEnv,
} from '../../shared/plans/plan-catalog'
import { describeError, log } from '../../shared/worker/log'
import { billingPeriodAt } from './billing-period'
import { loadKeySpend, pruneKeyReservations, recordKeyReservation } from './key-spend-load'
import { closeRequests, insertLedgerRows, prepareStorage, upsertCheckpoints } from './ledger-storage'
import { readLeaseReturns, readLedgerRow, readSettleBatch } from './metering-check'
import { FLUSH_BATCH_SIZE, type MeteringStore, postgresMeteringStore } from './metering-store'
import {
  balanceFromStored,
  type LimiterBalance,
  RATE_WINDOW_MS,
  RESERVATION_TTL_MS,
  TenantLimiter,
} from './tenant-limiter'

export interface RateLimiterEnv extends DatabaseEnv {
  /** Delay between the first unflushed ledger row and the flush to Postgres (ms, default 1000). */
  RATE_LIMIT_LEDGER_FLUSH_MS?: string
  /** How old the cached balance may get while the tenant is active before it is re-read (ms, default 10000). */
  RATE_LIMIT_BALANCE_REFRESH_MS?: string
  /** Replaces the built-in plan catalog (shared/plans/plan-catalog.ts). */
  PLAN_CATALOG?: string
  /** Silence after which a checkpointed request that never settled is billed as it stands (ms, default 60000). */
  RATE_LIMIT_ORPHAN_AFTER_MS?: string
}

/**
 * 2: ledger rows carry `unit` and `quantity` (paid tools are metered in their own units).
 * 3: ledger rows carry `status` and `latency_ms` (the console's request log); null in older rows.
 * 4: `key_reservations` (created if missing: nothing to migrate).
 */
const KEEP_FLUSHED_MS = 10 * 60_000
const RETRY_FLUSH_MS = 5_000
/**
 * A checkpointed request that neither settles nor checkpoints again for this long is presumed
 * gone with its isolate and billed as its last checkpoint stands (RATE_LIMIT_ORPHAN_AFTER_MS).
 * Streams checkpoint at least every STREAM_CHECKPOINT_KEEPALIVE_MS (functions/chat), far more
 * often than this.
 */
export const ORPHAN_AFTER_MS = 60_000

/**
 * The metering worker's configuration (README's table), parsed once per isolate; PLAN_CATALOG is
 * parsed by the plan catalog's own schema (shared/plans/plan-catalog.ts).
 */
const rateLimiterSettings = envReader(
  'metering',
  z.object({
    ...DATABASE_VARS,
    RATE_LIMIT_LEDGER_FLUSH_MS: wholeNumberVar(1_000, { min: 0 }),
    RATE_LIMIT_BALANCE_REFRESH_MS: wholeNumberVar(10_000, { min: 0 }),
    RATE_LIMIT_ORPHAN_AFTER_MS: wholeNumberVar(ORPHAN_AFTER_MS, { min: 0 }),
  }),
)
/** A failed balance load is retried once after this long before the request is refused. */
const RETRY_LOAD_MS = 200
/**
 * Clients resend an unacknowledged settle within about half a second; remembered far longer.
 * Memory is bounded too (a tenant at 2,000 requests/s settles 240,000 in two minutes): beyond
 * MAX_RECENT_RESERVATIONS the oldest are forgotten. A resend older than that still cannot write a
 * second ledger row (the row's reservation id is unique in storage for KEEP_FLUSHED_MS, and the
 * insert ignores a duplicate); it would count once more in the in-memory windows until they
 * move on and the balance is next re-read from Postgres.
 */
const RECENT_RESERVATIONS_MS = 2 * 60_000
const MAX_RECENT_RESERVATIONS = 200_000

interface SettleGroup {
  readonly entries: LedgerEntry[]
  readonly inputs: SettleInput[]
  /** The latest checkpoint of each running request reported meanwhile, by reservation id. */
  readonly checkpoints: Map<string, { json: string; at: number }>
  written: Promise<void>
}

const MetaSchema = z.object({ tenantId: z.string(), mode: z.enum(['live', 'test']), planId: z.string() })

export class RateLimiter extends DurableObject<RateLimiterEnv> implements RateLimiterRpc {
  /** Postgres, or null when DATABASE_URL is unset (live balances then cannot load). Tests substitute their own. */
  store: MeteringStore | null
  /** The clock. Tests substitute their own. */
  clock: () => number = () => Date.now()

  private scope: { tenantId: string; mode: MeteringMode; planId: string } | null = null
  private limiter: TenantLimiter | null = null
  private balanceReadAt = 0
  private alarmAt: number | null = null
  private readonly flushDelayMs: number
  private readonly refreshMs: number
  private readonly orphanAfterMs: number
  /** Ledger ids of rows not yet in Postgres (a reused request id among them gets a suffix). */
  private readonly unflushedRequestIds = new Set<string>()
  /** Reservations settled in the last RECENT_RESERVATIONS_MS, oldest first (a resent settle is ignored). */
  private readonly recentReservations = new Map<string, number>()
  /** Settled rows waiting for their group's write (writeInGroup); null when none is forming. */
  private settleGroup: SettleGroup | null = null

  constructor(ctx: DurableObjectState, env: RateLimiterEnv) {
    super(ctx, env)
    this.store = env.DATABASE_URL ? postgresMeteringStore(env) : null
    const settings = rateLimiterSettings(env)
    this.flushDelayMs = settings.RATE_LIMIT_LEDGER_FLUSH_MS
    this.refreshMs = settings.RATE_LIMIT_BALANCE_REFRESH_MS
    this.orphanAfterMs = settings.RATE_LIMIT_ORPHAN_AFTER_MS
    const sql = ctx.storage.sql
    prepareStorage(sql)
    const stored = sql.exec<{ value: string }>(`select value from meta where key = 'scope'`).toArray()[0]
    if (stored) this.scope = MetaSchema.parse(JSON.parse(stored.value))
  }

  async acquire(raw: AcquireInput): Promise<AcquireResult> {
    const input = AcquireInputSchema.parse(raw)
    const ready = await this.ready(input)
    if (typeof ready === 'string') return { kind: 'unavailable', detail: ready }
    const { limiter, plan } = ready
    if (input.key && !limiter.keyAccounts.spendReady(input.key, this.clock())) {
      const failure = await this.loadKeySpend(limiter, input.key)
      if (failure) return { kind: 'unavailable', detail: failure }
    }
    for (const lease of input.leaseReturns ?? []) limiter.returnLease(lease)
    const now = this.clock()
    const result = limiter.acquire(plan, input, now)
    if (result.kind === 'granted' && input.key?.spendLimitUnits !== undefined) {
      // Durable before the grant leaves (the output gate): a restart keeps the reservation.
      const costUnits = limiter.keyReservationOf(input.reservationId)
      if (costUnits > 0)
        recordKeyReservation(this.ctx.storage.sql, {
          reservationId: input.reservationId,
          keyId: input.key.keyId,
          costUnits,
          at: now,
        })
    }
    this.keepBalanceFresh(now)
    if (result.kind !== 'granted' || !input.lease) return result
    const lease = limiter.grantLease(plan, { ...input.lease, model: input.model, key: input.key }, now)
    return lease ? { ...result, lease, snapshot: limiter.snapshot(plan, now) } : result
  }

  async settle(raw: SettleInput): Promise<SettleResult> {
    const [result] = await this.settleMany([raw])
    return result ?? { recorded: false, creditsUnits: 0 }
  }

  /**
   * Settles a batch of requests in one event (one storage transaction, committed before the
   * answer leaves), and takes back finished leases.
   */
  async settleMany(raw: SettleInput[], rawReturns: LeaseReturnInput[] = []): Promise<SettleResult[]> {
    const inputs = readSettleBatch(raw)
    const returns = readLeaseReturns(rawReturns)
    const first = inputs[0]
    if (!first) {
      if (returns.length > 0 && this.limiter) for (const lease of returns) this.limiter.returnLease(lease)
      return []
    }
    const ready = await this.ready(first)
    const { results, entries } = this.applySettles(ready, inputs)
    if (typeof ready !== 'string') for (const lease of returns) ready.limiter.returnLease(lease)
    // Answered only once the group holding these rows is written (and, by the output gate, once
    // that write is durable). A resend of a settle still in the group waits for it too.
    await this.writeInGroup(entries, inputs)
    return results
  }

  /**
   * Keeps the latest usage of each request still running (replacing its previous checkpoint).
   * A checkpoint that arrives after its request settled is ignored.
   */
  async checkpoint(raw: SettleInput[]): Promise<void> {
    const inputs = readSettleBatch(raw)
    const first = inputs[0]
    if (!first) return
    // Loads the object first: its alarm time is known only then (scheduleAlarm must not move
    // an earlier alarm later).
    await this.ready(first)
    const now = this.clock()
    const sql = this.ctx.storage.sql
    // Written with the group forming now (one commit with the settles and checkpoints beside it).
    const group = this.currentGroup()
    for (const input of inputs) {
      if (this.recentReservations.has(input.reservationId) || input.usage === null) continue
      const settled = sql
        .exec<{ n: number }>(`select count(*) as n from ledger where reservation_id = ?`, input.reservationId)
        .one().n
      if (settled > 0) continue
      group.checkpoints.set(input.reservationId, { json: JSON.stringify(input), at: now })
    }
    this.scheduleAlarm(now + this.orphanAfterMs)
    await group.written
  }

  /** Current rate-limit counters without admitting anything; null when the live balance cannot load. */
  async snapshot(raw: MeteringScope): Promise<RateLimitSnapshot | null> {
    const input = MeteringScopeSchema.parse(raw)
    const ready = await this.ready(input)
    if (typeof ready === 'string') return null
    return ready.limiter.snapshot(ready.plan, this.clock())
  }

  /**
   * The principal's settled rows still waiting for the flush, read from storage only: a row is
   * here from the moment its settle was acknowledged until Postgres has committed it (the flush
   * marks rows flushed after its transaction), so a reader that asks this first and Postgres
   * second misses none. Rows of a settle group not yet written are not settled yet (their
   * callers have no answer) and are left out. Reads nothing from Postgres and binds nothing.
   */
  async unflushedUsage(raw: UnflushedUsageQuery): Promise<LedgerEntry[]> {
    const query = UnflushedUsageQuerySchema.parse(raw)
    const current = this.scope
    if (current && (current.tenantId !== query.tenantId || current.mode !== query.mode)) {
      throw new Error(
        `this RateLimiter serves ${current.tenantId}:${current.mode}, not ${query.tenantId}:${query.mode}`,
      )
    }
    return this.rows(
      `where flushed = 0 and principal = ? and created_at >= ? and created_at < ? order by created_at, seq`,
      query.principal,
      query.from,
      query.to ?? Number.MAX_SAFE_INTEGER,
    ).map((r) => r.entry)
  }

  override async alarm(): Promise<void> {
    this.alarmAt = null
    const scope = this.scope
    if (!scope) return
    const plan = getPlan(scope.planId, this.catalog())
    if (!plan) return
    const now = this.clock()
    await this.settleOrphans(scope, now)
    try {
      const flushed = await this.flushPending(scope, plan, now)
      if (!flushed && this.limiter?.balance && this.store && scope.mode === 'live') {
        const row = await this.store.readBalance(scope.tenantId, plan, now)
        this.applyBalanceRow(row)
      }
    } catch (err) {
      log('error', 'ledger_flush_failed', {
        tenant_id: scope.tenantId,
        mode: scope.mode,
        detail: describeError(err),
      })
      this.scheduleAlarm(this.clock() + RETRY_FLUSH_MS)
      return
    }
    const sql = this.ctx.storage.sql
    sql.exec(`delete from ledger where flushed = 1 and created_at < ?`, now - KEEP_FLUSHED_MS)
    pruneKeyReservations(sql, now - RESERVATION_TTL_MS)
    if (this.pendingCount() > 0) this.scheduleAlarm(this.clock() + this.flushDelayMs)
    const oldestOpen = sql
      .exec<{ at: number | null }>(`select min(updated_at) as at from open_requests`)
      .one().at
    if (oldestOpen !== null) this.scheduleAlarm(oldestOpen + this.orphanAfterMs)
  }

  /** Rows not yet in Postgres. */
  private pendingCount(): number {
    return this.ctx.storage.sql
      .exec<{ n: number }>(`select count(*) as n from ledger where flushed = 0`)
      .one().n
  }

  // -------------------------------------------------------------------------------------------

  /** Settles, as their last checkpoint stands, the requests silent for orphanAfterMs. */
  private async settleOrphans(scope: MeteringScope, now: number): Promise<void> {
    const rows = this.ctx.storage.sql
      .exec<{ settle_json: string }>(
        `select settle_json from open_requests where updated_at <= ? order by updated_at`,
        now - this.orphanAfterMs,
      )
      .toArray()
    if (rows.length === 0) return
    // Such a request never ended, so nothing says what its client finally saw or when: no status, no
    // latency (the console shows "—"), and estimated, as its usage is its last checkpoint.
    const inputs = readSettleBatch(
      rows.map((r) => ({ ...JSON.parse(r.settle_json), estimated: true, status: null, latencyMs: null })),
    )
    const ready = await this.ready(scope)
    this.writeLedger(this.applySettles(ready, inputs).entries, inputs)
    log('warn', 'orphaned_requests_settled', {
      tenant_id: scope.tenantId,
      mode: scope.mode,
      requests: inputs.length,
    })
  }

  private catalog(): PlanCatalog {
    return planCatalogFromEnv(this.env)
  }

  /**
   * Reads a key's spend in the current period of its limit, once (then settles keep it), with
   * other events held back so that no settle of the key slips in between. Returns why it failed.
   */
  private async loadKeySpend(limiter: TenantLimiter, key: KeyLimitInput): Promise<string | null> {
    let failure: string | null = null
    await this.ctx.blockConcurrencyWhile(async () => {
      const now = this.clock()
      if (limiter.keyAccounts.spendReady(key, now) || !this.scope) return
      const store = this.store
      try {
        await loadKeySpend(
          {
            sql: this.ctx.storage.sql,
            loadStored: store && ((query, catalog) => store.loadKeySpend(query, catalog)),
            pending: this.settleGroup?.entries ?? [],
            scope: this.scope,
            catalog: this.catalog(),
            reservationTtlMs: RESERVATION_TTL_MS,
          },
          limiter.keyAccounts,
          key,
          now,
        )
      } catch (err) {
        failure = describeError(err)
      }
    })
    return failure
  }

  /**
   * Records usage in memory: each request id once (a replayed settle is ignored); returns the
   * ledger rows to write (writeLedger or writeInGroup). When the balance cannot be loaded the
   * usage is still recorded (never lose a metered request), without charging credits.
   */
  private applySettles(
    ready: { limiter: TenantLimiter; plan: BillingPlan } | string,
    inputs: readonly SettleInput[],
  ): { results: SettleResult[]; entries: LedgerEntry[] } {
    let limiter: TenantLimiter
    let plan: BillingPlan
    if (typeof ready === 'string') {
      const fallbackPlan = inputs[0] && getPlan(inputs[0].planId, this.catalog())
      if (!fallbackPlan)
        return { results: inputs.map(() => ({ recorded: false, creditsUnits: 0 })), entries: [] }
      log('warn', 'settled_without_balance', { detail: ready })
      plan = fallbackPlan
      limiter = new TenantLimiter(inputs[0]!.mode, null, this.catalog())
    } else {
      ;({ limiter, plan } = ready)
    }
    const now = this.clock()
    let excess = this.recentReservations.size + inputs.length - MAX_RECENT_RESERVATIONS
    for (const [reservationId, at] of this.recentReservations) {
      if (now - at < RECENT_RESERVATIONS_MS && excess <= 0) break
      this.recentReservations.delete(reservationId)
      excess -= 1
    }
    const results: SettleResult[] = []
    const entries: LedgerEntry[] = []
    for (const input of inputs) {
      this.bind(input)
      if (this.recentReservations.has(input.reservationId)) {
        results.push({ recorded: false, creditsUnits: 0 })
        continue
      }
      // A request id the caller reused (x-request-id is the caller's choice) is recorded under a
      // distinct ledger id, so both requests are billed. (Postgres catches reuse across flushes.)
      const settleInput = this.unflushedRequestIds.has(input.requestId)
        ? { ...input, requestId: `${input.requestId}~${input.reservationId.slice(0, 8)}` }
        : input
      const entry = limiter.settle(plan, settleInput, now)
      this.recentReservations.set(input.reservationId, now)
      if (!entry) {
        results.push({ recorded: false, creditsUnits: 0 })
        continue
      }
      entries.push(entry)
      this.unflushedRequestIds.add(entry.requestId)
      results.push({ recorded: true, creditsUnits: entry.creditsUnits })
    }
    return { results, entries }
  }

  /**
   * Group commit: settles (and checkpoints) that reach the object together are written in one
   * statement each, so they share one storage transaction (one WAL commit and fsync) instead of
   * one each. The group is written on the next turn of the event loop, after the calls already
   * queued for this object have joined it; every member's answer waits for that write. Inside one Durable Object all
   * calls share the object's I/O context, so waiting on another call's write is allowed here (a
   * group formed in the calling isolates was not: bench/NOTES.md).
   */
  private writeInGroup(entries: readonly LedgerEntry[], inputs: readonly SettleInput[]): Promise<void> {
    const group = this.currentGroup()
    group.entries.push(...entries)
    group.inputs.push(...inputs)
    return group.written
  }

  /** The group forming now, or a new one whose write is due on the next turn. */
  private currentGroup(): SettleGroup {
    if (this.settleGroup) return this.settleGroup
    const group: SettleGroup = { entries: [], inputs: [], checkpoints: new Map(), written: Promise.resolve() }
    group.written = new Promise<void>((resolve, reject) => {
      setTimeout(() => {
        this.settleGroup = null
        try {
          // Checkpoints first: a settle in the same group then removes its request's checkpoint.
          this.writeCheckpoints(group.checkpoints)
          this.writeLedger(group.entries, group.inputs)
          resolve()
        } catch (err) {
          reject(err)
        }
      }, 0)
    })
    this.settleGroup = group
    return group
  }

  /** Keeps the latest report of each running request (one statement for the group). */
  private writeCheckpoints(checkpoints: ReadonlyMap<string, { json: string; at: number }>): void {
    upsertCheckpoints(this.ctx.storage.sql, checkpoints)
  }

  /**
   * Appends the settled rows to storage in one statement (one implicit transaction with the
   * removal of their open checkpoints) and arms the flush alarm. The caller's answer leaves only
   * once this is durable (the output gate). A failed write resets the object, whose memory
   * already counted the rows: the caller's resend then meets an object rebuilt from storage.
   */
  private writeLedger(entries: readonly LedgerEntry[], inputs: readonly SettleInput[]): void {
    const sql = this.ctx.storage.sql
    try {
      insertLedgerRows(sql, entries)
      closeRequests(
        sql,
        inputs.map((input) => input.reservationId),
      )
    } catch (err) {
      log('error', 'ledger_write_failed', { detail: describeError(err) })
      this.ctx.abort('the ledger could not be written')
      throw err
    }
    if (entries.length > 0) this.scheduleAlarm(this.clock() + this.flushDelayMs)
  }

  /** Binds this object to its tenant/mode on first use, and loads its state once. */
  private async ready(scope: MeteringScope): Promise<{ limiter: TenantLimiter; plan: BillingPlan } | string> {
    const plan = getPlan(scope.planId, this.catalog())
    if (!plan) return `plan "${scope.planId}" is not in the plan catalog`
    this.bind(scope)
    if (this.limiter) return { limiter: this.limiter, plan }
    let failure = 'the rate limiter could not start'
    await this.ctx.blockConcurrencyWhile(async () => {
      if (this.limiter) return
      try {
        this.limiter = await this.load(scope.mode, scope.tenantId, plan)
      } catch (err) {
        failure = describeError(err)
      }
    })
    return this.limiter ? { limiter: this.limiter, plan } : failure
  }

  private bind(scope: MeteringScope): void {
    const current = this.scope
    if (current && (current.tenantId !== scope.tenantId || current.mode !== scope.mode)) {
      throw new Error(
        `this RateLimiter serves ${current.tenantId}:${current.mode}, not ${scope.tenantId}:${scope.mode}`,
      )
    }
    if (current?.planId === scope.planId) return
    this.scope = { tenantId: scope.tenantId, mode: scope.mode, planId: scope.planId }
    this.ctx.storage.sql.exec(
      `insert or replace into meta (key, value) values ('scope', ?)`,
      JSON.stringify(this.scope),
    )
  }

  private async load(mode: MeteringMode, tenantId: string, plan: BillingPlan): Promise<TenantLimiter> {
    const now = this.clock()
    let balance: LimiterBalance | null = null
    if (mode === 'live') {
      if (!this.store) throw new Error('DATABASE_URL is not set, so the live balance cannot be loaded')
      const store = this.store
      const stored = await store.loadBalance(tenantId, plan, now).catch(async () => {
        // One transient failure (a dropped connection) should not refuse a request.
        await new Promise((resolve) => setTimeout(resolve, RETRY_LOAD_MS))
        return store.loadBalance(tenantId, plan, now)
      })
      balance = balanceFromStored(stored)
      for (const { entry } of this.rows(`where flushed = 0 and created_at >= ?`, stored.periodStart)) {
        balance.resourceUse.set(entry.model, (balance.resourceUse.get(entry.model) ?? 0) + entry.quantity)
      }
      this.mergeUnflushed(balance, stored)
      this.balanceReadAt = now
    }
    const limiter = new TenantLimiter(mode, balance, this.catalog())
    for (const { entry } of this.rows(`where created_at > ? order by created_at`, now - RATE_WINDOW_MS)) {
      limiter.restore(entry)
    }
    this.resyncUnflushedRequestIds()
    const sql = this.ctx.storage.sql
    for (const row of sql.exec<{ reservation_id: string; created_at: number }>(
      `select reservation_id, created_at from ledger where created_at > ? order by created_at`,
      now - RECENT_RESERVATIONS_MS,
    ))
      this.recentReservations.set(row.reservation_id, row.created_at)
    this.alarmAt = await this.ctx.storage.getAlarm()
    if (this.alarmAt === null && this.pendingCount() > 0) this.scheduleAlarm(now + this.flushDelayMs)
    return limiter
  }

  /** Postgres' figures plus this object's rows it has not received yet. */
  private mergeUnflushed(balance: LimiterBalance, row: BalanceRow): void {
    const pending = this.ctx.storage.sql
      .exec<{ tokens: number; period_credits: number; all_credits: number }>(
        `select coalesce(sum(case when created_at >= ? then prompt_tokens + completion_tokens else 0 end), 0) as tokens,
                coalesce(sum(case when created_at >= ? then credits_units else 0 end), 0) as period_credits,
                coalesce(sum(credits_units), 0) as all_credits
         from ledger where flushed = 0`,
        row.periodStart,
        row.periodStart,
      )
      .one()
    balance.periodStart = row.periodStart
    balance.periodEnd = billingPeriodAt(row.periodStart).end
    balance.tokensUsed = row.tokensUsed + pending.tokens
    balance.overageUnits = row.overageUnits + pending.period_credits
    balance.creditsUnits = row.creditsUnits - pending.all_credits
    balance.usageCreditsEnabled = row.usageCreditsEnabled
    balance.spendCapCents = row.spendCapCents
  }

  private applyBalanceRow(row: BalanceRow): void {
    const balance = this.limiter?.balance
    if (!balance) return
    if (row.periodStart > balance.periodStart) balance.resourceUse.clear()
    if (row.periodStart < balance.periodStart) return
    this.mergeUnflushed(balance, row)
    this.balanceReadAt = this.clock()
  }

  /** Sends every pending row to Postgres, oldest first; returns whether anything was sent. */
  private async flushPending(
    scope: { tenantId: string; mode: MeteringMode },
    plan: BillingPlan,
    now: number,
  ): Promise<boolean> {
    let sent = false
    for (;;) {
      const batch = this.rows(`where flushed = 0 order by seq limit ?`, FLUSH_BATCH_SIZE)
      if (batch.length === 0) {
        this.resyncUnflushedRequestIds()
        return sent
      }
      if (!this.store) throw new Error('DATABASE_URL is not set: ledger rows cannot be flushed')
      const row = await this.store.flushLedger(
        scope.tenantId,
        scope.mode,
        batch.map((r) => r.entry),
        plan,
        now,
      )
      const lastSeq = batch[batch.length - 1]!.seq
      this.ctx.storage.sql.exec(`update ledger set flushed = 1 where flushed = 0 and seq <= ?`, lastSeq)
      for (const { entry } of batch) this.unflushedRequestIds.delete(entry.requestId)
      if (row) this.applyBalanceRow(row)
      sent = true
      if (batch.length < FLUSH_BATCH_SIZE) {
        this.resyncUnflushedRequestIds()
        return sent
      }
    }
  }

  /**
   * The request ids of rows not yet in Postgres, re-read from storage once a flush has drained: a settle resent after RECENT_RESERVATIONS_MS is added in
   * memory but storage ignores its row, which therefore never flushes to take its id out again.
   */
  private resyncUnflushedRequestIds(): void {
    this.unflushedRequestIds.clear()
    const unflushed = this.ctx.storage.sql.exec<{ request_id: string }>(
      `select request_id from ledger where flushed = 0`,
    )
    for (const row of unflushed) this.unflushedRequestIds.add(row.request_id)
    for (const entry of this.settleGroup?.entries ?? []) this.unflushedRequestIds.add(entry.requestId)
  }

  private rows(clause: string, ...bindings: (string | number)[]): { seq: number; entry: LedgerEntry }[] {
    return this.ctx.storage.sql
      .exec(`select * from ledger ${clause}`, ...bindings)
      .toArray()
      .map(readLedgerRow)
  }

  private keepBalanceFresh(now: number): void {
    if (this.scope?.mode !== 'live' || !this.store) return
    if (now - this.balanceReadAt < this.refreshMs) return
    // Counted as read now so the next requests do not re-arm it; a failed read re-arms itself.
    this.balanceReadAt = now
    this.scheduleAlarm(now)
  }

  /** Arms the one alarm at `at` unless it is already due sooner. */
  private scheduleAlarm(at: number): void {
    if (this.alarmAt !== null && this.alarmAt <= at) return
    this.alarmAt = at
    this.ctx.storage.setAlarm(at).catch((err: unknown) => {
      this.alarmAt = null
      log('error', 'set_alarm_failed', { detail: describeError(err) })
    })
  }
}
