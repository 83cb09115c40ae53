/**
 * The typed client every worker uses to meter a request against the RateLimiter object of the
 * caller's tenant (see durable-objects/rate-limiter/rate-limiter.do.ts and docs/plans.md):
 *
 *   const { catalog } = resolvePlan(env, identity.planId)
 *   const meter = openMeter(env.RATE_LIMITER, identity, 'code.turns')
 *   const grant = await meter.acquire({ requestId, model, estimatedTokens }, catalog)  // throws the 402/403/429/503 AppError
 *   ...do the work...
 *   await meter.settle(grant, { usage, estimated, provider, status })         // never throws
 *
 * Binding (wrangler.toml of every worker that meters; the object is hosted by svc-metering):
 *   [[durable_objects.bindings]]
 *   name = "RATE_LIMITER"
 *   class_name = "RateLimiter"
 *   script_name = "svc-metering"
 *
 * Usage is acknowledged only once it is stored: `settle` resolves when the object has committed
 * the ledger row to its storage (the object writes it before it answers, and its output gate holds
 * the answer until the write is durable), so a caller that awaits it before answering its own
 * client never reports usage a crash could lose. A failed call is retried a few times; what still
 * cannot be delivered is logged (`usage_unrecorded`) and reported as not recorded. The object
 * ignores a reservation it already settled, so a resend after a lost answer changes nothing.
 *
 * Long requests (streams) report what they have delivered so far with `checkpoint`: the object
 * keeps the last report of each open request and, if the request never settles (its isolate died
 * mid-stream), bills that report once the request has been silent for a minute.
 *
 * Admission leases: an acquire that reaches the object also asks for a lease — a slice of the
 * tenant's headroom for this model, usable by this isolate for about a second (the object grants
 * one only far from every limit; see durable-objects/rate-limiter/tenant-limiter.ts). While the isolate holds
 * a lease that covers a request, `acquire` admits it locally with no round trip; the request
 * settles like any other. When the lease runs out or expires, what it did not use goes back to
 * the object with the next call. The next lease asked for is twice what the last one admitted
 * (8 to 1,024 requests), so a quiet isolate holds little and a busy one asks about once a second.
 * `openMeter(..., { leases: false })` admits every request at the object.
 *
 * `grant.headers` are the x-ratelimit-* headers to put on the response. Test-mode identities
 * (svc_sk_test_ keys) get their own object: rate limits apply, allowance and credits do not,
 * and their ledger rows carry mode 'test' and zero credits.
 */
import { AppError } from '../http/errors'
import { keyLimitMessage, keyModelDecision } from '../plans/key-limit-decisions'
import { getPlan, type PlanCatalog } from '../plans/plan-catalog'
import { actionRequiredError } from '../plans/upgrade-decision'
import type { NormalizedUsage } from '../providers/chat-wire'
import { errorFields, log } from '../worker/log'
import { type Identity, isTestMode, principalId } from '../worker/request-context'
import {
  type AcquireInput,
  type AcquireResult,
  isMeteredTool,
  type LeaseReturnInput,
  type LedgerEntry,
  MAX_LEASE_REQUESTS,
  type MeteredResource,
  type MeterGrant,
  type MeteringScope,
  type RateLimitSnapshot,
  type SettleInput,
  type SettleResult,
  type UnflushedUsageQuery,
} from './metering.schemas'
import { rateLimitHeaders } from './rate-limit-headers'

export type { MeterGrant }

/**
 * The RateLimiter object's RPC surface, as its callers use it. The object
 * (durable-objects/rate-limiter/rate-limiter.do.ts) implements it; callers depend on this
 * interface, never on the object's code.
 */
export interface RateLimiterRpc extends Rpc.DurableObjectBranded {
  acquire(input: AcquireInput): Promise<AcquireResult>
  settleMany(inputs: SettleInput[], returns?: LeaseReturnInput[]): Promise<SettleResult[]>
  checkpoint(inputs: SettleInput[]): Promise<void>
  snapshot(scope: MeteringScope): Promise<RateLimitSnapshot | null>
  /** The principal's settled rows not yet in Postgres (a usage statement merges them in). */
  unflushedUsage(query: UnflushedUsageQuery): Promise<LedgerEntry[]>
}

