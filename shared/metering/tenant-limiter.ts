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
 *   In-flight reservations count as used in 3 and 4, so parallel requests cannot overshoot.
 * settle(plan, usage, now) replaces the reservation with the tokens actually used, charges
 * credits for the part beyond the allowance (when usage credits are on) and returns the ledger
 * entry to store. Test mode never touches the allowance or credits (rate limits still apply).
 */
import type { ModelAlias } from '../catalog/model-aliases'
import { checkModelAllowance, checkTokenAllowance, rateLimitedDecision } from '../plans/entitlements'
import { PLAN_CATALOG, type Plan, type PlanCatalog } from '../plans/plan-catalog'
import type { UpgradeDecision } from '../plans/upgrade-decision'
import { billingPeriodAt } from './billing-period'
import type {
  AcquireResult,
  LedgerEntry,
  MeteredUsage,
  MeteringMode,
  RateLimitSnapshot,
  StoredBalance,
} from './metering.schemas'
import { CREDIT_UNITS_PER_CENT, estimateCostUnits, usageCostUnits } from './pricing'
import { SlidingWindow, type WindowEvent } from './sliding-window'

export const RATE_WINDOW_MS = 60_000
/** A reservation never settled (worker crashed) stops counting after this long. */
export const RESERVATION_TTL_MS = 15 * 60_000

export interface LimiterBalance {
  periodStart: number
  periodEnd: number
  tokensUsed: number
  modelTokens: Map<string, number>
  creditsUnits: number
  overageUnits: number
  usageCreditsEnabled: boolean
  spendCapCents: number | null
}

interface Reservation {
  readonly reservationId: string
  readonly model: ModelAlias
  readonly at: number
  readonly tokens: number
  readonly costUnits: number
  readonly tokenEvent: WindowEvent
}

export interface SettleRequest {
  readonly reservationId: string
  readonly requestId: string
  readonly model: ModelAlias
  readonly endpoint: string
  readonly principal: string
  readonly provider: string
  readonly usage: MeteredUsage | null
  readonly estimated: boolean
}

export function balanceFromStored(stored: StoredBalance): LimiterBalance {
  return {
    periodStart: stored.periodStart,
    periodEnd: billingPeriodAt(stored.periodStart).end,
    tokensUsed: stored.tokensUsed,
    modelTokens: new Map(Object.entries(stored.modelTokens)),
    creditsUnits: stored.creditsUnits,
    overageUnits: stored.overageUnits,
    usageCreditsEnabled: stored.usageCreditsEnabled,
    spendCapCents: stored.spendCapCents,
  }
}

export class TenantLimiter {
  readonly requests = new SlidingWindow(RATE_WINDOW_MS)
  readonly tokens = new SlidingWindow(RATE_WINDOW_MS)
  private readonly reservations = new Map<string, Reservation>()
  private reservedTokens = 0
  private reservedCostUnits = 0
  private readonly reservedByModel = new Map<string, number>()

