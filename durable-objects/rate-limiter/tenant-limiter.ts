/**
 * The decisions the RateLimiter Durable Object makes for one tenant and mode, as a pure,
 * synchronous state machine (the object adds storage and alarms around it). Because a Durable
 * Object runs one event at a time and nothing here awaits, every check-and-update is atomic:
 * N concurrent acquires against a limit of M admit exactly M.
 *
 * acquire(plan, request, now), in the order of docs/plans.md:
 *   1. requests per minute   (sliding one-minute window)  → rate_limited (requests)
 *   2. tokens per minute     (sliding window; the request's estimate is reserved) → rate_limited (tokens)
 *   3. live only: the model's monthly allowance (tier)      → tier_allowance_exhausted
 *   4. live only: the monthly token allowance, then usage credits and the overage cap
 *      → token_allowance_exhausted | overage_cap_reached | insufficient_credits
 *   5. the calling API key's own limits, when it has any (key-account.ts): its requests and
 *      tokens per minute (checked after 2), then its spend at list price, reserving the worst case
 *      → rate_limited | overage_cap_reached (refusals marked `limitOf: 'key'`). Test mode too.
 *   In-flight reservations count as used in 3, 4 and 5, so parallel requests cannot overshoot.
 *   OTLP ingestion (`telemetry_ingest`) is not counted in 1 and 2: it has its own windows, the
 *   plan's ingestRequestsPerMinute and ingestBytesPerMinute (exporters send on their own timers
 *   and must not use up the model requests' budget), then its monthly byte allowance like any
 *   paid tool.
 * settle(plan, usage, now) replaces the reservation with the tokens actually used, charges
 * credits for the part beyond the allowance (when usage credits are on) and returns the ledger
 * entry to store. Test mode never touches the allowance or credits (rate limits still apply).
 *
 * Admission leases (grantLease / returnLease): so that a busy isolate does not pay one RPC per
 * request, the object may hand an isolate a slice of the tenant's headroom — R requests and T
 * tokens for one model, usable for LEASE_TTL_MS — which the isolate then admits from locally.
 * A lease is counted in full at once (R in the requests window, T in the tokens window and as
 * reserved against the model's and the monthly allowance), so leases can never overshoot a
 * limit. A lease is granted only far from every limit: at most 1/LEASE_HEADROOM of what is left
 * of each, and never into usage credits (the credit path stays per request). Near a limit,
 * admission is therefore per request and exact, as before. What a lease did not use comes back
 * with returnLease (the windows and reservations shrink accordingly); each request admitted
 * under it settles like any other, replacing its estimate in the lease with the tokens it used.
 */

import type { ModelAlias } from '../../shared/catalog/model-aliases'
import { listCostUnits, worstCaseCostUnits } from '../../shared/metering/key-spend'
import {
  type AcquireResult,
  isMeteredTool,
  type KeyLimitInput,
  type LedgerEntry,
  type MeteredResource,
  type MeteredUsage,
  type MeteringMode,
  type RateLimitSnapshot,
  type StoredBalance,
  unitOf,
} from '../../shared/metering/metering.schemas'
import {
  CREDIT_UNITS_PER_CENT,
  estimateCostUnits,
  toolCostUnits,
  usageCostUnits,
} from '../../shared/metering/pricing'
import {
  checkModelAllowance,
  checkTokenAllowance,
  checkToolAllowance,
  rateLimitedDecision,
} from '../../shared/plans/entitlements'
import type { BillingPlan, PlanCatalog } from '../../shared/plans/plan-catalog'
import type { UpgradeDecision } from '../../shared/plans/upgrade-decision'
import { billingPeriodAt } from './billing-period'
import { failedAfterAdmission } from './failed-request-row'
import { type KeyAccount, KeyAccounts, keyIdOfPrincipal } from './key-account'
import { SlidingWindow, type WindowEvent } from './sliding-window'

export const RATE_WINDOW_MS = 60_000
/** How long an isolate may admit from a lease. */
export const LEASE_TTL_MS = 1_000
/** A lease takes at most 1/LEASE_HEADROOM of what is left of any limit. */
export const LEASE_HEADROOM = 16
/** A lease smaller than this many requests is not worth an isolate's bookkeeping: none is granted. */
export const LEASE_MIN_REQUESTS = 4
/** Most requests one lease may carry. */
export const LEASE_MAX_REQUESTS = 1024
/** A reservation never settled (worker crashed) stops counting after this long. */
export const RESERVATION_TTL_MS = 15 * 60_000

