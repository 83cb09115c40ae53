import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { listCostUnits, worstCaseCostUnits } from '../../shared/metering/key-spend'
import type {
  AcquireInput,
  AcquireResult,
  KeyLimitInput,
  MeteringMode,
  SettleInput,
} from '../../shared/metering/metering.schemas'
import { PLAN_CATALOG } from '../../shared/plans/plan-catalog'
import type { RateLimiter } from './rate-limiter.do'
import { MemoryStore } from './rate-limiter-store.fixtures'

// These tests run inside the hosting worker: the namespace of the class itself.
const RATE_LIMITER = (env as unknown as { RATE_LIMITER: DurableObjectNamespace<RateLimiter> }).RATE_LIMITER
/** A Saturday, 23:00 UTC: the day ends in an hour, the week (Monday to Sunday) a day later. */
const NOW = Date.UTC(2026, 10, 21, 23, 0, 0)
const ESTIMATE = 1_000
const WORST = worstCaseCostUnits(PLAN_CATALOG, 'svc-cell', ESTIMATE, undefined)
const USAGE = { promptTokens: 300, completionTokens: 200, cachedTokens: 0, reasoningTokens: 0 }
const COST = listCostUnits(PLAN_CATALOG, { model: 'svc-cell', ...USAGE, quantity: 500 })

function harness(mode: MeteringMode, key: Omit<KeyLimitInput, 'keyId'>) {
  const tenantId = crypto.randomUUID()
  const keyId = crypto.randomUUID()
  const stub = RATE_LIMITER.get(RATE_LIMITER.idFromName(`${tenantId}:${mode}`))
  const time = { now: NOW }
  const store = new MemoryStore(NOW)
  const scope = { tenantId, mode, planId: 'team' }
  const limits: KeyLimitInput = { keyId, ...key }
  return {
    stub,
    store,
    time,
    keyId,
    acquire: (reservationId: string, extra: Partial<AcquireInput> = {}) =>
      stub.acquire({
        ...scope,
        reservationId,
        model: 'svc-cell',
        estimatedTokens: ESTIMATE,
        key: limits,
        ...extra,
      }),
    settle: (reservationId: string): SettleInput => ({
      ...scope,
      reservationId,
      requestId: `req_${reservationId}`,
      model: 'svc-cell',
      endpoint: 'chat.completions',
      principal: `key:${keyId}`,
      provider: 'fake',
      usage: USAGE,
      estimated: false,
      status: 200,
    }),
    install: () =>
      runInDurableObject(stub, (instance: RateLimiter) => {
        instance.store = store
        instance.clock = () => time.now
      }),
  }
}

const granted = (results: AcquireResult[]) => results.filter((r) => r.kind === 'granted').length

function refusal(result: AcquireResult) {
  if (result.kind !== 'refused') throw new Error(`expected a refusal, got ${result.kind}`)
  return result
}

