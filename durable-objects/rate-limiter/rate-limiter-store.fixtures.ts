/**
 * Postgres as a RateLimiter sees it, in memory, for the object's tests (rate-limiter*.do.test.ts).
 */
import type { KeySpendQuery } from '../../shared/metering/key-spend'
import { listCostUnits } from '../../shared/metering/key-spend'
import type {
  BalanceRow,
  LedgerEntry,
  MeteringMode,
  StoredBalance,
} from '../../shared/metering/metering.schemas'
import type { PlanCatalog } from '../../shared/plans/plan-catalog'
import { billingPeriodAt } from './billing-period'
import type { MeteringStore } from './metering-store'

/**
 * Postgres as the object sees it, in memory, with the same rules as metering-store.ts: a ledger
 * row is inserted once per (tenant, request id) and only inserted rows change the balance.
 */
export class MemoryStore implements MeteringStore {
  readonly ledger = new Map<string, LedgerEntry>()
  balance: BalanceRow

  /** `now`: the instant whose billing period the balance row is in. */
  constructor(now: number) {
    this.balance = {
      periodStart: billingPeriodAt(now).start,
      tokensUsed: 0,
      creditsUnits: 0,
      overageUnits: 0,
      usageCreditsEnabled: false,
      spendCapCents: null,
    }
  }
  failures = 0
  calls = { load: 0, read: 0, flush: 0, keySpend: 0 }

  private check(): void {
    if (this.failures > 0) {
      this.failures -= 1
      throw new Error('connection refused')
    }
  }

  async loadBalance(): Promise<StoredBalance> {
    this.calls.load += 1
    this.check()
    const resourceUse: Record<string, number> = {}
    for (const e of this.ledger.values())
      if (e.mode === 'live') resourceUse[e.model] = (resourceUse[e.model] ?? 0) + e.quantity
    return { ...this.balance, resourceUse }
  }

  async readBalance(): Promise<BalanceRow> {
    this.calls.read += 1
    this.check()
    return { ...this.balance }
  }

  async loadKeySpend(query: KeySpendQuery, catalog: PlanCatalog): Promise<number> {
    this.calls.keySpend += 1
    this.check()
    let units = 0
    for (const e of this.ledger.values()) {
      if (e.principal !== `key:${query.keyId}` || e.mode !== query.mode || e.createdAt < query.since) continue
      if (query.excludeRequestIds?.includes(e.requestId)) continue
      units += listCostUnits(catalog, e)
    }
    return units
  }

  async flushLedger(
    _tenant: string,
    mode: MeteringMode,
    entries: readonly LedgerEntry[],
  ): Promise<BalanceRow | null> {
    this.calls.flush += 1
    this.check()
    for (const e of entries) {
      if (this.ledger.has(e.reservationId)) continue
      this.ledger.set(e.reservationId, e)
      if (mode === 'live') {
        this.balance = {
          ...this.balance,
          tokensUsed: this.balance.tokensUsed + e.promptTokens + e.completionTokens,
          overageUnits: this.balance.overageUnits + e.creditsUnits,
          creditsUnits: this.balance.creditsUnits - e.creditsUnits,
        }
      }
    }
    return mode === 'live' ? { ...this.balance } : null
  }
}