export type RateLimiterNamespace = DurableObjectNamespace<RateLimiterRpc>

export interface MeterUsage {
  /**
   * null when nothing was produced: the reservation is released, and only a failure status (400
   * or more) leaves a row, at zero charge, for the request log.
   */
  readonly usage: NormalizedUsage | null
  /** A paid tool's use in its unit (web_search: 1 request; transcription: seconds of audio). */
  readonly quantity?: number
  /** True when counted with the tokenizer rather than reported by the provider. */
  readonly estimated: boolean
  /** Provider id that served the request. */
  readonly provider: string
  /**
   * The HTTP status the client received, recorded in the request log (docs/plans.md, "The request
   * log"): for a stream that ended in an error event 502, for one the client cancelled 499. With
   * usage null, a status of 400 or more records the failed request with zero charge; null records
   * nothing (a job's failure is shown by the job, its create call having succeeded).
   */
  readonly status: number | null
  /**
   * When the request's work ended (epoch ms), for a settle sent later than that (a retry after a
   * restart); default: now. Latency is measured from the grant's admittedAt to this.
   */
  readonly endedAt?: number
}

/** A checkpoint reports a request that has not ended: it has no status or latency yet. */
export type CheckpointUsage = Omit<MeterUsage, 'status' | 'endedAt'>

export interface Meter {
  readonly scope: MeteringScope
  /**
   * Admits the request or throws the action-required AppError (rate-limit headers included),
   * worded with the deployment's catalog (resolvePlan).
   */
  acquire(
    request: {
      readonly requestId: string
      /** The model alias, or the paid tool (admitted per request: tools get no leases). */
      readonly model: MeteredResource
      readonly estimatedTokens: number
      /** A paid tool's expected use in its unit, reserved against its monthly allowance. */
      readonly estimatedQuantity?: number
    },
    catalog: PlanCatalog,
  ): Promise<MeterGrant>
  /**
   * Records the usage of an admitted request (or releases it, usage null). Resolves true once the
   * object has it in storage (stored now, or already by an earlier send of the same settle); false
   * when it could not be reached after a few tries (logged as `usage_unrecorded`). Never throws.
   */
  settle(grant: MeterGrant, usage: MeterUsage): Promise<boolean>
  /**
   * Reports what a request still running has used so far (a stream's delivered tokens). Billed as
   * it stands if the request never settles. Best effort: never throws, failures are only logged.
   */
  checkpoint(grant: MeterGrant, usage: CheckpointUsage): Promise<void>
  /** The current x-ratelimit-* headers without admitting anything ({} if unavailable). */
  headers(): Promise<Record<string, string>>
}

/** The first lease an isolate asks for, in requests; later ones follow what the last one admitted. */
export const INITIAL_LEASE_REQUESTS = 8

/** An admission lease this isolate holds for one object and model. */
interface HeldLease {
  readonly leaseId: string
  requestsLeft: number
  tokensLeft: number
  admitted: number
  readonly receivedAt: number
  readonly expiresAt: number
  /** The object's counters when it granted the lease (the whole lease counted as used). */
  readonly snapshot: RateLimitSnapshot
}

/** Leases by `<object name>|<model>`; plain data, shared by the isolate's requests. */
const heldLeases = new Map<string, HeldLease>()
/** Lease size to ask for next, by the same key. */
const nextLeaseSize = new Map<string, number>()
/** Lease requests in flight, by key (one at a time; other requests wait for it, then admit locally). */
const askingLease = new Map<string, Promise<unknown>>()
/** Finished leases not yet handed back, per object name. */
const returnsByObject = new Map<string, LeaseReturnInput[]>()

/** How many lease requests of other requests an acquire waits for before it goes to the object itself. */
const LEASE_WAIT_ROUNDS = 3

