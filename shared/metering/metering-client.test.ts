/**
 * How the metering client delivers settles: one flusher per object and isolate sends what no
 * acquire carried, in batches; failed sends are retried without losing or doubling anything.
 * The RateLimiter here is a recording stand-in (the real object is exercised in
 * durable-objects/rate-limiter*.do.test.ts); only its RPC surface matters to the client.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { NormalizedUsage } from '../providers/chat-wire'
import type { Identity } from '../worker/request-context'
import type { AcquireInput, AcquireResult, LeaseReturnInput, SettleInput } from './metering.schemas'
import {
  type MeterGrant,
  openMeter,
  type RateLimiterNamespace,
  resetMeteringClientState,
} from './metering-client'

const SNAPSHOT = {
  limitRequests: 100,
  remainingRequests: 99,
  resetRequestsMs: 0,
  limitTokens: 10_000,
  remainingTokens: 9_000,
  resetTokensMs: 0,
}

/** The object's side: what reached it, and failures to inject. */
class RecordingLimiter {
  readonly settleCalls: SettleInput[][] = []
  readonly acquireCalls: AcquireInput[] = []
  failSettles = 0
  failAcquires = 0
  /** When set, settleMany waits for it (a send in progress). */
  gate: Promise<void> | null = null
  /** settleMany calls in progress. */
  sending = 0

  async acquire(input: AcquireInput): Promise<AcquireResult> {
    this.acquireCalls.push(input)
    await Promise.resolve()
    if (this.failAcquires > 0) {
      this.failAcquires -= 1
      throw new Error('object unreachable')
    }
    return { kind: 'granted', snapshot: SNAPSHOT }
  }

  async settleMany(inputs: SettleInput[], _returns: LeaseReturnInput[] = []): Promise<unknown[]> {
    this.sending += 1
    await (this.gate ?? Promise.resolve())
    this.sending -= 1
    if (this.failSettles > 0) {
      this.failSettles -= 1
      throw new Error('object unreachable')
    }
    this.settleCalls.push([...inputs])
    return inputs.map(() => ({ recorded: true, creditsUnits: 0 }))
  }

  /** Reservation ids delivered, in order. */
  delivered(): string[] {
    return [
      ...this.acquireCalls.flatMap((call) => (call.settles ?? []).map((s) => s.reservationId)),
      ...this.settleCalls.flat().map((s) => s.reservationId),
    ]
  }
}

function namespaceOf(limiter: RecordingLimiter): RateLimiterNamespace {
  return {
    idFromName: (name: string) => name,
    get: () => limiter,
  } as unknown as RateLimiterNamespace
}

/** A new tenant per test, so a test's leftover flusher never meets the next test's queue. */
const identity = (): Identity => ({
  tenantId: crypto.randomUUID(),
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

const settled = { usage, estimated: false, provider: 'mock' }

beforeEach(() => resetMeteringClientState())
afterEach(() => resetMeteringClientState())

describe('metering client: settle delivery', () => {
  it('parallel settles of one isolate go out in one batch, sent by the first of them', async () => {
    const limiter = new RecordingLimiter()
    const tenant = identity()
    const meter = openMeter(namespaceOf(limiter), tenant, 'chat.completions', { leases: false })
    const settles = Array.from({ length: 50 }, (_, i) => meter.settle(grant(i), settled))
    await Promise.all(settles)
    expect(limiter.settleCalls).toHaveLength(1)
    expect(limiter.delivered()).toEqual(Array.from({ length: 50 }, (_, i) => `res-${i}`))
    expect(limiter.settleCalls[0]![0]).toMatchObject({
      tenantId: tenant.tenantId,
      mode: 'live',
      planId: 'pro',
      requestId: 'req-0',
      endpoint: 'chat.completions',
      principal: 'key:k1',
      provider: 'mock',
      usage: { promptTokens: 10, completionTokens: 5, cachedTokens: 0, reasoningTokens: 0 },
      estimated: false,
    })
  })

  it('a settle that finds the flusher running only queues and returns at once', async () => {
    const limiter = new RecordingLimiter()
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    const first = meter.settle(grant(0), settled)
    const second = meter.settle(grant(1), settled)
    const returned = await Promise.race([
      second.then(() => 'returned'),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 2)),
    ])
    expect(returned).toBe('returned')
    expect(limiter.delivered()).toEqual([])
    await first
    expect(limiter.settleCalls).toHaveLength(1)
    expect(limiter.delivered()).toEqual(['res-0', 'res-1'])
  })

  it('settles queued while a batch is being sent go out with the next batch of the same flusher', async () => {
    const limiter = new RecordingLimiter()
    let release: () => void = () => {}
    limiter.gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    const first = meter.settle(grant(0), settled)
    await vi.waitFor(() => expect(limiter.sending).toBe(1))
    await meter.settle(grant(1), settled)
    release()
    await first
    expect(limiter.settleCalls.map((call) => call.map((s) => s.reservationId))).toEqual([
      ['res-0'],
      ['res-1'],
    ])
  })

  it('a failed send is retried: every settle is delivered exactly once', async () => {
    const limiter = new RecordingLimiter()
    limiter.failSettles = 2
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    await Promise.all(Array.from({ length: 5 }, (_, i) => meter.settle(grant(i), settled)))
    expect(limiter.delivered()).toEqual(['res-0', 'res-1', 'res-2', 'res-3', 'res-4'])
  })

  it('settles ride along with the next acquire; a failed acquire gives them back to the flusher', async () => {
    const limiter = new RecordingLimiter()
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    const settling = [meter.settle(grant(0), settled), meter.settle(grant(1), settled)]
    limiter.failAcquires = 1
    await expect(
      meter.acquire({ requestId: 'req-2', model: 'svc-cell', estimatedTokens: 10 }),
    ).rejects.toThrow('object unreachable')
    expect(limiter.acquireCalls[0]?.settles?.map((s) => s.reservationId)).toEqual(['res-0', 'res-1'])
    await meter.acquire({ requestId: 'req-3', model: 'svc-cell', estimatedTokens: 10 })
    await Promise.all(settling)
    // Carried by the second acquire (the first failed); never sent twice.
    expect(limiter.acquireCalls[1]?.settles?.map((s) => s.reservationId)).toEqual(['res-0', 'res-1'])
    expect(limiter.settleCalls).toHaveLength(0)
  })

  it('the flusher waits for an acquire carrying settles and sends them itself if it fails', async () => {
    const limiter = new RecordingLimiter()
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    const settling = meter.settle(grant(0), settled)
    limiter.failAcquires = 1
    await expect(
      meter.acquire({ requestId: 'req-1', model: 'svc-cell', estimatedTokens: 10 }),
    ).rejects.toThrow()
    await settling
    expect(limiter.settleCalls.flat().map((s) => s.reservationId)).toEqual(['res-0'])
  })

  it('after six failed sends in a row the flusher stops; the queue goes with the next acquire', async () => {
    const limiter = new RecordingLimiter()
    limiter.failSettles = 6
    const meter = openMeter(namespaceOf(limiter), identity(), 'chat.completions', { leases: false })
    await meter.settle(grant(0), settled)
    expect(limiter.delivered()).toEqual([])
    await meter.acquire({ requestId: 'req-1', model: 'svc-cell', estimatedTokens: 10 })
    expect(limiter.delivered()).toEqual(['res-0'])
  })
})
