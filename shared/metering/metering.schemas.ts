/**
 * The RateLimiter Durable Object's RPC protocol and storage rows, as zod schemas: every call is
 * validated when it reaches the object (a boundary like HTTP), and rows read back from its
 * SQLite storage are validated before use.
 *
 * One object per tenant and mode (`<tenantId>:live`, `<tenantId>:test`): see docs/plans.md.
 */
import { z } from 'zod'
import { MODEL_ALIASES, type ModelAlias } from '../catalog/model-aliases'
import { METERED_TOOL_UNITS, METERED_TOOLS, type MeteredTool } from '../plans/plan-catalog'
import type { UpgradeDecisionSchema } from '../plans/upgrade-decision'
import { SPEND_PERIODS } from './spend-period'

export const METERING_MODES = ['live', 'test'] as const
export type MeteringMode = (typeof METERING_MODES)[number]

const Count = z.int().min(0)
const TenantId = z.guid()
const RequestId = z.string().min(1).max(200)
/** The HTTP status a request's client received (see docs/plans.md, "The request log"). */
const HttpStatus = z.int().min(100).max(599)
/**
 * Chosen by the client for each admitted request (a UUID). Request ids come from the caller's
 * x-request-id and may repeat; reservations and ledger rows are keyed by this instead, so a
 * reused request id can neither share a reservation nor escape metering.
 */
const ReservationId = z.string().min(1).max(64)

/**
 * What a request is metered on: the model alias it ran on (tokens), or the paid tool it used
 * (web_search: requests; transcription: seconds of audio). Carried in the `model` fields of the
 * protocol and the ledger.
 */
export const MeteredResourceSchema = z.enum([...MODEL_ALIASES, ...METERED_TOOLS])
export type MeteredResource = z.infer<typeof MeteredResourceSchema>

export const USAGE_UNITS = ['tokens', 'requests', 'seconds', 'bytes'] as const
export type UsageUnit = (typeof USAGE_UNITS)[number]

export function isMeteredTool(resource: MeteredResource): resource is MeteredTool {
  return (METERED_TOOLS as readonly string[]).includes(resource)
}

/** The unit a resource is measured in: tokens for models, the tool's own unit for tools. */
export function unitOf(resource: MeteredResource): UsageUnit {
  return isMeteredTool(resource) ? METERED_TOOL_UNITS[resource] : 'tokens'
}

export type { MeteredTool, ModelAlias }

/** Which object a call is for; the object checks it is the one it serves. */
export const MeteringScopeSchema = z.object({
  tenantId: TenantId,
  mode: z.enum(METERING_MODES),
  planId: z.string().min(1).max(64),
})
export type MeteringScope = z.infer<typeof MeteringScopeSchema>

export const MeteredUsageSchema = z.object({
  promptTokens: Count,
  completionTokens: Count,
  /** Part of promptTokens. */
  cachedTokens: Count,
  /** Part of completionTokens. */
  reasoningTokens: Count,
  /** A tool's use in its own unit (web_search: 1 request; transcription: seconds of audio). */
  quantity: Count.optional(),
})
export type MeteredUsage = z.infer<typeof MeteredUsageSchema>

/** Chosen by the isolate that asks for an admission lease (a UUID). */
const LeaseId = z.string().min(1).max(64)

