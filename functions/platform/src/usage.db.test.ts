/**
 * The request log as the console reads it (GET /platform/v1/usage/requests), against Postgres:
 * each row's status and latency as the RateLimiter flushed them (null for a request billed from
 * its last checkpoint and for rows older than the columns), the answer in the shape OpenAPI
 * documents, and scoped to the caller's tenant and, for a member, to their own credential.
 */
import { describe, expect, it } from 'vitest'
import { flushLedger } from '../../../durable-objects/rate-limiter/metering-store'
import { usageLedger } from '../../../shared/db/schema'
import type { LedgerEntry } from '../../../shared/metering/metering.schemas'
import { getPlan, PLAN_CATALOG } from '../../../shared/plans/plan-catalog'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv, withTestDatabase } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily } from '../../../test/unit/family-call'
import PlatformWorker from './index'
import { UsageRequestListSchema, UsageSchema } from './workspace.schemas'

const pro = getPlan('pro', PLAN_CATALOG)!

/** A test key: the rows below are test usage, which test mode sees (live mode does not). */
const testCaller = (overrides: Parameters<typeof apiKeyIdentity>[0] = {}): Identity => {
  const identity = apiKeyIdentity(overrides)
  const principal =
    identity.principal.kind === 'api_key'
      ? { ...identity.principal, mode: 'test' as const }
      : identity.principal
  return { ...identity, mode: 'test', principal }
}

const requests = async (identity: Identity, query = '') => {
  const res = await callFamily(PlatformWorker, databaseEnv, `/platform/v1/usage/requests${query}`, {
    identity,
  })
  expect(res.status, await res.clone().text()).toBe(200)
  // Parsed by the schema the OpenAPI document is generated from: the answer is what it documents.
  return UsageRequestListSchema.parse(await res.json())
}

function entry(requestId: string, keyId: string, at: number, ended: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    reservationId: crypto.randomUUID(),
    requestId,
    createdAt: at,
    principal: `key:${keyId}`,
    mode: 'test',
    endpoint: 'chat.completions',
    model: 'svc-cell',
    provider: 'svc-test-mode',
    promptTokens: 12,
    completionTokens: 30,
    cachedTokens: 0,
    reasoningTokens: 0,
    unit: 'tokens',
    quantity: 42,
    creditsUnits: 0,
    estimated: false,
    status: 200,
    latencyMs: 412,
    ...ended,
  }
}

describe('GET /platform/v1/usage/requests: status and latency', () => {
  it("lists each request with the status its client received and its latency, the tenant's own only", async () => {
    const tenantId = await createTenant()
    const otherTenant = await createTenant()
    const keyId = crypto.randomUUID()
    const now = Date.now()
    await withTestDatabase(async (db) => {
      await flushLedger(
        db,
        tenantId,
        'test',
        [
          entry('req-ok', keyId, now - 3_000),
          entry('req-failed-stream', keyId, now - 2_000, { status: 502, latencyMs: 9_001 }),
          // Billed from its last checkpoint: it never ended.
          entry('req-orphan', keyId, now - 1_000, { status: null, latencyMs: null, estimated: true }),
        ],
        pro,
        now,
      )
      await flushLedger(db, otherTenant, 'test', [entry('req-elsewhere', keyId, now - 500)], pro, now)
      // A row written before the columns existed, as the migration leaves it.
      await db.insert(usageLedger).values({
        tenantId,
        requestId: 'req-before-columns',
        principal: `key:${keyId}`,
        mode: 'test',
        endpoint: 'chat.completions',
        model: 'svc-cell',
        provider: 'svc-test-mode',
        promptTokens: 1,
        completionTokens: 1,
        creditsCents: '0',
        createdAt: new Date(now - 4_000),
      })
    })

    const list = await requests(testCaller({ tenantId }))
    expect(list.data.map((r) => [r.request_id, r.status, r.latency_ms, r.estimated])).toEqual([
      ['req-orphan', null, null, true],
      ['req-failed-stream', 502, 9_001, false],
      ['req-ok', 200, 412, false],
      ['req-before-columns', null, null, false],
    ])
    expect((await requests(testCaller({ tenantId: otherTenant }))).data.map((r) => r.request_id)).toEqual([
      'req-elsewhere',
    ])
  })

  it('a request that failed after admission is listed with its status; the charts count it, its tokens and credits are zero', async () => {
    const tenantId = await createTenant()
    const keyId = crypto.randomUUID()
    const now = Date.now()
    const failed = {
      provider: 'none',
      promptTokens: 0,
      completionTokens: 0,
      quantity: 0,
      status: 502,
      latencyMs: 2_100,
    }
    await withTestDatabase((db) =>
      flushLedger(
        db,
        tenantId,
        'test',
        [entry('req-ok', keyId, now - 2_000), entry('req-down', keyId, now - 1_000, failed)],
        pro,
        now,
      ),
    )
    const owner = testCaller({ tenantId })
    expect((await requests(owner)).data[0]).toMatchObject({
      request_id: 'req-down',
      status: 502,
      latency_ms: 2_100,
      prompt_tokens: 0,
      completion_tokens: 0,
      credits_cents: 0,
    })
    const res = await callFamily(PlatformWorker, databaseEnv, '/platform/v1/usage?days=7&mode=test', {
      identity: owner,
    })
    expect(UsageSchema.parse(await res.json()).totals).toEqual({ requests: 2, tokens: 42, credits_cents: 0 })
  })

  it("a member sees the status and latency of their own credential's requests only", async () => {
    const tenantId = await createTenant()
    const mine = crypto.randomUUID()
    const colleague = crypto.randomUUID()
    const now = Date.now()
    await withTestDatabase((db) =>
      flushLedger(
        db,
        tenantId,
        'test',
        [
          entry('req-mine', mine, now - 2_000, { latencyMs: 77 }),
          entry('req-theirs', colleague, now - 1_000),
        ],
        pro,
        now,
      ),
    )
    const member = testCaller({ tenantId, keyId: mine, role: 'member' })
    expect((await requests(member)).data.map((r) => [r.request_id, r.status, r.latency_ms])).toEqual([
      ['req-mine', 200, 77],
    ])
    // Asking for the colleague's key by id does not widen a member's view.
    expect((await requests(member, `?key_id=${colleague}`)).data).toEqual([])
  })

  it("shows the caller's mode only: live usage live, test usage in test mode, naming the other mode shows nothing", async () => {
    const tenantId = await createTenant()
    const keyId = crypto.randomUUID()
    const now = Date.now()
    await withTestDatabase(async (db) => {
      await flushLedger(db, tenantId, 'test', [entry('req-test', keyId, now - 2_000)], pro, now)
      await flushLedger(
        db,
        tenantId,
        'live',
        [entry('req-live', keyId, now - 1_000, { mode: 'live' })],
        pro,
        now,
      )
    })
    const live = apiKeyIdentity({ tenantId })
    const test = testCaller({ tenantId })
    expect((await requests(live)).data.map((r) => r.request_id)).toEqual(['req-live'])
    expect((await requests(test)).data.map((r) => r.request_id)).toEqual(['req-test'])
    expect((await requests(live, '?mode=test')).data).toEqual([])
    const report = await callFamily(PlatformWorker, databaseEnv, '/platform/v1/usage?days=7&mode=test', {
      identity: live,
    })
    expect(UsageSchema.parse(await report.json()).data).toEqual([])
  })
})