export interface LimiterBalance {
  periodStart: number
  periodEnd: number
  tokensUsed: number
  /** This period's use per metered resource: tokens per model, units per paid tool. */
  resourceUse: Map<string, number>
  creditsUnits: number
  overageUnits: number
  usageCreditsEnabled: boolean
  spendCapCents: number | null
}

interface Reservation {
  readonly reservationId: string
  readonly model: MeteredResource
  readonly at: number
  readonly tokens: number
  /** What is reserved against the resource's own allowance: tokens for a model, the tool's units. */
  readonly amount: number
  readonly costUnits: number
  readonly tokenEvent: WindowEvent
  /** OTLP ingestion: the bytes counted in the ingestion bytes window (replaced by what was used). */
  readonly bytesEvent?: WindowEvent
  /** A key with limits: its account, the worst-case cost reserved against its spend, its tokens event. */
  readonly key?: {
    readonly account: KeyAccount
    readonly costUnits: number
    readonly tokenEvent: WindowEvent
  }
}

/** The paid tool that has its own per-minute windows. */
const INGESTION: MeteredResource = 'telemetry_ingest'

/** A slice of the headroom, admitted from by one isolate (see the file comment). */
interface Lease {
  readonly leaseId: string
  readonly model: MeteredResource
  readonly at: number
  readonly requestEvent: WindowEvent
  readonly tokenEvent: WindowEvent
  /** Tokens of this lease still reserved against the allowances (T, minus settled estimates and returns). */
  reservedTokens: number
  returned: boolean
}

export interface LeaseRequest {
  readonly leaseId: string
  readonly model: MeteredResource
  /** Requests the isolate would like to admit locally. */
  readonly requests: number
  /** Tokens to reserve per request (the estimate of the request that asked). */
  readonly tokensPerRequest: number
  /** The asking key's limits: such a key gets no lease. */
  readonly key?: KeyLimitInput | undefined
}

export interface LeaseGrant {
  readonly leaseId: string
  readonly requests: number
  readonly tokens: number
  readonly ttlMs: number
}

export interface LeaseReturn {
  readonly leaseId: string
  /** Requests of the lease the isolate did not admit. */
  readonly unusedRequests: number
  /** Tokens of the lease no admitted request reserved. */
  readonly unusedTokens: number
}

export interface SettleRequest {
  /** The lease the request was admitted under (no reservation of its own), if any. */
  readonly leaseId?: string | undefined
  /** With leaseId: the tokens the request reserved from the lease. */
  readonly estimatedTokens?: number | undefined
  readonly reservationId: string
  readonly requestId: string
  readonly model: MeteredResource
  readonly endpoint: string
  readonly principal: string
  readonly provider: string
  readonly usage: MeteredUsage | null
  readonly estimated: boolean
  /** The status the client received (null or absent: unknown, e.g. billed from a checkpoint). */
  readonly status?: number | null | undefined
  /** Admission to settle in ms, as the caller measured it. */
  readonly latencyMs?: number | null | undefined
}

export function balanceFromStored(stored: StoredBalance): LimiterBalance {
  return {
    periodStart: stored.periodStart,
    periodEnd: billingPeriodAt(stored.periodStart).end,
    tokensUsed: stored.tokensUsed,
    resourceUse: new Map(Object.entries(stored.resourceUse)),
    creditsUnits: stored.creditsUnits,
    overageUnits: stored.overageUnits,
    usageCreditsEnabled: stored.usageCreditsEnabled,
    spendCapCents: stored.spendCapCents,
  }
}

