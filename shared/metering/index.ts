/** Metering: rate limits, allowances, credits and the usage ledger. See docs/plans.md. */
export { type BillingPeriod, billingPeriodAt } from './billing-period'
export type {
  AcquireInput,
  AcquireResult,
  BalanceRow,
  LedgerEntry,
  MeteredUsage,
  MeteringMode,
  MeteringScope,
  RateLimitSnapshot,
  SettleInput,
  SettleResult,
  StoredBalance,
} from './metering.schemas'
export {
  type Meter,
  type MeterGrant,
  type MeterUsage,
  meteringObjectName,
  meteringUnavailable,
  openMeter,
  type RateLimiterNamespace,
} from './metering-client'
export {
  FLUSH_BATCH_SIZE,
  flushLedger,
  loadBalance,
  type MeteringStore,
  postgresMeteringStore,
  readBalance,
} from './metering-store'
export {
  CREDIT_UNITS_PER_CENT,
  centsToUnits,
  estimateCostUnits,
  unitsToCents,
  usageCostUnits,
} from './pricing'
export { formatResetDuration, rateLimitHeaders } from './rate-limit-headers'
export { SlidingWindow } from './sliding-window'
export { RATE_WINDOW_MS, TenantLimiter, tokensBeyond } from './tenant-limiter'