describe('GET /platform/v1/usage/requests: pages and the outcome filter', () => {
  it('pages through requests made in the same millisecond without skipping or repeating one', async () => {
    const tenantId = await createTenant()
    const keyId = crypto.randomUUID()
    const now = Date.now()
    // A batch flushed at once: seven requests admitted in the same millisecond, and an older one.
    const same = Array.from({ length: 7 }, (_, i) => entry(`req-tied-${i}`, keyId, now - 1_000))
    await withTestDatabase((db) =>
      flushLedger(db, tenantId, 'test', [...same, entry('req-older', keyId, now - 5_000)], pro, now),
    )
    const owner = testCaller({ tenantId })
    const seen: string[] = []
    let cursor: string | null = null
    for (let page = 0; page < 10; page++) {
      const list = await requests(owner, `?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      seen.push(...list.data.map((r) => r.request_id))
      expect(list.has_more).toBe(list.next_cursor !== null)
      cursor = list.next_cursor
      if (!cursor) break
    }
    expect(seen).toHaveLength(8)
    expect(new Set(seen).size).toBe(8)
    expect(seen.at(-1)).toBe('req-older')

    const bad = await callFamily(
      PlatformWorker,
      databaseEnv,
      '/platform/v1/usage/requests?cursor=not-a-cursor',
      {
        identity: owner,
      },
    )
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('cursor')
  })

  it('filters the log to failed or succeeded requests', async () => {
    const tenantId = await createTenant()
    const keyId = crypto.randomUUID()
    const now = Date.now()
    await withTestDatabase((db) =>
      flushLedger(
        db,
        tenantId,
        'test',
        [
          entry('req-ok', keyId, now - 3_000),
          entry('req-cut', keyId, now - 2_000, { status: 499 }),
          entry('req-down', keyId, now - 1_000, { status: 502, promptTokens: 0, completionTokens: 0 }),
          entry('req-orphan', keyId, now - 500, { status: null, latencyMs: null, estimated: true }),
        ],
        pro,
        now,
      ),
    )
    const owner = testCaller({ tenantId })
    const ids = async (query: string) => (await requests(owner, query)).data.map((r) => r.request_id)
    expect(await ids('?outcome=failed')).toEqual(['req-down', 'req-cut'])
    expect(await ids('?outcome=succeeded')).toEqual(['req-ok'])
    expect(await ids('')).toEqual(['req-orphan', 'req-down', 'req-cut', 'req-ok'])
  })
})