describe('RateLimiter: a key with a spend limit', () => {
  it('64 concurrent requests on a limit worth 20 worst cases: exactly 20 admitted, the rest refused with the key page', async () => {
    for (const mode of ['test', 'live'] as const) {
      const h = harness(mode, { spendLimitUnits: 20 * WORST, period: 'month' })
      await h.install()
      const results = await Promise.all(Array.from({ length: 64 }, (_, i) => h.acquire(`r${i}`)))
      expect(granted(results)).toBe(20)
      const refused = refusal(results.find((r) => r.kind === 'refused')!)
      expect(refused.limitOf).toBe('key')
      expect(refused.decision).toMatchObject({
        reason: 'overage_cap_reached',
        required_plan: null,
        binding_limit: {
          kind: 'credits',
          unit: 'cents',
          used: (20 * WORST) / 10_000,
          limit: (20 * WORST) / 10_000,
          remaining: 0,
          resets_at: '2026-12-01T00:00:00.000Z',
        },
      })
      expect(refused.decision.actions[0]).toMatchObject({
        kind: 'manage_spend_cap',
        available: true,
        url: `https://console.svc.example/api-keys/${h.keyId}`,
      })
    }
  })

  it('settling releases the rest of each worst case: what was spent plus what is in flight never exceeds the limit', async () => {
    const h = harness('test', { spendLimitUnits: 20 * WORST, period: 'total' })
    await h.install()
    let spent = 0
    let admitted = 0
    for (let round = 0; round < 50; round++) {
      const results = await Promise.all(Array.from({ length: 64 }, (_, i) => h.acquire(`r${round}-${i}`)))
      const ids = results.flatMap((r, i) => (r.kind === 'granted' ? [`r${round}-${i}`] : []))
      if (ids.length === 0) break
      admitted += ids.length
      // At every instant, settled costs plus reserved worst cases fit the limit.
      expect(spent + ids.length * WORST).toBeLessThanOrEqual(20 * WORST)
      await h.stub.settleMany(ids.map((id) => h.settle(id)))
      spent += ids.length * COST
    }
    expect(spent).toBeLessThanOrEqual(20 * WORST)
    // It went on past 20 requests, as each cost less than its worst case, until no worst case fit.
    expect(admitted).toBeGreaterThan(20)
    expect(20 * WORST - spent).toBeLessThan(WORST)
  })

  it('a daily limit starts over at 00:00 UTC, not a millisecond before (injected clock)', async () => {
    const h = harness('test', { spendLimitUnits: 3 * COST + WORST - 1, period: 'day' })
    await h.install()
    for (const id of ['a', 'b', 'c']) {
      expect((await h.acquire(id)).kind).toBe('granted')
      await h.stub.settleMany([h.settle(id)])
    }
    // 3 × COST spent: what is left is less than a worst case.
    h.time.now = Date.UTC(2026, 10, 22) - 1
    const before = refusal(await h.acquire('late'))
    expect(before.decision.binding_limit).toMatchObject({
      used: (3 * COST) / 10_000,
      resets_at: '2026-11-22T00:00:00.000Z',
    })
    h.time.now = Date.UTC(2026, 10, 22)
    expect((await h.acquire('next-day')).kind).toBe('granted')
  })

  it('a weekly limit carries over the day boundary and starts over on Monday', async () => {
    const h = harness('test', { spendLimitUnits: WORST, period: 'week' })
    await h.install()
    expect((await h.acquire('a')).kind).toBe('granted')
    await h.stub.settleMany([h.settle('a')])
    h.time.now = Date.UTC(2026, 10, 22, 12) // Sunday
    expect(refusal(await h.acquire('sunday')).decision.binding_limit?.resets_at).toBe(
      '2026-11-23T00:00:00.000Z',
    )
    h.time.now = Date.UTC(2026, 10, 23) // Monday
    expect((await h.acquire('monday')).kind).toBe('granted')
  })

  it('a restart keeps the spend: from the unflushed ledger rows, then from Postgres once flushed, never both', async () => {
    const h = harness('live', { spendLimitUnits: 10 * WORST, period: 'month' })
    await h.install()
    const ids = Array.from({ length: 10 }, (_, i) => `r${i}`)
    const results = await Promise.all(ids.map((id) => h.acquire(id)))
    expect(granted(results)).toBe(10)
    await h.stub.settleMany(ids.map((id) => h.settle(id)))
    const left = 10 * WORST - 10 * COST
    const fits = Math.floor(left / WORST)

    // Killed before the flush: the spend comes back from the object's own ledger rows.
    await evictDurableObject(h.stub)
    await h.install()
    const afterRestart = await Promise.all(Array.from({ length: 20 }, (_, i) => h.acquire(`x${i}`)))
    expect(granted(afterRestart)).toBe(fits)
    expect(refusal(afterRestart.find((r) => r.kind === 'refused')!).decision.binding_limit?.used).toBe(
      (10 * COST + fits * WORST) / 10_000,
    )
    await h.stub.settleMany(
      afterRestart.flatMap((r, i) => (r.kind === 'granted' ? [{ ...h.settle(`x${i}`), usage: null }] : [])),
    )

    // Flushed to Postgres (the rows are also still kept by the object, marked flushed): counted once.
    await runDurableObjectAlarm(h.stub)
    expect(h.store.ledger.size).toBe(10)
    await evictDurableObject(h.stub)
    await h.install()
    const afterFlush = await Promise.all(Array.from({ length: 20 }, (_, i) => h.acquire(`y${i}`)))
    expect(granted(afterFlush)).toBe(fits)
    // Read once per start of the object: at first use and after each restart.
    expect(h.store.calls.keySpend).toBe(3)
  })

  it('reservations are durable: requests in flight when the object restarts still hold their worst case', async () => {
    const h = harness('live', { spendLimitUnits: 10 * WORST, period: 'month' })
    await h.install()
    const ids = Array.from({ length: 10 }, (_, i) => `r${i}`)
    expect(granted(await Promise.all(ids.map((id) => h.acquire(id))))).toBe(10)
    // Killed with all ten in flight: after the restart nothing more fits until they settle.
    await evictDurableObject(h.stub)
    await h.install()
    h.time.now += 1_000
    const refused = refusal(await h.acquire('after-restart'))
    expect(refused.decision.binding_limit?.used).toBe((10 * WORST) / 10_000)
    // Two settle (their isolates outlived the object): their worst cases give way to their cost.
    await h.stub.settleMany([h.settle('r0'), h.settle('r1')])
    const fits = Math.floor((2 * WORST - 2 * COST) / WORST)
    const after = await Promise.all(Array.from({ length: 5 }, (_, i) => h.acquire(`x${i}`)))
    expect(granted(after)).toBe(fits)
    // A reservation whose request never settles stops counting after RESERVATION_TTL_MS.
    h.time.now += 15 * 60_000
    expect((await h.acquire('much-later')).kind).toBe('granted')
  })

  it('a changed period is loaded afresh; the key gets no admission lease', async () => {
    const h = harness('test', { spendLimitUnits: 100 * WORST, period: 'day' })
    await h.install()
    const first = await h.acquire('a', {
      lease: { leaseId: 'lease-a', requests: 64, tokensPerRequest: ESTIMATE },
    })
    expect(first.kind === 'granted' && first.lease).toBeFalsy()
    await h.stub.settleMany([h.settle('a')])
    const monthly = await h.acquire('b', {
      key: { keyId: h.keyId, spendLimitUnits: COST + WORST - 1, period: 'month' },
    })
    // The month's spend (COST) was read again: one more worst case does not fit.
    expect(refusal(monthly).decision.binding_limit?.used).toBe(COST / 10_000)
    expect(h.store.calls.keySpend).toBe(2)
  })
})

