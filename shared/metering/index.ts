/**
 * Metering as its callers see it: the typed client of the RateLimiter object, its RPC protocol,
 * prices and rate-limit headers. The object and the decisions it makes (windows, reservations,
 * leases, the ledger) live beside it in durable-objects/rate-limiter/. See docs/plans.md.
 */

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
  isMeteredTool,
  type MeteredResource,
  MeteredResourceSchema,
  type UsageUnit,
  unitOf,
} from './metering.schemas'
export {
  type CheckpointUsage,
  type Meter,
  type MeterGrant,
  type MeterUsage,
  meteringObjectName,
  meteringUnavailable,
  openMeter,
  type RateLimiterNamespace,
  type RateLimiterRpc,
} from './metering-client'
export {
  CREDIT_UNITS_PER_CENT,
  centsToUnits,
  estimateCostUnits,
  toolCostUnits,
  unitsToCents,
  usageCostUnits,
} from './pricing'
export { formatResetDuration, rateLimitHeaders } from './rate-limit-headers'
export { CLIENT_CLOSED_REQUEST, outcomeStatus, type WorkOutcome } from './request-status'
export { meterToolCall, type ToolCall, type ToolOutcome } from './tool-metering'