export class TenantLimiter {
  readonly requests = new SlidingWindow(RATE_WINDOW_MS)
  readonly tokens = new SlidingWindow(RATE_WINDOW_MS)
  /** OTLP exports and their bytes (after decompression) in the last minute. */
  readonly ingestRequests = new SlidingWindow(RATE_WINDOW_MS)
  readonly ingestBytes = new SlidingWindow(RATE_WINDOW_MS)
  private readonly reservations = new Map<string, Reservation>()
  private reservedTokens = 0
  private reservedCostUnits = 0
  private readonly reservedByModel = new Map<string, number>()
  private readonly leases = new Map<string, Lease>()
  /** The keys with limits this object has seen: their windows, spend and reservations. */
  readonly keyAccounts = new KeyAccounts()

  constructor(
    readonly mode: MeteringMode,
    private balanceState: LimiterBalance | null,
    /** The catalog upgrade decisions pick the required plan from. */
    private readonly catalog: PlanCatalog,
  ) {}

  get balance(): LimiterBalance | null {
    return this.balanceState
  }

  replaceBalance(balance: LimiterBalance): void {
    this.balanceState = balance
  }

  /** In-flight reservations (for tests and diagnostics). */
  get inFlight(): number {
    return this.reservations.size
  }

  /** Open leases (for tests and diagnostics). */
  get leasesOut(): number {
    let open = 0
    for (const lease of this.leases.values()) if (!lease.returned) open += 1
    return open
  }

  /** Re-creates window events from stored ledger rows (after the object restarted). */
  restore(
    entry: Pick<
      LedgerEntry,
      'createdAt' | 'promptTokens' | 'completionTokens' | 'model' | 'quantity' | 'principal'
    >,
  ): void {
    if (entry.model === INGESTION) {
      this.ingestRequests.add(entry.createdAt, 1)
      this.ingestBytes.add(entry.createdAt, entry.quantity)
      return
    }
    this.requests.add(entry.createdAt, 1)
    this.tokens.add(entry.createdAt, entry.promptTokens + entry.completionTokens)
    this.keyAccounts.restoreWindows(
      entry.principal,
      entry.createdAt,
      entry.promptTokens + entry.completionTokens,
    )
  }

  /** The worst case an admitted request reserved against its key's spend (0: none). */
  keyReservationOf(reservationId: string): number {
    return this.reservations.get(reservationId)?.key?.costUnits ?? 0
  }

