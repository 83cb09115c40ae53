import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import type {
  AcquireInput,
  LedgerEntry,
  MeteringMode,
  SettleInput,
} from '../../shared/metering/metering.schemas'
import { CREDIT_UNITS_PER_CENT } from '../../shared/metering/pricing'
import { ORPHAN_AFTER_MS, type RateLimiter } from './rate-limiter.do'
import { keptLedger, openRequestCount, unflushedCount } from './rate-limiter-storage.fixtures'
import { MemoryStore } from './rate-limiter-store.fixtures'

// These tests run inside the hosting worker: the namespace of the class itself.
const RATE_LIMITER = (env as unknown as { RATE_LIMITER: DurableObjectNamespace<RateLimiter> }).RATE_LIMITER
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0)

interface Harness {
  stub: DurableObjectStub<RateLimiter>
  tenantId: string
  mode: MeteringMode
  store: MemoryStore
  time: { now: number }
  acquire(reservationId: string, extra?: Partial<AcquireInput>): ReturnType<RateLimiter['acquire']>
  settleInput(reservationId: string, prompt: number, completion: number): SettleInput
  install(): Promise<void>
}

async function harness(mode: MeteringMode, planId = 'free', store = new MemoryStore(NOW)): Promise<Harness> {
  const tenantId = crypto.randomUUID()
  const stub = RATE_LIMITER.get(RATE_LIMITER.idFromName(`${tenantId}:${mode}`))
  const time = { now: NOW }
  const scope = { tenantId, mode, planId }
  const h: Harness = {
    stub,
    tenantId,
    mode,
    store,
    time,
    acquire: (reservationId, extra = {}) =>
      stub.acquire({ ...scope, reservationId, model: 'svc-cell', estimatedTokens: 100, ...extra }),
    settleInput: (reservationId, prompt, completion) => ({
      ...scope,
      reservationId,
      requestId: `req_${reservationId}`,
      model: 'svc-cell',
      endpoint: 'chat.completions',
      principal: 'key:test',
      provider: 'fake',
      usage: { promptTokens: prompt, completionTokens: completion, cachedTokens: 0, reasoningTokens: 0 },
      estimated: false,
    }),
    // A fresh instance (first use, or after eviction) gets the in-memory store and the test clock.
    install: () =>
      runInDurableObject(stub, (instance: RateLimiter) => {
        instance.store = store
        instance.clock = () => time.now
      }),
  }
  await h.install()
  return h
}

const pending = (h: Harness) => runInDurableObject(h.stub, (_, state) => unflushedCount(state.storage))

describe('RateLimiter: exact under concurrency', () => {
  it('30 parallel acquires against 20 requests/min: exactly 20 are admitted (test mode)', async () => {
    const h = await harness('test')
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => h.acquire(`r${i}`)))
    expect(results.filter((r) => r.kind === 'granted')).toHaveLength(20)
    const refused = results.filter((r) => r.kind === 'refused')
    expect(refused).toHaveLength(10)
    for (const r of refused) if (r.kind === 'refused') expect(r.decision.reason).toBe('rate_limited')
  })

  it('parallel acquires against the last of the monthly allowance: no overshoot beyond one request (live)', async () => {
    const store = new MemoryStore(NOW)
    store.balance = { ...store.balance, tokensUsed: 199_000 }
    const h = await harness('live', 'free', store)
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => h.acquire(`r${i}`, { estimatedTokens: 300 })),
    )
    // 199,000 + 3 × 300 = 199,900 < 200,000 admits a fourth (crossing); the rest are refused.
    expect(results.filter((r) => r.kind === 'granted')).toHaveLength(4)
    const reasons = results.flatMap((r) => (r.kind === 'refused' ? [r.decision.reason] : []))
    expect(new Set(reasons)).toEqual(new Set(['token_allowance_exhausted']))
    expect(store.calls.load).toBe(1)
  })
})

