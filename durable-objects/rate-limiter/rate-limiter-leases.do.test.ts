/**
 * Admission leases end to end: the metering client in this isolate against the RateLimiter
 * object. A busy isolate admits most requests locally, and still gets exactly the limit.
 */
import { env, runInDurableObject } from 'cloudflare:test'
import { beforeEach, describe, expect, it } from 'vitest'
import type { MeterGrant } from '../../shared/metering/metering.schemas'
import {
  openMeter,
  type RateLimiterNamespace,
  resetMeteringClientState,
} from '../../shared/metering/metering-client'
import { PLAN_CATALOG } from '../../shared/plans/plan-catalog'
import type { Identity } from '../../shared/worker/request-context'
import type { RateLimiter } from './rate-limiter.do'
import { unflushedCount } from './rate-limiter-storage.fixtures'

// These tests run inside the hosting worker: the binding as callers see it (the client's RPC
// surface), and as the class itself (to look inside an instance).
const bindings = env as unknown as { RATE_LIMITER: DurableObjectNamespace<RateLimiter> }
const RATE_LIMITER = bindings.RATE_LIMITER
const LIMITER_RPC = bindings.RATE_LIMITER as unknown as RateLimiterNamespace

function testIdentity(planId: string): Identity {
  return {
    tenantId: crypto.randomUUID(),
    mode: 'test',
    principal: { kind: 'api_key', keyId: 'k1', mode: 'test' },
    role: 'owner',
    planId,
    scopes: [],
  }
}

async function acquireAll(identity: Identity, n: number) {
  const meter = openMeter(LIMITER_RPC, identity, 'chat.completions')
  const outcomes = await Promise.allSettled(
    Array.from({ length: n }, (_, i) =>
      meter.acquire({ requestId: `req_${i}`, model: 'svc-cell', estimatedTokens: 50 }, PLAN_CATALOG),
    ),
  )
  const grants = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []))
  const refusals = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as { code: string }] : []))
  return { meter, grants, refusals }
}

const stubOf = (identity: Identity) => RATE_LIMITER.get(RATE_LIMITER.idFromName(`${identity.tenantId}:test`))

beforeEach(() => resetMeteringClientState())

describe('RateLimiter admission leases', () => {
  it('waves of parallel requests, 700 against 600 requests/min: exactly 600 admitted', async () => {
    const identity = testIdentity('team')
    const grants: MeterGrant[] = []
    const codes: string[] = []
    for (let wave = 0; wave < 7; wave++) {
      const result = await acquireAll(identity, 100)
      grants.push(...result.grants)
      codes.push(...result.refusals.map((r) => r.code))
    }
    expect(grants).toHaveLength(600)
    expect(new Set(codes)).toEqual(new Set(['rate_limited']))
    expect(grants.filter((g) => g.leaseId !== undefined).length).toBeGreaterThan(100)
  })

  it('one request after another, 700 against 600 requests/min: exactly 600, most without a round trip', async () => {
    const identity = testIdentity('team')
    const meter = openMeter(LIMITER_RPC, identity, 'chat.completions')
    const grants: MeterGrant[] = []
    let refused = 0
    for (let i = 0; i < 700; i++) {
      try {
        grants.push(
          await meter.acquire(
            { requestId: `req_${i}`, model: 'svc-cell', estimatedTokens: 50 },
            PLAN_CATALOG,
          ),
        )
      } catch {
        refused += 1
      }
    }
    expect(grants).toHaveLength(600)
    expect(refused).toBe(100)
    expect(grants.filter((g) => g.leaseId !== undefined).length).toBeGreaterThan(450)
    // The headers of each admitted request count down to zero as the isolate sees the window.
    const remaining = grants.map((g) => Number(g.headers['x-ratelimit-remaining-requests']))
    expect(remaining[0]).toBe(599)
    expect(remaining[remaining.length - 1]).toBe(0)
  })

  it('lease-admitted requests settle into the ledger like the others; returned leases free the window', async () => {
    const identity = testIdentity('team')
    const { meter, grants } = await acquireAll(identity, 40)
    const second = await acquireAll(identity, 40)
    const all = [...grants, ...second.grants]
    expect(all).toHaveLength(80)
    expect(all.some((g) => g.leaseId !== undefined)).toBe(true)
    await Promise.all(
      all.map((grant) =>
        meter.settle(grant, {
          usage: {
            promptTokens: 10,
            completionTokens: 5,
            totalTokens: 15,
            cachedTokens: 0,
            reasoningTokens: 0,
          },
          estimated: false,
          provider: 'svc-test-mode',
          status: 200,
        }),
      ),
    )
    const stub = stubOf(identity)
    expect(await runInDurableObject(stub, (_, state) => unflushedCount(state.storage))).toBe(80)
    const snapshot = await stub.snapshot({ tenantId: identity.tenantId, mode: 'test', planId: 'team' })
    // Tokens: 80 requests × 15 used; requests: 80 admitted plus what open leases still hold.
    expect(snapshot?.remainingTokens).toBeLessThanOrEqual(2_000_000 - 80 * 15)
    expect(snapshot?.remainingRequests).toBeLessThanOrEqual(600 - 80)
  })

  it('a small plan never gets a lease: every request is decided at the object', async () => {
    const identity = testIdentity('free')
    const { grants, refusals } = await acquireAll(identity, 30)
    expect(grants).toHaveLength(20)
    expect(refusals).toHaveLength(10)
    expect(grants.every((g) => g.leaseId === undefined)).toBe(true)
  })
})