  acquire(
    plan: BillingPlan,
    request: {
      readonly reservationId: string
      readonly model: MeteredResource
      readonly estimatedTokens: number
      /** A tool's expected use in its unit. */
      readonly estimatedQuantity?: number | undefined
      /** The calling key's own limits (its spend must be loaded: keyAccounts.spendReady). */
      readonly key?: KeyLimitInput | undefined
    },
    now: number,
  ): AcquireResult {
    this.expireReservations(now)
    this.rollPeriod(plan, now)
    if (this.reservations.has(request.reservationId))
      return { kind: 'granted', snapshot: this.snapshot(plan, now) }

    const key = request.key
    const account = key ? this.keyAccounts.account(key.keyId) : null
    const refuse = (decision: UpgradeDecision, limitOf?: 'key'): AcquireResult => ({
      kind: 'refused',
      decision,
      snapshot: this.snapshot(plan, now, key),
      ...(limitOf ? { limitOf } : {}),
    })

    const ingestion = request.model === INGESTION
    if (ingestion) {
      const refusal = this.checkIngestionRate(plan, request.estimatedQuantity ?? 0, now)
      if (refusal) return refuse(refusal)
    }
    const requestCount = ingestion ? 0 : this.requests.total(now)
    if (requestCount + 1 > plan.requestsPerMinute) {
      return refuse(
        rateLimitedDecision(
          plan,
          {
            unit: 'requests',
            used: requestCount + 1,
            retryAfterSeconds: this.requests.msUntilFits(now, 1, plan.requestsPerMinute) / 1000,
            resetsAt: null,
          },
          { catalog: this.catalog },
        ),
      )
    }
    const windowTokens = ingestion ? 0 : this.tokens.total(now)
    if (windowTokens + request.estimatedTokens > plan.tokensPerMinute) {
      const fitsEver = request.estimatedTokens <= plan.tokensPerMinute
      return refuse(
        rateLimitedDecision(
          plan,
          {
            unit: 'tokens',
            used: windowTokens + request.estimatedTokens,
            retryAfterSeconds: fitsEver
              ? this.tokens.msUntilFits(now, request.estimatedTokens, plan.tokensPerMinute) / 1000
              : RATE_WINDOW_MS / 1000,
            resetsAt: null,
          },
          { catalog: this.catalog },
        ),
      )
    }

    if (key && account && !ingestion) {
      const refusal = account.checkRate(plan, key, request.estimatedTokens, now, this.catalog)
      if (refusal) return refuse(refusal, 'key')
    }

    let costUnits = 0
    const tool = isMeteredTool(request.model) ? request.model : null
    const amount = tool ? (request.estimatedQuantity ?? 0) : request.estimatedTokens
    const balance = this.balanceState
    if (this.mode === 'live' && balance) {
      const resetsAt = new Date(balance.periodEnd).toISOString()
      const credits = {
        usageCreditsEnabled: balance.usageCreditsEnabled,
        creditBalanceCents: (balance.creditsUnits - this.reservedCostUnits) / CREDIT_UNITS_PER_CENT,
        overageSpentCents: (balance.overageUnits + this.reservedCostUnits) / CREDIT_UNITS_PER_CENT,
        ...(balance.spendCapCents === null ? {} : { overageCapCents: balance.spendCapCents }),
      }
      const resourceUsed =
        (balance.resourceUse.get(request.model) ?? 0) + (this.reservedByModel.get(request.model) ?? 0)
      if (tool) {
        const refusal = checkToolAllowance(
          plan,
          tool,
          { used: resourceUsed, resetsAt, ...credits },
          { catalog: this.catalog },
        )
        if (refusal) return refuse(refusal)
        const limit = plan.toolAllowances[tool]
        if (limit !== undefined && plan.usageCredits && balance.usageCreditsEnabled) {
          costUnits = toolCostUnits(this.catalog, tool, tokensBeyond(resourceUsed, amount, limit))
        }
      } else {
        const tier = checkModelAllowance(
          plan,
          request.model as ModelAlias,
          { usedTokens: resourceUsed, resetsAt, usageCreditsEnabled: balance.usageCreditsEnabled },
          { catalog: this.catalog },
        )
        if (tier) return refuse(tier)
        const used = balance.tokensUsed + this.reservedTokens
        const allowance = checkTokenAllowance(
          plan,
          { usedTokens: used, resetsAt, ...credits },
          { catalog: this.catalog },
        )
        if (allowance) return refuse(allowance)
        if (plan.monthlyTokenAllowance !== null && plan.usageCredits && balance.usageCreditsEnabled) {
          const beyond = tokensBeyond(used, request.estimatedTokens, plan.monthlyTokenAllowance)
          costUnits = estimateCostUnits(request.model as ModelAlias, beyond)
        }
      }
    }

    let keyCharge: Reservation['key']
    if (key && account) {
      account.roll(now)
      const worst =
        key.spendLimitUnits === undefined
          ? 0
          : worstCaseCostUnits(
              this.catalog,
              request.model,
              request.estimatedTokens,
              request.estimatedQuantity,
            )
      const refusal = account.checkSpend(plan, key, worst, this.catalog)
      if (refusal) return refuse(refusal, 'key')
      account.requests.add(now, 1)
      account.reservedUnits += worst
      keyCharge = { account, costUnits: worst, tokenEvent: account.tokens.add(now, request.estimatedTokens) }
    }

    let bytesEvent: WindowEvent | undefined
    if (ingestion) {
      this.ingestRequests.add(now, 1)
      bytesEvent = this.ingestBytes.add(now, amount)
    } else {
      this.requests.add(now, 1)
    }
    const tokenEvent = this.tokens.add(now, request.estimatedTokens)
    this.reservations.set(request.reservationId, {
      reservationId: request.reservationId,
      model: request.model,
      at: now,
      tokens: request.estimatedTokens,
      amount,
      costUnits,
      tokenEvent,
      ...(bytesEvent ? { bytesEvent } : {}),
      ...(keyCharge ? { key: keyCharge } : {}),
    })
    this.reservedTokens += request.estimatedTokens
    this.reservedCostUnits += costUnits
    this.reserveForModel(request.model, amount)
    return { kind: 'granted', snapshot: this.snapshot(plan, now, key) }
  }