describe('RateLimiter: ledger and flush', () => {
  it('settles once per request id, keeps the row until the alarm flushes it to the store', async () => {
    const h = await harness('live', 'pro')
    await h.acquire('a')
    expect(await h.stub.settle(h.settleInput('a', 40, 10))).toEqual({ recorded: true, creditsUnits: 0 })
    expect(await h.stub.settle(h.settleInput('a', 40, 10))).toEqual({ recorded: false, creditsUnits: 0 })
    expect(await pending(h)).toBe(1)
    expect(h.store.ledger.size).toBe(0)

    expect(await runDurableObjectAlarm(h.stub)).toBe(true)
    expect(await pending(h)).toBe(0)
    expect([...h.store.ledger.values()]).toEqual([
      expect.objectContaining({
        reservationId: 'a',
        requestId: 'req_a',
        mode: 'live',
        promptTokens: 40,
        completionTokens: 10,
      }),
    ])
    expect(h.store.balance.tokensUsed).toBe(50)
  })

  it("carries each request's status and latency from the settle through storage to the flush", async () => {
    const h = await harness('live', 'pro')
    await h.acquire('ok')
    await h.acquire('cut')
    await h.stub.settleMany([
      { ...h.settleInput('ok', 40, 10), status: 200, latencyMs: 412 },
      { ...h.settleInput('cut', 40, 3), status: 502, latencyMs: 9_001 },
    ])
    // A caller older than the fields: no status, no latency.
    await h.acquire('older')
    await h.stub.settle(h.settleInput('older', 1, 1))
    await runDurableObjectAlarm(h.stub)
    expect(h.store.ledger.get('ok')).toMatchObject({ status: 200, latencyMs: 412 })
    expect(h.store.ledger.get('cut')).toMatchObject({ status: 502, latencyMs: 9_001 })
    expect(h.store.ledger.get('older')).toMatchObject({ status: null, latencyMs: null })
  })

  it('an admitted request that failed is logged once with its status and zero charge; the balance does not move', async () => {
    const store = new MemoryStore(NOW)
    store.balance = { ...store.balance, tokensUsed: 1_000, creditsUnits: 50_000, usageCreditsEnabled: true }
    const h = await harness('live', 'pro', store)
    await h.acquire('ok')
    await h.acquire('failed')
    await h.stub.settle({ ...h.settleInput('ok', 40, 10), status: 200, latencyMs: 300 })
    const failed = {
      ...h.settleInput('failed', 0, 0),
      usage: null,
      provider: 'none',
      status: 502,
      latencyMs: 2_100,
    }
    expect(await h.stub.settle(failed)).toEqual({ recorded: true, creditsUnits: 0 })
    // A resend (lost answer) changes nothing.
    expect(await h.stub.settle(failed)).toEqual({ recorded: false, creditsUnits: 0 })
    await runDurableObjectAlarm(h.stub)
    expect(
      [...h.store.ledger.values()].map((e) => [
        e.reservationId,
        e.status,
        e.promptTokens + e.completionTokens,
        e.creditsUnits,
      ]),
    ).toEqual([
      ['ok', 200, 50, 0],
      ['failed', 502, 0, 0],
    ])
    expect(h.store.ledger.get('failed')).toMatchObject({ provider: 'none', quantity: 0, latencyMs: 2_100 })
    expect(h.store.balance).toMatchObject({ tokensUsed: 1_050, creditsUnits: 50_000, overageUnits: 0 })
    // After a restart the object's own figures agree: the failed row adds nothing to them.
    await evictDurableObject(h.stub)
    await h.install()
    const snapshot = await h.stub.snapshot({ tenantId: h.tenantId, mode: 'live', planId: 'pro' })
    const before = await runInDurableObject(h.stub, (_, state) => keptLedger(state.storage))
    expect(before.map((e) => e.reservationId)).toEqual(['ok', 'failed'])
    expect(snapshot?.remainingTokens).toBe((snapshot?.limitTokens ?? 0) - 50)
  })

  it('a settle resent after the object stopped remembering its reservation writes no second row', async () => {
    const h = await harness('live', 'pro')
    await h.acquire('a')
    await h.stub.settle(h.settleInput('a', 40, 10))
    expect(await pending(h)).toBe(1)
    expect(await runDurableObjectAlarm(h.stub)).toBe(true)
    expect(await pending(h)).toBe(0)
    // Past the two minutes the object remembers settled reservations in memory, within the ten
    // its stored rows are kept: the row's unique reservation id refuses the duplicate.
    h.time.now += 3 * 60_000
    await h.stub.settle(h.settleInput('a', 40, 10))
    expect(await pending(h)).toBe(0)
    expect(h.store.ledger.size).toBe(1)
  })

  it('a late resend storage ignored leaves no request id behind: a later request reusing it is not renamed', async () => {
    const h = await harness('live', 'pro')
    await h.acquire('a')
    await h.stub.settle(h.settleInput('a', 40, 10))
    expect(await pending(h)).toBe(1)
    expect(await runDurableObjectAlarm(h.stub)).toBe(true)
    h.time.now += 3 * 60_000
    await h.stub.settle(h.settleInput('a', 40, 10))
    expect(await pending(h)).toBe(0)
    await runDurableObjectAlarm(h.stub)
    // The caller's next request reuses the request id (x-request-id is the caller's choice): with
    // no unflushed row holding it, the ledger records it under that id, as for any first use.
    await h.acquire('b')
    await h.stub.settle({ ...h.settleInput('b', 5, 5), requestId: 'req_a' })
    expect(await pending(h)).toBe(1)
    expect(await runDurableObjectAlarm(h.stub)).toBe(true)
    expect([...h.store.ledger.values()].map((e) => [e.reservationId, e.requestId])).toEqual([
      ['a', 'req_a'],
      ['b', 'req_a'],
    ])
  })

  it('a failed flush keeps every row and re-arms the alarm; the retry delivers each row once', async () => {
    const h = await harness('live', 'pro')
    await h.stub.settleMany([h.settleInput('a', 1, 1), h.settleInput('b', 2, 2)])
    expect(await pending(h)).toBe(2)
    h.store.failures = 1
    expect(await runDurableObjectAlarm(h.stub)).toBe(true)
    expect(await pending(h)).toBe(2)
    expect(h.store.ledger.size).toBe(0)
    // The alarm re-armed itself after the failure.
    expect(await runDurableObjectAlarm(h.stub)).toBe(true)
    expect(await pending(h)).toBe(0)
    expect(h.store.ledger.size).toBe(2)
    expect(h.store.balance.tokensUsed).toBe(6)
    expect(await runDurableObjectAlarm(h.stub)).toBe(false)
  })

  it('a request id the caller reuses is metered twice, under distinct ledger ids', async () => {
    const h = await harness('live', 'pro')
    await h.acquire('reservation-1')
    await h.acquire('reservation-2')
    const first = { ...h.settleInput('reservation-1', 10, 10), requestId: 'req_same' }
    const second = { ...h.settleInput('reservation-2', 20, 20), requestId: 'req_same' }
    expect(await h.stub.settleMany([first, second])).toEqual([
      { recorded: true, creditsUnits: 0 },
      { recorded: true, creditsUnits: 0 },
    ])
    expect(await pending(h)).toBe(2)
    await runDurableObjectAlarm(h.stub)
    expect([...h.store.ledger.values()].map((e) => e.requestId)).toEqual(['req_same', 'req_same~reservat'])
    expect(h.store.balance.tokensUsed).toBe(60)
  })

  it('a settle is in storage when it answers: nothing acknowledged waits in memory', async () => {
    const h = await harness('live', 'pro')
    await h.acquire('a')
    expect(await h.stub.settle(h.settleInput('a', 40, 10))).toEqual({ recorded: true, creditsUnits: 0 })
    // Read straight from SQLite, without anything that could write rows held in memory first.
    const stored = await runInDurableObject(
      h.stub,
      (_: RateLimiter, state: DurableObjectState) =>
        state.storage.sql
          .exec<{ n: number }>(`select count(*) as n from ledger where reservation_id = 'a'`)
          .one().n,
    )
    expect(stored).toBe(1)
  })

  it('settles that arrive together are written in one statement, and each answers only once its row is stored', async () => {
    const h = await harness('live', 'pro')
    const ids = Array.from({ length: 12 }, (_, i) => `g${i}`)
    for (const id of ids) await h.acquire(id)
    // Counts the object's ledger writes (one statement, one storage transaction each).
    const writes: number[] = []
    await runInDurableObject(h.stub, (instance: RateLimiter) => {
      const target = instance as unknown as { writeLedger(entries: unknown[], inputs: unknown[]): void }
      const write = target.writeLedger.bind(instance)
      target.writeLedger = (entries, inputs) => {
        writes.push(entries.length)
        write(entries, inputs)
      }
    })
    const stored = (id: string) =>
      runInDurableObject(
        h.stub,
        (_: RateLimiter, state: DurableObjectState) =>
          state.storage.sql
            .exec<{ n: number }>(`select count(*) as n from ledger where reservation_id = ?`, id)
            .one().n,
      )
    // Sent at once, with a resend of the first among them: the resend records nothing and still
    // answers only after the row it duplicates is stored.
    const answers = await Promise.all([
      ...ids.map(async (id) => {
        const result = await h.stub.settle(h.settleInput(id, 40, 10))
        return { id, result, storedWhenAnswered: await stored(id) }
      }),
      h.stub.settle(h.settleInput('g0', 40, 10)).then(async (result) => ({
        id: 'g0',
        result,
        storedWhenAnswered: await stored('g0'),
      })),
    ])
    expect(answers.filter((a) => a.result.recorded)).toHaveLength(12)
    for (const answer of answers) expect(answer.storedWhenAnswered).toBe(1)
    expect(writes.reduce((a, b) => a + b, 0)).toBe(12)
    expect(writes.length).toBeLessThan(12)
    expect(await pending(h)).toBe(12)
  })

  it('test mode needs no database and records rows with zero credits', async () => {
    const h = await harness('test', 'pro')
    await runInDurableObject(h.stub, (instance: RateLimiter) => {
      instance.store = null
    })
    await h.acquire('a')
    expect((await h.stub.settle(h.settleInput('a', 10, 10))).recorded).toBe(true)
    expect(await pending(h)).toBe(1)
    const rows = await runInDurableObject(h.stub, (_instance: RateLimiter, state) =>
      state.storage.sql.exec('select mode, credits_units from ledger').toArray(),
    )
    expect(rows).toEqual([{ mode: 'test', credits_units: 0 }])
    // Flushing does need the database; once it is there the rows go out without a balance update.
    await h.install()
    expect(await runDurableObjectAlarm(h.stub)).toBe(true)
    expect([...h.store.ledger.values()]).toEqual([
      expect.objectContaining({ requestId: 'req_a', mode: 'test', creditsUnits: 0 }),
    ])
    expect(h.store.balance.tokensUsed).toBe(0)
  })
})