export const SettleInputSchema = MeteringScopeSchema.extend({
  reservationId: ReservationId,
  /** The admission lease the request was admitted under (it then has no reservation of its own). */
  leaseId: LeaseId.optional(),
  /** With leaseId: the tokens the request reserved from the lease (replaced by its usage). */
  estimatedTokens: Count.optional(),
  /** The request id the caller saw (x-request-id), recorded in the ledger. */
  requestId: RequestId,
  model: MeteredResourceSchema,
  /** e.g. `chat.completions`, `code.turns`, `code.search`, `code.transcribe`. */
  endpoint: z.string().min(1).max(64),
  /** `key:<id>` or `sub:<subject>`. */
  principal: z.string().min(1).max(256),
  /** Provider id that served the request (`svc-test-mode` in test mode). */
  provider: z.string().min(1).max(64),
  /**
   * null: nothing was produced (upstream refused or failed before answering) → the reservation is
   * released; with a failure status (400 or more) a zero-charge row records it in the request log,
   * otherwise no row.
   */
  usage: MeteredUsageSchema.nullable(),
  /** True when the usage was counted with the tokenizer (stream cut, upstream sent none). */
  estimated: z.boolean(),
  /**
   * The status the client received (a stream that ended in an error event: 502; cancelled by the
   * client: 499). Absent or null from a checkpoint (the request has not ended) and from callers
   * older than the field.
   */
  status: HttpStatus.nullable().optional(),
  /** Milliseconds from admission to the settle (a stream's last byte), measured by the caller. */
  latencyMs: Count.nullable().optional(),
})
export type SettleInput = z.infer<typeof SettleInputSchema>

/** Most settles one call may carry. */
export const MAX_SETTLE_BATCH = 1000
export const SettleBatchSchema = z.array(SettleInputSchema).max(MAX_SETTLE_BATCH)

/** Most requests an isolate may ask one lease for. */
export const MAX_LEASE_REQUESTS = 1024

export const LeaseReturnSchema = z.object({
  leaseId: LeaseId,
  unusedRequests: Count,
  unusedTokens: Count,
})
export type LeaseReturnInput = z.infer<typeof LeaseReturnSchema>
export const LeaseReturnsSchema = z.array(LeaseReturnSchema).max(64)

export const KeyLimitInputSchema = z.object({
  keyId: z.guid(),
  /** The spend limit at list price, in credit units (1e-6 USD), per `period`. */
  spendLimitUnits: z.int().min(1).optional(),
  period: z.enum(SPEND_PERIODS).optional(),
  requestsPerMinute: z.int().min(1).optional(),
  tokensPerMinute: z.int().min(1).optional(),
})
export type KeyLimitInput = z.infer<typeof KeyLimitInputSchema>

export const AcquireInputSchema = MeteringScopeSchema.extend({
  reservationId: ReservationId,
  model: MeteredResourceSchema,
  /** Tokens the request may use: prompt tokens (counted) + the output budget. Reserved until settled. */
  estimatedTokens: Count,
  /** A tool's expected use in its unit (reserved against its monthly allowance until settled). */
  estimatedQuantity: Count.optional(),
  /**
   * Asks for an admission lease besides admitting this request: up to `requests` more requests
   * of this model, `tokensPerRequest` tokens each, to admit locally (see tenant-limiter.ts).
   */
  lease: z
    .object({ leaseId: LeaseId, requests: z.int().min(1).max(MAX_LEASE_REQUESTS), tokensPerRequest: Count })
    .optional(),
  /** Leases the isolate is done with, and what it did not use of them. */
  leaseReturns: LeaseReturnsSchema.optional(),
  /**
   * The calling API key's own limits, checked in the same step as the plan's (docs/plans.md,
   * "Per-key limits"). Absent for a key without limits and for other credentials.
   */
  key: KeyLimitInputSchema.optional(),
})
export type AcquireInput = z.infer<typeof AcquireInputSchema>

export const RateLimitSnapshotSchema = z.object({
  limitRequests: Count,
  remainingRequests: Count,
  /** Milliseconds until the oldest counted request leaves the one-minute window (0 when none). */
  resetRequestsMs: Count,
  limitTokens: Count,
  remainingTokens: Count,
  resetTokensMs: Count,
})
export type RateLimitSnapshot = z.infer<typeof RateLimitSnapshotSchema>

/**
 * What `Meter.acquire` returns and `Meter.settle` needs back: a plain object, so a caller that
 * settles later (after a restart) can store it and validate it with this schema when reading it.
 */
