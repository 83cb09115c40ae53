/**
 * The typed client every worker uses to meter a request against the RateLimiter object of the
 * caller's tenant (see durable-objects/rate-limiter.do.ts and docs/plans.md):
 *
 *   const meter = openMeter(env.RATE_LIMITER, identity, 'code.turns')
 *   const grant = await meter.acquire({ requestId, model, estimatedTokens })  // throws the 402/403/429/503 AppError
 *   ...do the work...
 *   ctx.waitUntil(meter.settle(grant, { usage, estimated, provider }))         // never throws
 *
 * Binding (wrangler.toml of a worker other than svc-chat):
 *   [[durable_objects.bindings]]
 *   name = "RATE_LIMITER"
 *   class_name = "RateLimiter"
 *   script_name = "svc-chat"
 *
 * Settling costs no round trip of its own on a busy isolate: `settle` queues the usage in the
 * isolate's memory and the next `acquire` for the same tenant and mode carries it to the object
 * in the same RPC (a piggyback; the object applies it before admitting the new request). When
 * no acquire comes along within SETTLE_FLUSH_DELAY_MS, the settling request sends the queue
 * itself (`settleMany`) from its waitUntil. The object ignores a request id it already settled,
 * so a batch is safely resent after a failed call.
 *
 * `openMeter(..., { piggyback: false })` turns the ride-along off for a caller whose acquires
 * must not carry other requests' usage (each settle then goes out on its own).
 *
 * `grant.headers` are the x-ratelimit-* headers to put on the response. Test-mode identities
 * (svc_sk_test_ keys) get their own object: rate limits apply, allowance and credits do not,
 * and their ledger rows carry mode 'test' and zero credits.
 */
import type { RateLimiter } from '../../durable-objects/rate-limiter.do'
import type { ModelAlias } from '../catalog/model-aliases'
import { AppError } from '../http/errors'
import type { PlanCatalog } from '../plans/plan-catalog'
import { actionRequiredError } from '../plans/upgrade-decision'
import type { NormalizedUsage } from '../providers/chat-wire'
import { type Identity, isTestMode, principalId } from '../worker/request-context'
import { MAX_SETTLE_BATCH, type MeterGrant, type MeteringScope, type SettleInput } from './metering.schemas'
import { rateLimitHeaders } from './rate-limit-headers'

export type { MeterGrant }

export type RateLimiterNamespace = DurableObjectNamespace<RateLimiter>

export interface MeterUsage {
  /** null when nothing was produced (the reservation is released, no ledger row). */
  readonly usage: NormalizedUsage | null
  /** True when counted with the tokenizer rather than reported by the provider. */
  readonly estimated: boolean
  /** Provider id that served the request. */
  readonly provider: string
}

export interface Meter {
  readonly scope: MeteringScope
  /** Admits the request or throws the action-required AppError (rate-limit headers included). */
  acquire(request: {
    readonly requestId: string
    readonly model: ModelAlias
    readonly estimatedTokens: number
  }): Promise<MeterGrant>
  /** Records the usage of an admitted request (or releases it). Logs and swallows failures. */
  settle(grant: MeterGrant, usage: MeterUsage): Promise<void>
  /** The current x-ratelimit-* headers without admitting anything ({} if unavailable). */
  headers(): Promise<Record<string, string>>
}

/** How long a settle waits for an acquire to carry it before its request sends it itself. */
export const SETTLE_FLUSH_DELAY_MS = 20
const SETTLE_ATTEMPTS = 6
/** Queued settles kept per object when the object is unreachable; beyond it the oldest are dropped (logged). */
const MAX_QUEUED_SETTLES = 10_000

interface PendingSettle {
  readonly input: SettleInput
  state: 'queued' | 'sending' | 'done'
  readonly done: Promise<void>
  readonly resolve: () => void
}

/** Settles not yet delivered, per object name. Plain data (no I/O objects), so shared by the isolate's requests. */
const pendingByObject = new Map<string, PendingSettle[]>()

function queueOf(name: string): PendingSettle[] {
  let queue = pendingByObject.get(name)
  if (!queue) {
    queue = []
    pendingByObject.set(name, queue)
  }
  return queue
}