describe('RateLimiter: checkpoints of requests still running', () => {
  const checkpointCount = (h: Harness) =>
    runInDurableObject(h.stub, (_, state) => openRequestCount(state.storage))

  it('a request that never settles is billed as its last checkpoint once silent for a minute', async () => {
    const h = await harness('live', 'pro')
    await h.acquire('a')
    await h.stub.checkpoint([{ ...h.settleInput('a', 40, 3), estimated: true }])
    await h.stub.checkpoint([{ ...h.settleInput('a', 40, 25), estimated: true, status: 200, latencyMs: 5 }])
    expect(await checkpointCount(h)).toBe(1)
    // Within the minute the alarm flushes nothing of it (the stream may still be running).
    h.time.now += ORPHAN_AFTER_MS - 1
    await runDurableObjectAlarm(h.stub)
    expect(h.store.ledger.size).toBe(0)
    expect(await checkpointCount(h)).toBe(1)

    // The same alarm bills it and flushes the row.
    h.time.now += 1
    await runDurableObjectAlarm(h.stub)
    expect(await checkpointCount(h)).toBe(0)
    // It never ended: no status or latency is known, whatever its checkpoint carried.
    expect([...h.store.ledger.values()]).toEqual([
      expect.objectContaining({
        reservationId: 'a',
        promptTokens: 40,
        completionTokens: 25,
        estimated: true,
        status: null,
        latencyMs: null,
      }),
    ])
    expect(h.store.balance.tokensUsed).toBe(65)
  })

  it('survives a restart of the object: the checkpoint is in storage, and the orphan is billed after it', async () => {
    const h = await harness('test', 'pro')
    await h.acquire('a')
    await h.stub.checkpoint([{ ...h.settleInput('a', 12, 7), estimated: true }])
    await evictDurableObject(h.stub)
    await h.install()
    h.time.now += ORPHAN_AFTER_MS
    await runDurableObjectAlarm(h.stub)
    expect([...h.store.ledger.values()]).toEqual([
      expect.objectContaining({ reservationId: 'a', promptTokens: 12, completionTokens: 7, estimated: true }),
    ])
  })

  it('a settle replaces the checkpoint; a checkpoint arriving after the settle is ignored', async () => {
    const h = await harness('live', 'pro')
    await h.acquire('a')
    await h.stub.checkpoint([{ ...h.settleInput('a', 40, 3), estimated: true }])
    await h.stub.settle(h.settleInput('a', 40, 30))
    expect(await checkpointCount(h)).toBe(0)
    await h.stub.checkpoint([{ ...h.settleInput('a', 40, 20), estimated: true }])
    expect(await checkpointCount(h)).toBe(0)
    h.time.now += 2 * ORPHAN_AFTER_MS
    await runDurableObjectAlarm(h.stub)
    expect([...h.store.ledger.values()]).toEqual([
      expect.objectContaining({ reservationId: 'a', completionTokens: 30, estimated: false }),
    ])
  })
})