  /** The ingestion windows: one more export of `bytes` within the plan's per-minute limits? */
  private checkIngestionRate(plan: BillingPlan, bytes: number, now: number): UpgradeDecision | null {
    const exports = this.ingestRequests.total(now)
    if (exports + 1 > plan.ingestRequestsPerMinute) {
      return rateLimitedDecision(
        plan,
        {
          unit: 'requests',
          used: exports + 1,
          retryAfterSeconds: this.ingestRequests.msUntilFits(now, 1, plan.ingestRequestsPerMinute) / 1000,
          perMinuteOf: (p) => p.ingestRequestsPerMinute,
        },
        { catalog: this.catalog },
      )
    }
    const windowBytes = this.ingestBytes.total(now)
    if (windowBytes + bytes > plan.ingestBytesPerMinute) {
      const fitsEver = bytes <= plan.ingestBytesPerMinute
      return rateLimitedDecision(
        plan,
        {
          unit: 'bytes',
          used: windowBytes + bytes,
          retryAfterSeconds: fitsEver
            ? this.ingestBytes.msUntilFits(now, bytes, plan.ingestBytesPerMinute) / 1000
            : RATE_WINDOW_MS / 1000,
          perMinuteOf: (p) => p.ingestBytesPerMinute,
        },
        { catalog: this.catalog },
      )
    }
    return null
  }

  /**
   * A lease of the headroom for an isolate, or null when the tenant is too close to a limit for
   * one (or the lease id is already known). Call right after an admitted acquire, in the same
   * event, so the decision and the bookkeeping are one atomic step.
   */
  grantLease(plan: BillingPlan, request: LeaseRequest, now: number): LeaseGrant | null {
    // Paid tools are admitted per request: their allowances are not in tokens. So is every
    // request of a key with limits (a lease would admit past the key's own checks).
    if (this.leases.has(request.leaseId) || isMeteredTool(request.model) || request.key) return null
    const perRequest = Math.max(1, request.tokensPerRequest)
    let requests = Math.min(
      request.requests,
      LEASE_MAX_REQUESTS,
      Math.floor((plan.requestsPerMinute - this.requests.total(now)) / LEASE_HEADROOM),
    )
    let tokenRoom = (plan.tokensPerMinute - this.tokens.total(now)) / LEASE_HEADROOM
    const balance = this.balanceState
    if (this.mode === 'live' && balance) {
      if (plan.monthlyTokenAllowance !== null) {
        tokenRoom = Math.min(
          tokenRoom,
          (plan.monthlyTokenAllowance - balance.tokensUsed - this.reservedTokens) / LEASE_HEADROOM,
        )
      }
      const modelLimit = plan.modelAllowances[request.model]
      if (modelLimit !== undefined) {
        const modelUsed =
          (balance.resourceUse.get(request.model) ?? 0) + (this.reservedByModel.get(request.model) ?? 0)
        tokenRoom = Math.min(tokenRoom, (modelLimit - modelUsed) / LEASE_HEADROOM)
      }
    }
    requests = Math.min(requests, Math.floor(tokenRoom / perRequest))
    if (!(requests >= LEASE_MIN_REQUESTS)) return null
    const tokens = requests * perRequest
    this.leases.set(request.leaseId, {
      leaseId: request.leaseId,
      model: request.model,
      at: now,
      requestEvent: this.requests.add(now, requests),
      tokenEvent: this.tokens.add(now, tokens),
      reservedTokens: tokens,
      returned: false,
    })
    this.reservedTokens += tokens
    this.reserveForModel(request.model, tokens)
    return { leaseId: request.leaseId, requests, tokens, ttlMs: LEASE_TTL_MS }
  }

  /** What an isolate did not use of a lease comes back; later returns of the same lease are ignored. */
  returnLease(lease: LeaseReturn): void {
    const held = this.leases.get(lease.leaseId)
    if (!held || held.returned) return
    held.returned = true
    const requests = Math.min(Math.max(0, lease.unusedRequests), held.requestEvent.amount)
    this.requests.adjust(held.requestEvent, held.requestEvent.amount - requests)
    const tokens = Math.min(Math.max(0, lease.unusedTokens), held.reservedTokens)
    this.tokens.adjust(held.tokenEvent, Math.max(0, held.tokenEvent.amount - tokens))
    this.releaseLeaseTokens(held, tokens)
    if (held.reservedTokens <= 0) this.leases.delete(held.leaseId)
  }

