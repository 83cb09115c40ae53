/**
 * The request log's row of a request that failed after its admission (tenant-limiter.ts settles
 * it): what its client got, with nothing used or charged.
 */
import { type LedgerEntry, type MeteringMode, unitOf } from '../../shared/metering/metering.schemas'
import type { SettleRequest } from './tenant-limiter'

/**
 * The request log's row for an admitted request that failed before producing anything (a provider
 * 5xx, a tool's error, a turn that failed or was cancelled before any token): the status its
 * client got, its latency, and nothing used or charged, so balances, allowances and the usage
 * charts' token and credit sums are as without it. A release without a failure status (a
 * duplicate admission given back, a job whose failure its own resource shows) records nothing.
 */
export function failedAfterAdmission(
  request: SettleRequest,
  mode: MeteringMode,
  createdAt: number,
): LedgerEntry | null {
  if (request.status === null || request.status === undefined || request.status < 400) return null
  return {
    reservationId: request.reservationId,
    requestId: request.requestId,
    createdAt,
    principal: request.principal,
    mode,
    endpoint: request.endpoint,
    model: request.model,
    provider: request.provider,
    promptTokens: 0,
    completionTokens: 0,
    cachedTokens: 0,
    reasoningTokens: 0,
    unit: unitOf(request.model),
    quantity: 0,
    creditsUnits: 0,
    estimated: false,
    status: request.status,
    latencyMs: request.latencyMs ?? null,
  }
}