export const MeterGrantSchema = z.object({
  reservationId: ReservationId,
  /** Set when the request was admitted locally under an admission lease. */
  leaseId: LeaseId.optional(),
  /** With leaseId: the tokens reserved from the lease for this request. */
  estimatedTokens: Count.optional(),
  requestId: RequestId,
  model: MeteredResourceSchema,
  /** Epoch ms when the request asked for admission: its latency is measured from here. Absent in grants stored before it existed. */
  admittedAt: Count.optional(),
  snapshot: RateLimitSnapshotSchema,
  /** x-ratelimit-* headers for the response. */
  headers: z.record(z.string(), z.string()),
})
export type MeterGrant = z.infer<typeof MeterGrantSchema>

export interface LeaseGrantResult {
  readonly leaseId: string
  readonly requests: number
  readonly tokens: number
  readonly ttlMs: number
}

export type AcquireResult =
  | {
      readonly kind: 'granted'
      readonly snapshot: RateLimitSnapshot
      /** Present when a lease was asked for and the tenant is far enough from its limits. */
      readonly lease?: LeaseGrantResult
    }
  | {
      readonly kind: 'refused'
      readonly decision: z.infer<typeof UpgradeDecisionSchema>
      readonly snapshot: RateLimitSnapshot
      /** 'key': the calling key's own limit refused, not the plan's. */
      readonly limitOf?: 'key'
    }
  /** The balance could not be loaded (database unreachable): the request is not admitted. */
  | { readonly kind: 'unavailable'; readonly detail: string }

export interface SettleResult {
  /** False when this request id was already settled (idempotent) or nothing was metered. */
  readonly recorded: boolean
  readonly creditsUnits: number
}

/** One metered request, as the object stores it until it is flushed to Postgres. */
export const LedgerEntrySchema = z.object({
  reservationId: ReservationId,
  requestId: RequestId,
  createdAt: Count,
  principal: z.string(),
  mode: z.enum(METERING_MODES),
  endpoint: z.string(),
  model: MeteredResourceSchema,
  provider: z.string(),
  promptTokens: Count,
  completionTokens: Count,
  cachedTokens: Count,
  reasoningTokens: Count,
  /** The unit of `quantity`: tokens for a model, the tool's own unit for a tool. */
  unit: z.enum(USAGE_UNITS),
  /** What was used in `unit` (for a model: prompt + completion tokens). */
  quantity: Count,
  /** Credits charged for this request, in units of 1/10,000 cent (0 within the allowance and in test mode). */
  creditsUnits: Count,
  estimated: z.boolean(),
  /** The status the client received; null when the request never ended (billed from its last checkpoint) or predates the column. */
  status: HttpStatus.nullable(),
  /** Admission to settle in ms; null when unknown (as status). */
  latencyMs: Count.nullable(),
})
export type LedgerEntry = z.infer<typeof LedgerEntrySchema>

/**
 * unflushedUsage: the rows of one principal this object holds durably and has not yet written to
 * Postgres, created in [from, to) (epoch ms; `to` null: no end). A usage statement reads these
 * before it reads Postgres, so each settled request is in exactly one of the two reads or in both
 * (then deduplicated): a row leaves this set only once Postgres has committed it.
 */
export const UnflushedUsageQuerySchema = z.object({
  tenantId: TenantId,
  mode: z.enum(METERING_MODES),
  principal: z.string().min(1).max(200),
  from: Count,
  to: Count.nullable(),
})
export type UnflushedUsageQuery = z.infer<typeof UnflushedUsageQuerySchema>

/** The tenant's balance row for the current period as Postgres has it (tenant_balances). */
export interface BalanceRow {
  readonly periodStart: number
  readonly tokensUsed: number
  readonly creditsUnits: number
  readonly overageUnits: number
  readonly usageCreditsEnabled: boolean
  /** The account's own overage cap in cents; null = the plan's default. */
  readonly spendCapCents: number | null
}

/**
 * The balance row plus this period's live use per metered resource (from usage_ledger): tokens
 * per model, units per paid tool. Read when the object starts.
 */
export interface StoredBalance extends BalanceRow {
  readonly resourceUse: Readonly<Record<string, number>>
}