/** Lease returns one call carries (LeaseReturnsSchema). */
const MAX_RETURNS_PER_CALL = 64

/** Stops admitting from a lease and queues what it did not use for the object. */
function retireLease(name: string, key: string, lease: HeldLease): void {
  if (heldLeases.get(key) === lease) heldLeases.delete(key)
  nextLeaseSize.set(key, Math.min(MAX_LEASE_REQUESTS, Math.max(INITIAL_LEASE_REQUESTS, lease.admitted * 2)))
  let returns = returnsByObject.get(name)
  if (!returns) {
    returns = []
    returnsByObject.set(name, returns)
  }
  returns.push({ leaseId: lease.leaseId, unusedRequests: lease.requestsLeft, unusedTokens: lease.tokensLeft })
}

function takeReturns(name: string): LeaseReturnInput[] {
  const returns = returnsByObject.get(name)
  if (!returns) return []
  returnsByObject.delete(name)
  if (returns.length <= MAX_RETURNS_PER_CALL) return returns
  returnsByObject.set(name, returns.slice(MAX_RETURNS_PER_CALL))
  return returns.slice(0, MAX_RETURNS_PER_CALL)
}

function putBackReturns(name: string, returns: readonly LeaseReturnInput[]): void {
  if (returns.length === 0) return
  returnsByObject.set(name, [...returns, ...(returnsByObject.get(name) ?? [])])
}

/** Admits a request from this isolate's lease for the key, or null when no lease covers it. */
function admitLocally(
  name: string,
  key: string,
  request: { readonly requestId: string; readonly model: MeteredResource; readonly estimatedTokens: number },
): MeterGrant | null {
  const held = heldLeases.get(key)
  if (!held) return null
  const now = Date.now()
  if (now >= held.expiresAt || held.requestsLeft < 1 || held.tokensLeft < request.estimatedTokens) {
    retireLease(name, key, held)
    return null
  }
  held.requestsLeft -= 1
  held.tokensLeft -= request.estimatedTokens
  held.admitted += 1
  const snapshot = leaseSnapshot(held, now)
  return {
    reservationId: crypto.randomUUID(),
    leaseId: held.leaseId,
    estimatedTokens: request.estimatedTokens,
    requestId: request.requestId,
    model: request.model,
    snapshot,
    headers: rateLimitHeaders(snapshot),
  }
}

/** The counters as this isolate sees them while admitting from a lease. */
function leaseSnapshot(lease: HeldLease, now: number): RateLimitSnapshot {
  const elapsed = now - lease.receivedAt
  const s = lease.snapshot
  return {
    limitRequests: s.limitRequests,
    remainingRequests: Math.min(s.limitRequests, s.remainingRequests + lease.requestsLeft),
    resetRequestsMs: Math.max(0, s.resetRequestsMs - elapsed),
    limitTokens: s.limitTokens,
    remainingTokens: Math.min(s.limitTokens, s.remainingTokens + lease.tokensLeft),
    resetTokensMs: Math.max(0, s.resetTokensMs - elapsed),
  }
}

