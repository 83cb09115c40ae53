/**
 * One API key's own limits inside its tenant's RateLimiter (issue 29; docs/plans.md, "Per-key
 * limits"): its per-minute windows and its spend at list price in the current period of its
 * spend limit. TenantLimiter checks these in the same synchronous step as the plan's limits, so
 * concurrent requests of a key cannot overshoot: each admission reserves its worst-case cost
 * (prompt + output budget, every token at the dearer price) until it settles with its real cost.
 *
 * The spend is loaded once per period kind (the object's ledger rows of the key not yet in
 * Postgres, plus Postgres' rows: rate-limiter.do.ts), then kept in memory by the settles. Rows are
 * counted in the period of their `created_at` (the admission), as the load counts them.
 */
import type { KeyLimitInput } from '../../shared/metering/metering.schemas'
import { type SpendPeriod, spendPeriodAt } from '../../shared/metering/spend-period'
import { keyRateDecision, keySpendDecision } from '../../shared/plans/key-limit-decisions'
import type { BillingPlan, PlanCatalog } from '../../shared/plans/plan-catalog'
import type { UpgradeDecision } from '../../shared/plans/upgrade-decision'
import { SlidingWindow } from './sliding-window'

const RATE_WINDOW_MS = 60_000

/** `key:<id>` (principalId) → the key id; null for another principal. */
export function keyIdOfPrincipal(principal: string): string | null {
  return principal.startsWith('key:') ? principal.slice(4) : null
}

export class KeyAccount {
  readonly requests = new SlidingWindow(RATE_WINDOW_MS)
  readonly tokens = new SlidingWindow(RATE_WINDOW_MS)
  /** The period the spend is counted in; null until loaded (or for a key without a spend limit). */
  period: SpendPeriod | null = null
  /** Settled list cost of the key's requests admitted in `period`, in credit units. */
  spentUnits = 0
  /** Worst-case cost of the key's requests in flight. */
  reservedUnits = 0

  constructor(readonly keyId: string) {}

  /** Whether the spend for this limit's period kind is known (false: the object must load it first). */
  spendReady(key: KeyLimitInput, now: number): boolean {
    if (key.spendLimitUnits === undefined || key.period === undefined) return true
    if (this.period?.kind !== key.period) return false
    this.roll(now)
    return true
  }

  /** The spend read from storage for the period holding `now`. */
  loadSpend(period: SpendPeriod, spentUnits: number): void {
    this.period = period
    this.spentUnits = spentUnits
  }

  /** A new day, week or month: the spend starts over (`total` never resets). */
  roll(now: number): void {
    const period = this.period
    if (!period || period.end === null || now < period.end) return
    this.period = spendPeriodAt(period.kind, now)
    this.spentUnits = 0
  }

  /** A settled request's list cost, counted if it was admitted in the current period. */
  charge(createdAt: number, costUnits: number): void {
    if (this.period && createdAt >= this.period.start) this.spentUnits += costUnits
  }

  /** The key's per-minute limits: one more request of `tokens`? */
  checkRate(plan: BillingPlan, key: KeyLimitInput, tokens: number, now: number, catalog: PlanCatalog) {
    if (key.requestsPerMinute !== undefined) {
      const count = this.requests.total(now)
      if (count + 1 > key.requestsPerMinute) {
        return keyRateDecision(
          plan,
          {
            keyId: this.keyId,
            unit: 'requests',
            used: count + 1,
            limit: key.requestsPerMinute,
            retryAfterSeconds: this.requests.msUntilFits(now, 1, key.requestsPerMinute) / 1000,
          },
          catalog,
        )
      }
    }
    if (key.tokensPerMinute !== undefined) {
      const windowTokens = this.tokens.total(now)
      if (windowTokens + tokens > key.tokensPerMinute) {
        return keyRateDecision(
          plan,
          {
            keyId: this.keyId,
            unit: 'tokens',
            used: windowTokens + tokens,
            limit: key.tokensPerMinute,
            retryAfterSeconds:
              tokens <= key.tokensPerMinute
                ? this.tokens.msUntilFits(now, tokens, key.tokensPerMinute) / 1000
                : RATE_WINDOW_MS / 1000,
          },
          catalog,
        )
      }
    }
    return null
  }

  /** The key's spend limit: may a request costing at most `worstUnits` start? */
  checkSpend(
    plan: BillingPlan,
    key: KeyLimitInput,
    worstUnits: number,
    catalog: PlanCatalog,
  ): UpgradeDecision | null {
    if (key.spendLimitUnits === undefined || !this.period) return null
    const used = this.spentUnits + this.reservedUnits
    if (used + worstUnits <= key.spendLimitUnits) return null
    return keySpendDecision(
      plan,
      { keyId: this.keyId, usedUnits: used, limitUnits: key.spendLimitUnits, resetsAt: this.period.end },
      catalog,
    )
  }
}

/**
 * The accounts of the keys with limits that this object has seen, and the worst cases reserved
 * against their spend before the object restarted (read back from its storage, `key_reservations`,
 * and held until their request settles or expires).
 */
export class KeyAccounts {
  private readonly accounts = new Map<string, KeyAccount>()
  private readonly restored = new Map<
    string,
    { readonly account: KeyAccount; readonly costUnits: number; readonly at: number }
  >()

  get(keyId: string): KeyAccount | undefined {
    return this.accounts.get(keyId)
  }

  /** The key's account (created empty on first sight). */
  account(keyId: string): KeyAccount {
    let account = this.accounts.get(keyId)
    if (!account) {
      account = new KeyAccount(keyId)
      this.accounts.set(keyId, account)
    }
    return account
  }

  /** Whether the key's spend for its limit's period is in memory (else the object loads it first). */
  spendReady(key: KeyLimitInput, now: number): boolean {
    return this.accounts.get(key.keyId)?.spendReady(key, now) ?? key.spendLimitUnits === undefined
  }

  /** A stored ledger row of a key, back in its windows (after a restart). */
  restoreWindows(principal: string, at: number, tokens: number): void {
    const keyId = keyIdOfPrincipal(principal)
    if (keyId === null) return
    const account = this.account(keyId)
    account.requests.add(at, 1)
    account.tokens.add(at, tokens)
  }

  /** A reservation of the key's spend made before a restart, still open (its request may yet settle). */
  restoreReservation(keyId: string, reservationId: string, costUnits: number, at: number): void {
    if (this.restored.has(reservationId)) return
    const account = this.account(keyId)
    account.reservedUnits += costUnits
    this.restored.set(reservationId, { account, costUnits, at })
  }

  /** The request of a restored reservation ended: its worst case is no longer held. */
  releaseRestored(reservationId: string): void {
    const held = this.restored.get(reservationId)
    if (!held) return
    this.restored.delete(reservationId)
    held.account.reservedUnits -= held.costUnits
  }

  /** Restored reservations older than `ttlMs` (their request is gone) stop counting. */
  expireRestored(now: number, ttlMs: number): void {
    for (const [reservationId, held] of this.restored) {
      if (now - held.at >= ttlMs) this.releaseRestored(reservationId)
    }
  }
}
