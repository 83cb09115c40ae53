/**
 * How the metering client delivers settles: each settle resolves only once the object has
 * answered (it stores the row before it answers); failed sends are retried without losing or
 * doubling anything; checkpoints are best effort.
 * The RateLimiter here is a recording stand-in (the real object is exercised in
 * durable-objects/rate-limiter/*.do.test.ts); only its RPC surface matters to the client.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { namespaceOf, RecordingLimiter, SNAPSHOT } from '../../test/unit/recording-limiter'
import { PLAN_CATALOG } from '../plans/plan-catalog'
import type { NormalizedUsage } from '../providers/chat-wire'
import type { Identity } from '../worker/request-context'
import type { SettleInput } from './metering.schemas'
import { type MeterGrant, openMeter, resetMeteringClientState } from './metering-client'

/** A new tenant per test, so a test's leftover flusher never meets the next test's queue. */
const identity = (): Identity => ({
  tenantId: crypto.randomUUID(),
  mode: 'live',
  principal: { kind: 'api_key', keyId: 'k1', mode: 'live' },
  role: 'owner',
  planId: 'pro',
  scopes: [],
})

const usage: NormalizedUsage = {
  promptTokens: 10,
  completionTokens: 5,
  totalTokens: 15,
  cachedTokens: 0,
  reasoningTokens: 0,
}

function grant(i: number): MeterGrant {
  return {
    reservationId: `res-${i}`,
    requestId: `req-${i}`,
    model: 'svc-cell',
    snapshot: SNAPSHOT,
    headers: {},
  }
}

const settled = { usage, estimated: false, provider: 'mock', status: 200 }

beforeEach(() => resetMeteringClientState())
afterEach(() => resetMeteringClientState())

describe('metering client: settle delivery', () => {
  it('a settle resolves only once the object has answered (stored the row)', async () => {
    const limiter = new RecordingLimiter()
    let release: () => void = () => {}
    limiter.gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const tenant = identity()
    const meter = openMeter(namespaceOf(limiter), tenant, 'chat.completions', { leases: false })
    let done = false
    const settling = meter.settle(grant(0), settled).then((ok) => {
      done = true
      return ok
    })
    await vi.waitFor(() => expect(limiter.sending).toBe(1))
    await Promise.resolve()
    expect(done).toBe(false)
    release()
    expect(await settling).toBe(true)
    expect(limiter.settleCalls).toEqual([
      [
        expect.objectContaining({
          tenantId: tenant.tenantId,
          mode: 'live',
          planId: 'pro',
          reservationId: 'res-0',
          requestId: 'req-0',
          endpoint: 'chat.completions',
          principal: 'key:k1',
          provider: 'mock',
          usage: { promptTokens: 10, completionTokens: 5, cachedTokens: 0, reasoningTokens: 0 },
          estimated: false,
          status: 200,
          // A grant without admittedAt (stored before the field existed) has no latency.
          latencyMs: null,
        }),
      ],
    ])
  })

  it('the latency is measured from admission to the end of the work; the status is what the caller says', async () => {
    const limiter = new RecordingLimiter()
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    const admitted = await meter.acquire(
      { requestId: 'req-a', model: 'svc-cell', estimatedTokens: 10 },
      PLAN_CATALOG,
    )
    expect(admitted.admittedAt).toBeTypeOf('number')
    // A settle sent after the work ended (a retry after a restart) counts to the end, not to the send.
    await meter.settle(
      { ...grant(1), admittedAt: 1_000_000 },
      { ...settled, status: 502, endedAt: 1_001_234 },
    )
    await meter.settle({ ...grant(2), admittedAt: Date.now() - 5_000 }, settled)
    const [[first], [second]] = limiter.settleCalls as [[SettleInput], [SettleInput]]
    expect(first).toMatchObject({ reservationId: 'res-1', status: 502, latencyMs: 1234 })
    expect(second.status).toBe(200)
    expect(second.latencyMs).toBeGreaterThanOrEqual(5_000)
    expect(second.latencyMs).toBeLessThan(60_000)
  })

  it('parallel settles each reach the object once', async () => {
    const limiter = new RecordingLimiter()
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => meter.settle(grant(i), settled)))
    expect(results.every(Boolean)).toBe(true)
    expect(limiter.delivered().sort()).toEqual(Array.from({ length: 20 }, (_, i) => `res-${i}`).sort())
  })

  it('a failed send is retried: every settle is delivered exactly once', async () => {
    const limiter = new RecordingLimiter()
    limiter.failSettles = 2
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => meter.settle(grant(i), settled)))
    expect(results.every(Boolean)).toBe(true)
    expect(limiter.delivered().sort()).toEqual(['res-0', 'res-1', 'res-2', 'res-3', 'res-4'])
  })

  it('an object unreachable through every retry: false, and the loss is logged with the request id', async () => {
    const limiter = new RecordingLimiter()
    limiter.failSettles = 100
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    expect(await meter.settle(grant(7), settled)).toBe(false)
    expect(limiter.delivered()).toEqual([])
    expect(errors.mock.calls.map((c) => String(c[0])).join('\n')).toMatch(
      /"event":"usage_unrecorded".*"req-7"/,
    )
    errors.mockRestore()
  })

  it('an acquire carries no settles: usage is never waiting in the isolate for a later request', async () => {
    const limiter = new RecordingLimiter()
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    await meter.settle(grant(0), settled)
    await meter.acquire({ requestId: 'req-1', model: 'svc-cell', estimatedTokens: 10 }, PLAN_CATALOG)
    expect(limiter.acquireCalls[0]).not.toHaveProperty('settles')
    expect(limiter.delivered()).toEqual(['res-0'])
  })

  it('a checkpoint goes out at once and never throws, even when the object is unreachable', async () => {
    const limiter = new RecordingLimiter()
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    await meter.checkpoint(grant(1), { ...settled, estimated: true })
    // A request still running has no status or latency yet.
    expect(limiter.checkpointCalls).toEqual([
      [expect.objectContaining({ reservationId: 'res-1', estimated: true, status: null, latencyMs: null })],
    ])
    limiter.failCheckpoints = 1
    const warnings = vi.spyOn(console, 'error').mockImplementation(() => {})
    await expect(meter.checkpoint(grant(2), settled)).resolves.toBeUndefined()
    warnings.mockRestore()
  })
})