describe('RateLimiter: a key with its own rate limit', () => {
  it("admits the key's requests per minute exactly; the refusal and the headers' figures are the key's", async () => {
    const h = harness('test', { requestsPerMinute: 5 })
    await h.install()
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => h.acquire(`r${i}`)))
    expect(granted(results)).toBe(5)
    const refused = refusal(results.find((r) => r.kind === 'refused')!)
    expect(refused.limitOf).toBe('key')
    expect(refused.decision).toMatchObject({
      reason: 'rate_limited',
      binding_limit: { kind: 'rate', unit: 'requests', limit: 5, used: 6, remaining: 0 },
    })
    expect(refused.decision.binding_limit?.retry_after_seconds).toBeGreaterThan(0)
    expect(refused.snapshot).toMatchObject({ limitRequests: 5, remainingRequests: 0 })
    // Another principal of the tenant is not held back by this key's limit.
    expect((await h.acquire('other', { key: undefined })).kind).toBe('granted')
    h.time.now += 60_000
    expect((await h.acquire('later')).kind).toBe('granted')
  })

  it("a key's tokens per minute count each request's estimate", async () => {
    const h = harness('test', { tokensPerMinute: 2_500 })
    await h.install()
    const results = await Promise.all(Array.from({ length: 4 }, (_, i) => h.acquire(`r${i}`)))
    expect(granted(results)).toBe(2)
    expect(refusal(results.find((r) => r.kind === 'refused')!).decision.binding_limit).toMatchObject({
      unit: 'tokens',
      limit: 2_500,
    })
  })
})