  /**
   * Ends a request: the reservation becomes the tokens used (or nothing, when usage is null).
   * Returns the ledger entry to store: the usage, or for a request released with a failure status
   * its zero-charge row for the request log; null when there is nothing to record.
   */
  settle(plan: BillingPlan, request: SettleRequest, now: number): LedgerEntry | null {
    const lease = request.leaseId === undefined ? undefined : this.leases.get(request.leaseId)
    const reservation = lease ? null : this.takeReservation(request.reservationId)
    this.keyAccounts.releaseRestored(request.reservationId)
    const usage = request.usage
    const total = usage ? usage.promptTokens + usage.completionTokens : 0
    const tool = isMeteredTool(request.model) ? request.model : null
    const quantity = tool ? (usage?.quantity ?? 0) : total
    if (lease) {
      // The request's estimate in the lease becomes the tokens it used.
      const estimate = Math.min(Math.max(0, request.estimatedTokens ?? 0), lease.reservedTokens)
      this.tokens.adjust(lease.tokenEvent, Math.max(0, lease.tokenEvent.amount - estimate + total))
      this.releaseLeaseTokens(lease, estimate)
      if (lease.returned && lease.reservedTokens <= 0) this.leases.delete(lease.leaseId)
    } else if (reservation) {
      this.tokens.adjust(reservation.tokenEvent, total)
      if (reservation.key) reservation.key.account.tokens.adjust(reservation.key.tokenEvent, total)
      // An export that was not forwarded (usage null) gives its bytes back to the minute.
      if (reservation.bytesEvent) this.ingestBytes.adjust(reservation.bytesEvent, quantity)
    } else if (usage && request.model === INGESTION) {
      this.ingestBytes.add(now, quantity)
    } else if (usage) {
      this.tokens.add(now, total)
    }
    const createdAt = reservation?.at ?? lease?.at ?? now
    if (!usage) return failedAfterAdmission(request, this.mode, createdAt)
    // The key's spend: the list price, in test mode too (a key's budget behaves the same in both).
    const keyId = keyIdOfPrincipal(request.principal)
    const account = keyId === null ? undefined : this.keyAccounts.get(keyId)
    if (account) {
      account.roll(now)
      account.charge(
        createdAt,
        listCostUnits(this.catalog, { model: request.model, ...usage, quantity: tool ? quantity : total }),
      )
    }

    let creditsUnits = 0
    const balance = this.balanceState
    if (this.mode === 'live' && balance) {
      this.rollPeriod(plan, now)
      const resourceUsed = balance.resourceUse.get(request.model) ?? 0
      if (tool) {
        const limit = plan.toolAllowances[tool]
        const beyond = limit === undefined ? 0 : tokensBeyond(resourceUsed, quantity, limit)
        if (beyond > 0 && plan.usageCredits && balance.usageCreditsEnabled) {
          creditsUnits = toolCostUnits(this.catalog, tool, beyond)
        }
      } else {
        const allowance = plan.monthlyTokenAllowance
        const beyond = allowance === null ? 0 : tokensBeyond(balance.tokensUsed, total, allowance)
        if (beyond > 0 && plan.usageCredits && balance.usageCreditsEnabled) {
          creditsUnits = Math.round((usageCostUnits(request.model as ModelAlias, usage) * beyond) / total)
        }
        balance.tokensUsed += total
      }
      balance.resourceUse.set(request.model, resourceUsed + quantity)
      balance.overageUnits += creditsUnits
      balance.creditsUnits -= creditsUnits
    }
    return {
      reservationId: request.reservationId,
      requestId: request.requestId,
      createdAt,
      principal: request.principal,
      mode: this.mode,
      endpoint: request.endpoint,
      model: request.model,
      provider: request.provider,
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      cachedTokens: Math.min(usage.cachedTokens, usage.promptTokens),
      reasoningTokens: Math.min(usage.reasoningTokens, usage.completionTokens),
      unit: unitOf(request.model),
      quantity,
      creditsUnits,
      estimated: request.estimated,
      status: request.status ?? null,
      latencyMs: request.latencyMs ?? null,
    }
  }