describe('RateLimiter: restarts and the balance', () => {
  it('after a restart, loads the balance plus unflushed rows and rebuilds the one-minute windows', async () => {
    const h = await harness('live', 'free')
    for (let i = 0; i < 20; i++) await h.acquire(`r${i}`)
    await h.stub.settleMany(Array.from({ length: 20 }, (_, i) => h.settleInput(`r${i}`, 500, 500)))
    // settleMany wrote the 20 rows before it answered; none is in Postgres yet.
    expect(await pending(h)).toBe(20)
    await evictDurableObject(h.stub)
    await h.install()
    h.time.now += 1_000
    const result = await h.acquire('after-restart')
    expect(result.kind).toBe('refused')
    if (result.kind === 'refused') expect(result.decision.binding_limit?.unit).toBe('requests')
    expect(h.store.calls.load).toBe(2)
    // Nothing was flushed yet, but the 20,000 tokens count against the allowance.
    const snapshot = await h.stub.snapshot({ tenantId: h.tenantId, mode: 'live', planId: 'free' })
    expect(snapshot?.remainingTokens).toBe(40_000 - 20_000)
    h.time.now += 60_000
    expect((await h.acquire('next-minute')).kind).toBe('granted')
  })

  it("a paid tool's use, unflushed, still counts against its allowance after a restart", async () => {
    const h = await harness('live', 'pro')
    h.store.balance = { ...h.store.balance }
    const searches = (n: number, from: number) => Array.from({ length: n }, (_, i) => `s${from + i}`)
    const tool = { model: 'web_search' as const, estimatedTokens: 0, estimatedQuantity: 1 }
    for (const id of searches(3, 0)) await h.acquire(id, tool)
    await h.stub.settleMany(
      searches(3, 0).map((id) => ({
        ...h.settleInput(id, 0, 0),
        model: 'web_search' as const,
        endpoint: 'code.search',
        usage: { promptTokens: 0, completionTokens: 0, cachedTokens: 0, reasoningTokens: 0, quantity: 1 },
      })),
    )
    await evictDurableObject(h.stub)
    await h.install()
    const kept = await runInDurableObject(h.stub, (_, state) => keptLedger(state.storage))
    expect(kept).toEqual(
      searches(3, 0).map((id) =>
        expect.objectContaining({ reservationId: id, model: 'web_search', unit: 'requests', quantity: 1 }),
      ),
    )
    // 997 more are in Postgres already: the 1,000th of the month was the last one included.
    h.store.ledger.set('earlier', {
      ...kept[0]!,
      requestId: 'earlier',
      reservationId: 'earlier',
      quantity: 997,
    })
    await evictDurableObject(h.stub)
    await h.install()
    const refused = await h.acquire('s3', tool)
    expect(refused).toMatchObject({
      kind: 'refused',
      decision: { reason: 'tier_allowance_exhausted', binding_limit: { unit: 'requests', used: 1_000 } },
    })
  })

  it('migrates a version-1 ledger in place: its rows become token rows with their quantity', async () => {
    const h = await harness('test', 'pro')
    await h.acquire('a')
    await h.stub.settle(h.settleInput('a', 40, 10))
    const rows = await runInDurableObject(h.stub, (_instance: RateLimiter, state) => {
      const sql = state.storage.sql
      // Back to version 1: no unit, quantity, status or latency columns.
      sql.exec(`alter table ledger drop column unit`)
      sql.exec(`alter table ledger drop column quantity`)
      sql.exec(`alter table ledger drop column status`)
      sql.exec(`alter table ledger drop column latency_ms`)
      sql.exec(`update meta set value = '1' where key = 'schema_version'`)
    }).then(async () => {
      await evictDurableObject(h.stub)
      await h.install()
      return runInDurableObject(h.stub, (_, state) => ({
        version: state.storage.sql
          .exec<{ value: string }>(`select value from meta where key = 'schema_version'`)
          .one().value,
        kept: keptLedger(state.storage),
      }))
    })
    expect(rows.version).toBe('4')
    expect(rows.kept).toEqual([
      expect.objectContaining({
        reservationId: 'a',
        unit: 'tokens',
        quantity: 50,
        status: null,
        latencyMs: null,
      }),
    ])
  })

  it('migrates a version-2 ledger in place: its rows keep no status or latency, new rows record them', async () => {
    const h = await harness('test', 'pro')
    await h.acquire('old')
    await h.stub.settle({ ...h.settleInput('old', 40, 10), status: 200, latencyMs: 80 })
    await runInDurableObject(h.stub, (_instance: RateLimiter, state) => {
      const sql = state.storage.sql
      // Back to version 2, as objects persisted before the request log's columns are.
      sql.exec(`alter table ledger drop column status`)
      sql.exec(`alter table ledger drop column latency_ms`)
      sql.exec(`update meta set value = '2' where key = 'schema_version'`)
    })
    await evictDurableObject(h.stub)
    await h.install()
    await h.acquire('new')
    await h.stub.settle({ ...h.settleInput('new', 5, 5), status: 502, latencyMs: 1_234 })
    const rows = await runInDurableObject(h.stub, (_, state) => ({
      version: state.storage.sql
        .exec<{ value: string }>(`select value from meta where key = 'schema_version'`)
        .one().value,
      kept: keptLedger(state.storage),
    }))
    expect(rows.version).toBe('4')
    expect(rows.kept).toEqual([
      expect.objectContaining({ reservationId: 'old', quantity: 50, status: null, latencyMs: null }),
      expect.objectContaining({ reservationId: 'new', quantity: 10, status: 502, latencyMs: 1_234 }),
    ])
    await runDurableObjectAlarm(h.stub)
    expect(h.store.ledger.get('new')).toMatchObject({ status: 502, latencyMs: 1_234 })
  })

  it('picks up credits bought elsewhere: a stale balance is re-read by the alarm', async () => {
    const store = new MemoryStore(NOW)
    store.balance = { ...store.balance, tokensUsed: 5_000_000, usageCreditsEnabled: true, creditsUnits: 0 }
    const h = await harness('live', 'pro', store)
    const first = await h.acquire('a')
    expect(first.kind === 'refused' && first.decision.reason).toBe('insufficient_credits')
    store.balance = { ...store.balance, creditsUnits: 1_000 * CREDIT_UNITS_PER_CENT }
    h.time.now += 10_000
    expect((await h.acquire('b')).kind).toBe('refused')
    expect(await runDurableObjectAlarm(h.stub)).toBe(true)
    expect(store.calls.read).toBe(1)
    expect((await h.acquire('c')).kind).toBe('granted')
  })

  it('rides out one failed balance load, answers unavailable after two, and recovers without a restart', async () => {
    const flaky = new MemoryStore(NOW)
    flaky.failures = 1
    expect((await (await harness('live', 'team', flaky)).acquire('a')).kind).toBe('granted')
    expect(flaky.calls.load).toBe(2)

    const down = new MemoryStore(NOW)
    down.failures = 2
    const h = await harness('live', 'team', down)
    expect(await h.acquire('a')).toEqual({ kind: 'unavailable', detail: 'connection refused' })
    expect((await h.acquire('b')).kind).toBe('granted')
  })

  it('serves one tenant and mode only', async () => {
    const h = await harness('test')
    await h.acquire('mine')
    const other = { tenantId: crypto.randomUUID(), mode: 'test' as const, planId: 'free' }
    const failure = await h.stub
      .acquire({ ...other, reservationId: 'other-tenant', model: 'svc-cell', estimatedTokens: 1 })
      .then(
        () => null,
        (err: unknown) => err,
      )
    expect(String(failure)).toMatch(/serves .*:test, not .*:test/)
  })
})