  constructor(
    readonly mode: MeteringMode,
    private balanceState: LimiterBalance | null,
    /** The catalog upgrade decisions pick the required plan from. */
    private readonly catalog: PlanCatalog = PLAN_CATALOG,
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

  /** Re-creates window events from stored ledger rows (after the object restarted). */
  restore(entry: Pick<LedgerEntry, 'createdAt' | 'promptTokens' | 'completionTokens'>): void {
    this.requests.add(entry.createdAt, 1)
    this.tokens.add(entry.createdAt, entry.promptTokens + entry.completionTokens)
  }

  acquire(
    plan: Plan,
    request: { readonly reservationId: string; readonly model: ModelAlias; readonly estimatedTokens: number },
    now: number,
  ): AcquireResult {
    this.expireReservations(now)
    this.rollPeriod(plan, now)
    if (this.reservations.has(request.reservationId))
      return { kind: 'granted', snapshot: this.snapshot(plan, now) }

    const refuse = (decision: UpgradeDecision): AcquireResult => ({
      kind: 'refused',
      decision,
      snapshot: this.snapshot(plan, now),
    })

    const requestCount = this.requests.count(now)
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
    const windowTokens = this.tokens.total(now)
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

    let costUnits = 0
    const balance = this.balanceState
    if (this.mode === 'live' && balance) {
      const resetsAt = new Date(balance.periodEnd).toISOString()
      const modelUsed =
        (balance.modelTokens.get(request.model) ?? 0) + (this.reservedByModel.get(request.model) ?? 0)
      const tier = checkModelAllowance(
        plan,
        request.model,
        { usedTokens: modelUsed, resetsAt, usageCreditsEnabled: balance.usageCreditsEnabled },
        { catalog: this.catalog },
      )
      if (tier) return refuse(tier)
      const used = balance.tokensUsed + this.reservedTokens
      const allowance = checkTokenAllowance(
        plan,
        {
          usedTokens: used,
          resetsAt,
          usageCreditsEnabled: balance.usageCreditsEnabled,
          creditBalanceCents: (balance.creditsUnits - this.reservedCostUnits) / CREDIT_UNITS_PER_CENT,
          overageSpentCents: (balance.overageUnits + this.reservedCostUnits) / CREDIT_UNITS_PER_CENT,
          ...(balance.spendCapCents === null ? {} : { overageCapCents: balance.spendCapCents }),
        },
        { catalog: this.catalog },
      )
      if (allowance) return refuse(allowance)
      if (plan.monthlyTokenAllowance !== null && plan.usageCredits && balance.usageCreditsEnabled) {
        const beyond = tokensBeyond(used, request.estimatedTokens, plan.monthlyTokenAllowance)
        costUnits = estimateCostUnits(request.model, beyond)
      }
    }

    this.requests.add(now, 1)
    const tokenEvent = this.tokens.add(now, request.estimatedTokens)
    this.reservations.set(request.reservationId, {
      reservationId: request.reservationId,
      model: request.model,
      at: now,
      tokens: request.estimatedTokens,
      costUnits,
      tokenEvent,
    })
    this.reservedTokens += request.estimatedTokens
    this.reservedCostUnits += costUnits
    this.reservedByModel.set(
      request.model,
      (this.reservedByModel.get(request.model) ?? 0) + request.estimatedTokens,
    )
    return { kind: 'granted', snapshot: this.snapshot(plan, now) }
  }

  /**
   * Ends a request: the reservation becomes the tokens used (or nothing, when usage is null).
   * Returns the ledger entry to store, or null when nothing was metered.
   */
  settle(plan: Plan, request: SettleRequest, now: number): LedgerEntry | null {
    const reservation = this.takeReservation(request.reservationId)
    const usage = request.usage
    if (!usage) {
      if (reservation) this.tokens.adjust(reservation.tokenEvent, 0)
      return null
    }
    const total = usage.promptTokens + usage.completionTokens
    if (reservation) this.tokens.adjust(reservation.tokenEvent, total)
    else this.tokens.add(now, total)

    let creditsUnits = 0
    const balance = this.balanceState
    if (this.mode === 'live' && balance) {
      this.rollPeriod(plan, now)
      const allowance = plan.monthlyTokenAllowance
      const beyond = allowance === null ? 0 : tokensBeyond(balance.tokensUsed, total, allowance)
      if (beyond > 0 && plan.usageCredits && balance.usageCreditsEnabled) {
        creditsUnits = Math.round((usageCostUnits(request.model, usage) * beyond) / total)
      }
      balance.tokensUsed += total
      balance.modelTokens.set(request.model, (balance.modelTokens.get(request.model) ?? 0) + total)
      balance.overageUnits += creditsUnits
      balance.creditsUnits -= creditsUnits
    }
    return {
      reservationId: request.reservationId,
      requestId: request.requestId,
      createdAt: reservation?.at ?? now,
      principal: request.principal,
      mode: this.mode,
      endpoint: request.endpoint,
      model: request.model,
      provider: request.provider,
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      cachedTokens: Math.min(usage.cachedTokens, usage.promptTokens),
      reasoningTokens: Math.min(usage.reasoningTokens, usage.completionTokens),
      creditsUnits,
      estimated: request.estimated,
    }
  }

  snapshot(plan: Plan, now: number): RateLimitSnapshot {
    const requestCount = this.requests.count(now)
    const windowTokens = this.tokens.total(now)
    return {
      limitRequests: plan.requestsPerMinute,
      remainingRequests: Math.max(0, plan.requestsPerMinute - requestCount),
      resetRequestsMs: Math.ceil(this.requests.msUntilNextExpiry(now)),
      limitTokens: plan.tokensPerMinute,
      remainingTokens: Math.max(0, plan.tokensPerMinute - windowTokens),
      resetTokensMs: Math.ceil(this.tokens.msUntilNextExpiry(now)),
    }
  }

  private takeReservation(reservationId: string): Reservation | null {
    const reservation = this.reservations.get(reservationId)
    if (!reservation) return null
    this.reservations.delete(reservationId)
    this.reservedTokens -= reservation.tokens
    this.reservedCostUnits -= reservation.costUnits
    const left = (this.reservedByModel.get(reservation.model) ?? 0) - reservation.tokens
    if (left > 0) this.reservedByModel.set(reservation.model, left)
    else this.reservedByModel.delete(reservation.model)
    return reservation
  }

  private expireReservations(now: number): void {
    for (const reservation of this.reservations.values()) {
      if (now - reservation.at < RESERVATION_TTL_MS) break
      this.takeReservation(reservation.reservationId)
    }
  }

  /** A new calendar month: allowance and overage start over, included credits are topped up. */
  private rollPeriod(plan: Plan, now: number): void {
    const balance = this.balanceState
    if (!balance || now < balance.periodEnd) return
    const period = billingPeriodAt(now)
    balance.periodStart = period.start
    balance.periodEnd = period.end
    balance.tokensUsed = 0
    balance.modelTokens.clear()
    balance.overageUnits = 0
    balance.creditsUnits = Math.max(balance.creditsUnits, plan.includedCreditsCents * CREDIT_UNITS_PER_CENT)
  }
}

/** How many of `tokens` added on top of `used` fall beyond `allowance`. */
export function tokensBeyond(used: number, tokens: number, allowance: number): number {
  return Math.max(0, used + tokens - allowance) - Math.max(0, used - allowance)
}