  /**
   * The x-ratelimit-* figures: the plan's windows, or the key's own where its limit leaves less
   * (the headers describe the limit that binds).
   */
  snapshot(plan: BillingPlan, now: number, key?: KeyLimitInput): RateLimitSnapshot {
    let requests = { limit: plan.requestsPerMinute, window: this.requests }
    let tokens = { limit: plan.tokensPerMinute, window: this.tokens }
    const account = key ? this.keyAccounts.get(key.keyId) : undefined
    if (key && account) {
      const left = (w: { limit: number; window: SlidingWindow }) => w.limit - w.window.total(now)
      if (key.requestsPerMinute !== undefined) {
        const own = { limit: key.requestsPerMinute, window: account.requests }
        if (left(own) < left(requests)) requests = own
      }
      if (key.tokensPerMinute !== undefined) {
        const own = { limit: key.tokensPerMinute, window: account.tokens }
        if (left(own) < left(tokens)) tokens = own
      }
    }
    return {
      limitRequests: requests.limit,
      remainingRequests: Math.max(0, requests.limit - requests.window.total(now)),
      resetRequestsMs: Math.ceil(requests.window.msUntilNextExpiry(now)),
      limitTokens: tokens.limit,
      remainingTokens: Math.max(0, tokens.limit - tokens.window.total(now)),
      resetTokensMs: Math.ceil(tokens.window.msUntilNextExpiry(now)),
    }
  }

  private reserveForModel(model: MeteredResource, tokens: number): void {
    this.reservedByModel.set(model, (this.reservedByModel.get(model) ?? 0) + tokens)
  }

  private releaseForModel(model: MeteredResource, tokens: number): void {
    const left = (this.reservedByModel.get(model) ?? 0) - tokens
    if (left > 0) this.reservedByModel.set(model, left)
    else this.reservedByModel.delete(model)
  }

  private releaseLeaseTokens(lease: Lease, tokens: number): void {
    lease.reservedTokens -= tokens
    this.reservedTokens -= tokens
    this.releaseForModel(lease.model, tokens)
  }

  private takeReservation(reservationId: string): Reservation | null {
    const reservation = this.reservations.get(reservationId)
    if (!reservation) return null
    this.reservations.delete(reservationId)
    if (reservation.key) reservation.key.account.reservedUnits -= reservation.key.costUnits
    this.reservedTokens -= reservation.tokens
    this.reservedCostUnits -= reservation.costUnits
    this.releaseForModel(reservation.model, reservation.amount)
    return reservation
  }

  /**
   * Reservations and leases of requests that never settled (their isolate went away) stop
   * counting against the allowances after RESERVATION_TTL_MS; a lease that was never returned
   * stays counted in full in the one-minute windows, which can only err on the safe side.
   */
  private expireReservations(now: number): void {
    for (const reservation of this.reservations.values()) {
      if (now - reservation.at < RESERVATION_TTL_MS) break
      this.takeReservation(reservation.reservationId)
    }
    this.keyAccounts.expireRestored(now, RESERVATION_TTL_MS)
    for (const lease of this.leases.values()) {
      if (now - lease.at < RESERVATION_TTL_MS) break
      this.releaseLeaseTokens(lease, lease.reservedTokens)
      this.leases.delete(lease.leaseId)
    }
  }

  /** A new calendar month: allowance and overage start over, included credits are topped up. */
  private rollPeriod(plan: BillingPlan, now: number): void {
    const balance = this.balanceState
    if (!balance || now < balance.periodEnd) return
    const period = billingPeriodAt(now)
    balance.periodStart = period.start
    balance.periodEnd = period.end
    balance.tokensUsed = 0
    balance.resourceUse.clear()
    balance.overageUnits = 0
    balance.creditsUnits = Math.max(balance.creditsUnits, plan.includedCreditsCents * CREDIT_UNITS_PER_CENT)
  }
}

/** How many of `tokens` added on top of `used` fall beyond `allowance`. */
export function tokensBeyond(used: number, tokens: number, allowance: number): number {
  return Math.max(0, used + tokens - allowance) - Math.max(0, used - allowance)
}