describe('RateLimiter: a principal’s unflushed usage (usage statements)', () => {
  const settledBy = async (h: Harness, reservationId: string, principal: string) => {
    await h.acquire(reservationId)
    await h.stub.settle({ ...h.settleInput(reservationId, 30, 5), principal, status: 200, latencyMs: 10 })
  }
  const query = (h: Harness, from = 0, to: number | null = null) =>
    h.stub.unflushedUsage({ tenantId: h.tenantId, mode: h.mode, principal: 'key:mine', from, to })
  const ids = (rows: readonly LedgerEntry[]) => rows.map((r) => r.reservationId)
  // Ahead of the real clock, so the flush alarm each settle arms never fires on its own here: only
  // runDurableObjectAlarm flushes.
  const LATER = Date.now() + 30 * 86_400_000
  const harnessLater = async () => {
    const h = await harness('test', 'pro')
    h.time.now = LATER
    return h
  }

  it("returns the principal's durable rows until Postgres has them, never another principal's", async () => {
    const h = await harnessLater()
    await settledBy(h, 'a', 'key:mine')
    await settledBy(h, 'other', 'key:theirs')
    expect(ids(await query(h))).toEqual(['a'])

    // A failed flush leaves the row where it was: still here, not in the store.
    h.store.failures = 1
    await runDurableObjectAlarm(h.stub)
    expect(h.store.ledger.size).toBe(0)
    expect(ids(await query(h))).toEqual(['a'])

    await runDurableObjectAlarm(h.stub)
    expect([...h.store.ledger.keys()].sort()).toEqual(['a', 'other'])
    expect(await query(h)).toEqual([])

    h.time.now = LATER + 60_000
    await settledBy(h, 'b', 'key:mine')
    h.time.now = LATER + 120_000
    await settledBy(h, 'c', 'key:mine')
    const [b] = await query(h)
    expect(b).toMatchObject({
      reservationId: 'b',
      requestId: 'req_b',
      principal: 'key:mine',
      createdAt: LATER + 60_000,
    })
    expect(b).toMatchObject({ promptTokens: 30, completionTokens: 5, status: 200 })
    // [from, to): the period's bounds.
    expect(ids(await query(h, LATER + 60_000, LATER + 120_000))).toEqual(['b'])
    expect(ids(await query(h, LATER + 60_001))).toEqual(['c'])
  })

  it('read before the store, it misses no settled row however the flush falls between the two reads', async () => {
    const h = await harnessLater()
    for (const id of ['a', 'b', 'c']) await settledBy(h, id, 'key:mine')
    await runDurableObjectAlarm(h.stub)
    for (const id of ['d', 'e']) await settledBy(h, id, 'key:mine')
    const fromObject = ids(await query(h))
    // The flush runs between the reader's two reads: the object's rows are in the store too now.
    await runDurableObjectAlarm(h.stub)
    const fromStore = [...h.store.ledger.keys()]
    expect(fromObject).toEqual(['d', 'e'])
    expect(new Set([...fromObject, ...fromStore])).toEqual(new Set(['a', 'b', 'c', 'd', 'e']))
  })

  it('refuses a query for another tenant or mode than the one it serves', async () => {
    const h = await harnessLater()
    await settledBy(h, 'a', 'key:mine')
    const asked = await runInDurableObject(h.stub, (instance: RateLimiter) =>
      instance
        .unflushedUsage({ tenantId: h.tenantId, mode: 'live', principal: 'key:mine', from: 0, to: null })
        .then(
          () => 'answered',
          (err: Error) => err.message,
        ),
    )
    expect(asked).toMatch(/serves .*:test, not .*:live/)
  })
})