/** Takes up to MAX_SETTLE_BATCH queued settles of an object for delivery. */
function takeQueued(name: string): PendingSettle[] {
  const queue = pendingByObject.get(name)
  if (!queue || queue.length === 0) return []
  const taken = queue.splice(0, MAX_SETTLE_BATCH)
  if (queue.length === 0) pendingByObject.delete(name)
  for (const entry of taken) entry.state = 'sending'
  return taken
}

function delivered(taken: readonly PendingSettle[]): void {
  for (const entry of taken) {
    entry.state = 'done'
    entry.resolve()
  }
}

/** A failed delivery: back to the front of the queue, for the next acquire or flush. */
function requeue(name: string, taken: readonly PendingSettle[]): void {
  if (taken.length === 0) return
  for (const entry of taken) entry.state = 'queued'
  queueOf(name).unshift(...taken)
}

/** Resolves when `done` settles or after `ms`, whichever comes first, without leaving a timer behind. */
function waitAtMost(done: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
  })
  return Promise.race([done, timeout]).finally(() => {
    if (timer !== undefined) clearTimeout(timer)
  })
}

function logSettleFailure(event: string, tenantId: string, err: unknown, count: number): void {
  console.error(
    JSON.stringify({
      level: 'error',
      event,
      tenant_id: tenantId,
      settles: count,
      detail: err instanceof Error ? err.message : String(err),
    }),
  )
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
  options: { readonly catalog?: PlanCatalog; readonly piggyback?: boolean } = {},
): Meter {
  const scope: MeteringScope = {
    tenantId: identity.tenantId,
    mode: isTestMode(identity) ? 'test' : 'live',
    planId: identity.planId,
  }
  const name = meteringObjectName(identity)
  const stub = namespace.get(namespace.idFromName(name))
  const principal = principalId(identity)

  return {
    scope,
    async acquire(request) {
      const reservationId = crypto.randomUUID()
      const carried = options.piggyback === false ? [] : takeQueued(name)
      let result: Awaited<ReturnType<typeof stub.acquire>>
      try {
        result = await stub.acquire({
          ...scope,
          reservationId,
          model: request.model,
          estimatedTokens: request.estimatedTokens,
          ...(carried.length > 0 ? { settles: carried.map((entry) => entry.input) } : {}),
        })
      } catch (err) {
        requeue(name, carried)
        throw err
      }
      delivered(carried)
      if (result.kind === 'unavailable') throw meteringUnavailable(result.detail)
      const headers = rateLimitHeaders(result.snapshot)
      if (result.kind === 'refused') {
        const error = actionRequiredError(
          result.decision,
          options.catalog ? { catalog: options.catalog } : {},
        )
        Object.assign(error.headers, headers)
        throw error
      }
      return {
        reservationId,
        requestId: request.requestId,
        model: request.model,
        snapshot: result.snapshot,
        headers,
      }
    },
    async settle(grant, usage) {
      let resolve: () => void = () => {}
      const done = new Promise<void>((r) => {
        resolve = r
      })
      const entry: PendingSettle = {
        input: {
          ...scope,
          reservationId: grant.reservationId,
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
          },
          estimated: usage.estimated,
        },
        state: 'queued',
        done,
        resolve,
      }
      const queue = queueOf(name)
      queue.push(entry)
      if (queue.length > MAX_QUEUED_SETTLES) {
        const dropped = queue.splice(0, queue.length - MAX_QUEUED_SETTLES)
        logSettleFailure('metering_settles_dropped', scope.tenantId, 'queue full', dropped.length)
        delivered(dropped)
      }
      for (let attempt = 1; attempt <= SETTLE_ATTEMPTS; attempt++) {
        await waitAtMost(done, SETTLE_FLUSH_DELAY_MS * attempt)
        if (entry.state === 'done') return
        if (entry.state !== 'queued') continue
        const batch = takeQueued(name)
        try {
          await stub.settleMany(batch.map((e) => e.input))
          delivered(batch)
        } catch (err) {
          requeue(name, batch)
          if (attempt === SETTLE_ATTEMPTS)
            logSettleFailure('metering_settle_failed', scope.tenantId, err, batch.length)
        }
      }
    },
    async headers() {
      try {
        const snapshot = await stub.snapshot(scope)
        return snapshot ? rateLimitHeaders(snapshot) : {}
      } catch {
        return {}
      }
    },
  }
}