/** Forgets every lease and queued return (tests). */
export function resetMeteringClientState(): void {
  heldLeases.clear()
  nextLeaseSize.clear()
  askingLease.clear()
  returnsByObject.clear()
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Tries per settle (the first send and its resends), and the pause before each resend. */
const SETTLE_RETRY_DELAYS_MS = [0, 50, 250, 1_000]

function logUsageUnrecorded(tenantId: string, input: SettleInput, err: unknown): void {
  log('error', 'usage_unrecorded', {
    request_id: input.requestId,
    tenant_id: tenantId,
    reservation_id: input.reservationId,
    ...errorFields(err),
  })
}

/** Milliseconds from admission to `endedAt`; null for a grant stored before admittedAt existed. */
function latencySince(admittedAt: number | undefined, endedAt: number): number | null {
  return admittedAt === undefined ? null : Math.max(0, Math.round(endedAt - admittedAt))
}

/** The object for a tenant and mode: `<tenantId>:live` or `<tenantId>:test`. */
export function meteringObjectName(identity: Identity): string {
  return `${identity.tenantId}:${isTestMode(identity) ? 'test' : 'live'}`
}

export function meteringUnavailable(detail: string): AppError {
  return new AppError(
    503,
    'metering_unavailable',
    'Usage limits cannot be checked right now, so the request was not started. Retry in a few seconds.',
    { headers: { 'retry-after': '5' }, internalMessage: detail },
  )
}

export function openMeter(
  namespace: RateLimiterNamespace,
  identity: Identity,
  endpoint: string,
  options: { readonly leases?: boolean } = {},
): Meter {
  const scope: MeteringScope = {
    tenantId: identity.tenantId,
    mode: isTestMode(identity) ? 'test' : 'live',
    planId: identity.planId,
  }
  const name = meteringObjectName(identity)
  // Made on first use: a request admitted from a lease whose settle only queues never needs one
  // (deriving the id hashes the name).
  let stub: DurableObjectStub<RateLimiterRpc> | null = null
  const object = () => {
    stub ??= namespace.get(namespace.idFromName(name))
    return stub
  }
  const principal = principalId(identity)
  const limits = identity.principal.kind === 'api_key' ? identity.principal.limits : undefined
  const keyId = identity.principal.kind === 'api_key' ? identity.principal.keyId : ''
  // A key with a spend limit or rates of its own is admitted at the object every time (no leases),
  // its limits with the call: a lease is counted against the tenant, not the key. A key limited only
  // to a model list is checked here and admitted as any other (leases included).
  const counted =
    limits &&
    (limits.spendLimit !== null || limits.requestsPerMinute !== null || limits.tokensPerMinute !== null)
  const keyInput = counted && {
    keyId,
    ...(limits.spendLimit
      ? { spendLimitUnits: limits.spendLimit.amountUnits, period: limits.spendLimit.period }
      : {}),
    ...(limits.requestsPerMinute === null ? {} : { requestsPerMinute: limits.requestsPerMinute }),
    ...(limits.tokensPerMinute === null ? {} : { tokensPerMinute: limits.tokensPerMinute }),
  }
  const leases = options.leases !== false && !counted
  /** `ended`: the request's status and latency; a checkpoint (the request still runs) has neither. */
  const settleInput = (grant: MeterGrant, usage: CheckpointUsage, ended: MeterUsage | null): SettleInput => ({
    ...scope,
    reservationId: grant.reservationId,
    ...(grant.leaseId === undefined
      ? {}
      : { leaseId: grant.leaseId, estimatedTokens: grant.estimatedTokens ?? 0 }),
    requestId: grant.requestId,
    model: grant.model,
    endpoint,
    principal,
    provider: usage.provider,
    usage: usage.usage && {
      promptTokens: usage.usage.promptTokens,
      completionTokens: usage.usage.completionTokens,
      cachedTokens: usage.usage.cachedTokens,
      reasoningTokens: usage.usage.reasoningTokens,
      ...(usage.quantity === undefined ? {} : { quantity: usage.quantity }),
    },
    estimated: usage.estimated,
    status: ended ? ended.status : null,
    latencyMs: ended ? latencySince(grant.admittedAt, ended.endedAt ?? Date.now()) : null,
  })

  return {
    scope,
    async acquire(request, catalog) {
      // Latency is measured from here: the request asks to be admitted.
      const admittedAt = Date.now()
      if (
        limits?.allowedModels &&
        !isMeteredTool(request.model) &&
        !limits.allowedModels.includes(request.model)
      ) {
        const plan = getPlan(scope.planId, catalog)
        if (plan) {
          const decision = keyModelDecision(plan, request.model, keyId, catalog)
          throw actionRequiredError(decision, { catalog, message: keyLimitMessage(decision) })
        }
      }
      const key = `${name}|${request.model}`
      // While another request of this isolate fetches a lease, wait for it and admit from it
      // rather than asking the object too (a few rounds at most; then go to the object).
      for (let round = 0; ; round++) {
        // Never for a key with counted limits: a lease another key's request obtained knows nothing of them.
        const local = leases ? admitLocally(name, key, request) : null
        if (local) return { ...local, admittedAt }
        const inFlight = leases ? askingLease.get(key) : undefined
        if (!inFlight || round === LEASE_WAIT_ROUNDS) break
        await inFlight.catch(() => {})
      }

      const reservationId = crypto.randomUUID()
      const askLease = leases && !isMeteredTool(request.model) && !askingLease.has(key)
      const leaseId = askLease ? crypto.randomUUID() : ''
      const returns = takeReturns(name)
      let result: AcquireResult
      try {
        const call = object().acquire({
          ...scope,
          reservationId,
          model: request.model,
          estimatedTokens: request.estimatedTokens,
          ...(request.estimatedQuantity === undefined
            ? {}
            : { estimatedQuantity: request.estimatedQuantity }),
          ...(askLease
            ? {
                lease: {
                  leaseId,
                  requests: nextLeaseSize.get(key) ?? INITIAL_LEASE_REQUESTS,
                  tokensPerRequest: request.estimatedTokens,
                },
              }
            : {}),
          ...(returns.length > 0 ? { leaseReturns: returns } : {}),
          ...(keyInput ? { key: keyInput } : {}),
        })
        if (askLease) askingLease.set(key, call)
        result = await call
      } catch (err) {
        putBackReturns(name, returns)
        throw err
      } finally {
        if (askLease) askingLease.delete(key)
      }
      if (result.kind === 'unavailable') throw meteringUnavailable(result.detail)
      if (result.kind === 'refused') {
        const headers = rateLimitHeaders(result.snapshot)
        const error = actionRequiredError(result.decision, {
          catalog,
          ...(result.limitOf === 'key' ? { message: keyLimitMessage(result.decision) } : {}),
        })
        Object.assign(error.headers, headers)
        throw error
      }
      if (!result.lease) {
        const headers = rateLimitHeaders(result.snapshot)
        return {
          reservationId,
          requestId: request.requestId,
          model: request.model,
          admittedAt,
          snapshot: result.snapshot,
          headers,
        }
      }
      const receivedAt = Date.now()
      const previous = heldLeases.get(key)
      if (previous) retireLease(name, key, previous)
      const lease: HeldLease = {
        leaseId: result.lease.leaseId,
        requestsLeft: result.lease.requests,
        tokensLeft: result.lease.tokens,
        admitted: 0,
        receivedAt,
        expiresAt: receivedAt + result.lease.ttlMs,
        snapshot: result.snapshot,
      }
      heldLeases.set(key, lease)
      // The object counted the whole lease as used; what this isolate has not admitted is still free.
      const snapshot = leaseSnapshot(lease, receivedAt)
      return {
        reservationId,
        requestId: request.requestId,
        model: request.model,
        admittedAt,
        snapshot,
        headers: rateLimitHeaders(snapshot),
      }
    },
    async settle(grant, usage) {
      const input = settleInput(grant, usage, usage)
      let failure: unknown = null
      for (const delay of SETTLE_RETRY_DELAYS_MS) {
        if (delay > 0) await sleep(delay)
        const returns = takeReturns(name)
        try {
          await object().settleMany([input], returns)
          return true
        } catch (err) {
          putBackReturns(name, returns)
          failure = err
        }
      }
      logUsageUnrecorded(scope.tenantId, input, failure)
      return false
    },
    async checkpoint(grant, usage) {
      try {
        await object().checkpoint([settleInput(grant, usage, null)])
      } catch (err) {
        log('warn', 'usage_checkpoint_failed', {
          request_id: grant.requestId,
          tenant_id: scope.tenantId,
          ...errorFields(err),
        })
      }
    },
    async headers() {
      try {
        const snapshot = await object().snapshot(scope)
        return snapshot ? rateLimitHeaders(snapshot) : {}
      } catch {
        return {}
      }
    },
  }
}
