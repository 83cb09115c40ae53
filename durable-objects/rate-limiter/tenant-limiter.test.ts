import { Validator } from '@cfworker/json-schema'
import { describe, expect, it } from 'vitest'
import type { AcquireResult, MeteredUsage } from '../../shared/metering/metering.schemas'
import { CREDIT_UNITS_PER_CENT, usageCostUnits } from '../../shared/metering/pricing'
import {
  type BillingPlan,
  getPlan,
  PLAN_CATALOG,
  PLAN_CATALOG_CONFIG,
  parsePlanCatalog,
} from '../../shared/plans/plan-catalog'
import { actionRequiredError } from '../../shared/plans/upgrade-decision'
import schema from '../../shared/plans/upgrade-decision.schema.json'
import { billingPeriodAt } from './billing-period'
import { type LimiterBalance, TenantLimiter } from './tenant-limiter'

const plan = (id: string): BillingPlan => getPlan(id, PLAN_CATALOG)!
const free = plan('free')
const pro = plan('pro')
const team = plan('team')
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0)
const validator = new Validator(schema as object, '2020-12', false)

function balance(overrides: Partial<LimiterBalance> = {}): LimiterBalance {
  const period = billingPeriodAt(NOW)
  return {
    periodStart: period.start,
    periodEnd: period.end,
    tokensUsed: 0,
    resourceUse: new Map(),
    creditsUnits: 0,
    overageUnits: 0,
    usageCreditsEnabled: false,
    spendCapCents: null,
    ...overrides,
  }
}

const usage = (prompt: number, completion: number, extra: Partial<MeteredUsage> = {}): MeteredUsage => ({
  promptTokens: prompt,
  completionTokens: completion,
  cachedTokens: 0,
  reasoningTokens: 0,
  ...extra,
})

function settleRequest(
  reservationId: string,
  u: MeteredUsage | null,
  model: 'svc-cell' | 'svc-hive' | 'web_search' | 'transcription' | 'telemetry_ingest' = 'svc-cell',
) {
  return {
    reservationId,
    requestId: `req_${reservationId}`,
    model,
    endpoint: 'chat.completions',
    principal: 'key:k',
    provider: 'p',
    usage: u,
    estimated: false,
  }
}

function refusal(result: AcquireResult) {
  if (result.kind !== 'refused') throw new Error(`expected a refusal, got ${result.kind}`)
  const body = JSON.parse(
    JSON.stringify(actionRequiredError(result.decision, { catalog: PLAN_CATALOG }).toBody()),
  )
  expect(validator.validate(body).errors).toEqual([])
  return result.decision
}

describe('TenantLimiter: requests per minute', () => {
  it('admits exactly the limit in a burst, then refuses with the time until the oldest request leaves', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    const results = Array.from({ length: free.requestsPerMinute + 5 }, (_, i) =>
      limiter.acquire(free, { reservationId: `r${i}`, model: 'svc-cell', estimatedTokens: 10 }, NOW + i),
    )
    expect(results.filter((r) => r.kind === 'granted')).toHaveLength(free.requestsPerMinute)
    const decision = refusal(results[free.requestsPerMinute]!)
    expect(decision.reason).toBe('rate_limited')
    expect(decision.binding_limit).toMatchObject({
      kind: 'rate',
      unit: 'requests',
      limit: 20,
      used: 21,
      remaining: 0,
    })
    // The oldest request (at NOW) leaves the window at NOW + 60 s; the refusal came at NOW + 20 ms.
    expect(decision.binding_limit?.retry_after_seconds).toBeCloseTo(59.98, 2)
    expect(decision.required_plan).toBe('pro')
  })

  it('slides: one minute after the burst the window has room again', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    for (let i = 0; i < free.requestsPerMinute; i++)
      limiter.acquire(free, { reservationId: `r${i}`, model: 'svc-cell', estimatedTokens: 1 }, NOW)
    expect(
      limiter.acquire(free, { reservationId: 'x', model: 'svc-cell', estimatedTokens: 1 }, NOW + 59_999).kind,
    ).toBe('refused')
    expect(
      limiter.acquire(free, { reservationId: 'y', model: 'svc-cell', estimatedTokens: 1 }, NOW + 60_000).kind,
    ).toBe('granted')
  })

  it('reports the counters OpenAI-style: limit, remaining after this request, time until the oldest leaves', () => {
    const limiter = new TenantLimiter('test', null, PLAN_CATALOG)
    limiter.acquire(pro, { reservationId: 'a', model: 'svc-cell', estimatedTokens: 100 }, NOW)
    const result = limiter.acquire(
      pro,
      { reservationId: 'b', model: 'svc-cell', estimatedTokens: 50 },
      NOW + 1_000,
    )
    expect(result).toEqual({
      kind: 'granted',
      snapshot: {
        limitRequests: 120,
        remainingRequests: 118,
        resetRequestsMs: 59_000,
        limitTokens: 400_000,
        remainingTokens: 399_850,
        resetTokensMs: 59_000,
      },
    })
  })
})

describe('TenantLimiter: tokens per minute', () => {
  it('reserves the estimate, refuses what would exceed the limit, and frees it when settled lower', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    expect(
      limiter.acquire(free, { reservationId: 'a', model: 'svc-cell', estimatedTokens: 30_000 }, NOW).kind,
    ).toBe('granted')
    const refused = refusal(
      limiter.acquire(free, { reservationId: 'b', model: 'svc-cell', estimatedTokens: 15_000 }, NOW + 10),
    )
    expect(refused.binding_limit).toMatchObject({ kind: 'rate', unit: 'tokens', used: 45_000, limit: 40_000 })
    // The first request used far less than it reserved: the room comes back at once.
    limiter.settle(free, settleRequest('a', usage(900, 100)), NOW + 20)
    expect(
      limiter.acquire(free, { reservationId: 'b', model: 'svc-cell', estimatedTokens: 15_000 }, NOW + 30)
        .kind,
    ).toBe('granted')
  })

  it('a released reservation (nothing produced) gives its tokens back and writes no ledger entry', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    limiter.acquire(free, { reservationId: 'a', model: 'svc-cell', estimatedTokens: 39_000 }, NOW)
    // No status, or one that is no failure (a duplicate admission given back): nothing to log.
    expect(limiter.settle(free, settleRequest('a', null), NOW + 5)).toBeNull()
    expect(limiter.inFlight).toBe(0)
    expect(
      limiter.acquire(free, { reservationId: 'b', model: 'svc-cell', estimatedTokens: 39_000 }, NOW + 6).kind,
    ).toBe('granted')
    expect(limiter.settle(free, { ...settleRequest('b', null), status: 200 }, NOW + 7)).toBeNull()
  })

  it('a request released with a failure status gets a zero-charge row: tokens given back, balance untouched', () => {
    const start = balance({ tokensUsed: 150_000, creditsUnits: 5_000, usageCreditsEnabled: true })
    const limiter = new TenantLimiter('live', { ...start, resourceUse: new Map() }, PLAN_CATALOG)
    limiter.acquire(free, { reservationId: 'a', model: 'svc-cell', estimatedTokens: 39_000 }, NOW)
    const entry = limiter.settle(
      free,
      { ...settleRequest('a', null), provider: 'none', status: 502, latencyMs: 1_234 },
      NOW + 5,
    )
    expect(entry).toEqual({
      reservationId: 'a',
      requestId: 'req_a',
      createdAt: NOW,
      principal: 'key:k',
      mode: 'live',
      endpoint: 'chat.completions',
      model: 'svc-cell',
      provider: 'none',
      promptTokens: 0,
      completionTokens: 0,
      cachedTokens: 0,
      reasoningTokens: 0,
      unit: 'tokens',
      quantity: 0,
      creditsUnits: 0,
      estimated: false,
      status: 502,
      latencyMs: 1_234,
    })
    expect(limiter.inFlight).toBe(0)
    expect(limiter.balance).toMatchObject({ tokensUsed: 150_000, creditsUnits: 5_000, overageUnits: 0 })
    expect(limiter.balance?.resourceUse.size).toBe(0)
    // Its estimate left the tokens window; the request itself still counts against requests per minute.
    expect(limiter.snapshot(free, NOW + 6)).toMatchObject({
      remainingTokens: free.tokensPerMinute,
      remainingRequests: free.requestsPerMinute - 1,
    })
    // A paid tool's failed call: its own unit, nothing used.
    limiter.acquire(
      free,
      { reservationId: 't', model: 'web_search', estimatedTokens: 0, estimatedQuantity: 1 },
      NOW,
    )
    expect(
      limiter.settle(free, { ...settleRequest('t', null, 'web_search'), status: 502 }, NOW + 9),
    ).toMatchObject({ unit: 'requests', quantity: 0, creditsUnits: 0, status: 502 })
  })
})

describe('TenantLimiter: allowances and credits (live)', () => {
  it('token_allowance_exhausted when the monthly allowance is used and usage credits are off', () => {
    const limiter = new TenantLimiter('live', balance({ tokensUsed: 200_000 }), PLAN_CATALOG)
    const decision = refusal(
      limiter.acquire(free, { reservationId: 'a', model: 'svc-cell', estimatedTokens: 10 }, NOW),
    )
    expect(decision.reason).toBe('token_allowance_exhausted')
    expect(decision.binding_limit).toMatchObject({
      kind: 'tokens',
      used: 200_000,
      limit: 200_000,
      resets_at: '2026-12-01T00:00:00.000Z',
    })
  })

  it('counts in-flight reservations as used, so parallel requests cannot overshoot the allowance', () => {
    const limiter = new TenantLimiter('live', balance({ tokensUsed: 195_000 }), PLAN_CATALOG)
    const admitted = Array.from({ length: 10 }, (_, i) =>
      limiter.acquire(free, { reservationId: `r${i}`, model: 'svc-cell', estimatedTokens: 2_000 }, NOW),
    ).filter((r) => r.kind === 'granted')
    // 195k + 2k + 2k = 199k < 200k admits a third; 201k does not.
    expect(admitted).toHaveLength(3)
  })

  it('tier_allowance_exhausted for a model with its own allowance (svc-hive on Team)', () => {
    const limiter = new TenantLimiter(
      'live',
      balance({ resourceUse: new Map([['svc-hive', 2_000_000]]) }),
      PLAN_CATALOG,
    )
    const decision = refusal(
      limiter.acquire(team, { reservationId: 'a', model: 'svc-hive', estimatedTokens: 1 }, NOW),
    )
    expect(decision.reason).toBe('tier_allowance_exhausted')
    expect(decision.requested_model).toBe('svc-hive')
    expect(
      limiter.acquire(team, { reservationId: 'b', model: 'svc-cell', estimatedTokens: 1 }, NOW).kind,
    ).toBe('granted')
  })

  it('insufficient_credits and overage_cap_reached beyond the allowance with usage credits on', () => {
    const exhausted = { tokensUsed: 5_000_000, usageCreditsEnabled: true }
    const broke = new TenantLimiter('live', balance({ ...exhausted, creditsUnits: 0 }), PLAN_CATALOG)
    expect(
      refusal(broke.acquire(pro, { reservationId: 'a', model: 'svc-cell', estimatedTokens: 1 }, NOW)).reason,
    ).toBe('insufficient_credits')
    const capped = new TenantLimiter(
      'live',
      balance({
        ...exhausted,
        creditsUnits: 100_000 * CREDIT_UNITS_PER_CENT,
        overageUnits: 5_000 * CREDIT_UNITS_PER_CENT,
      }),
      PLAN_CATALOG,
    )
    expect(
      refusal(capped.acquire(pro, { reservationId: 'a', model: 'svc-cell', estimatedTokens: 1 }, NOW)).reason,
    ).toBe('overage_cap_reached')
    const ownCap = new TenantLimiter(
      'live',
      balance({ ...exhausted, creditsUnits: CREDIT_UNITS_PER_CENT, overageUnits: 0, spendCapCents: 0 }),
      PLAN_CATALOG,
    )
    expect(
      refusal(ownCap.acquire(pro, { reservationId: 'a', model: 'svc-cell', estimatedTokens: 1 }, NOW)).reason,
    ).toBe('overage_cap_reached')
  })

  it('charges the part beyond the allowance at list price and deducts it from the credits', () => {
    const limiter = new TenantLimiter(
      'live',
      balance({
        tokensUsed: 4_999_000,
        usageCreditsEnabled: true,
        creditsUnits: 100 * CREDIT_UNITS_PER_CENT,
      }),
      PLAN_CATALOG,
    )
    expect(
      limiter.acquire(pro, { reservationId: 'a', model: 'svc-cell', estimatedTokens: 3_000 }, NOW).kind,
    ).toBe('granted')
    const used = usage(1_000, 1_000, { cachedTokens: 400, reasoningTokens: 300 })
    const entry = limiter.settle(pro, settleRequest('a', used), NOW + 1)!
    // 2,000 tokens, 1,000 of them beyond the 5M allowance: half the list price.
    const listPrice = usageCostUnits('svc-cell', used)
    expect(entry.creditsUnits).toBe(Math.round(listPrice / 2))
    expect(entry).toMatchObject({ cachedTokens: 400, reasoningTokens: 300, promptTokens: 1_000 })
    expect(limiter.balance).toMatchObject({
      tokensUsed: 5_001_000,
      overageUnits: entry.creditsUnits,
      creditsUnits: 100 * CREDIT_UNITS_PER_CENT - entry.creditsUnits,
    })
  })

  it('within the allowance nothing is charged; the month rolls over to a fresh allowance', () => {
    const limiter = new TenantLimiter('live', balance({ tokensUsed: 200_000 }), PLAN_CATALOG)
    expect(
      limiter.acquire(free, { reservationId: 'a', model: 'svc-cell', estimatedTokens: 1 }, NOW).kind,
    ).toBe('refused')
    const nextMonth = Date.UTC(2026, 11, 1, 0, 0, 1)
    expect(
      limiter.acquire(free, { reservationId: 'b', model: 'svc-cell', estimatedTokens: 1 }, nextMonth).kind,
    ).toBe('granted')
    expect(limiter.balance).toMatchObject({ tokensUsed: 0, periodStart: Date.UTC(2026, 11, 1) })
    expect(limiter.settle(free, settleRequest('b', usage(5, 5)), nextMonth)?.creditsUnits).toBe(0)
  })

  it('test mode applies rate limits but never the allowance or credits', () => {
    const limiter = new TenantLimiter('test', null, PLAN_CATALOG)
    for (let i = 0; i < 20; i++)
      expect(
        limiter.acquire(free, { reservationId: `r${i}`, model: 'svc-cell', estimatedTokens: 1 }, NOW).kind,
      ).toBe('granted')
    expect(
      refusal(limiter.acquire(free, { reservationId: 'x', model: 'svc-cell', estimatedTokens: 1 }, NOW))
        .reason,
    ).toBe('rate_limited')
    const entry = limiter.settle(free, settleRequest('r0', usage(10, 10)), NOW)!
    expect(entry).toMatchObject({ mode: 'test', creditsUnits: 0 })
  })

  it('picks the required plan from the catalog it was given', () => {
    const catalog = parsePlanCatalog({
      ...PLAN_CATALOG_CONFIG,
      plans: PLAN_CATALOG_CONFIG.plans.map((p) => (p.id === 'pro' ? { ...p, requestsPerMinute: 10 } : p)),
    })
    const limiter = new TenantLimiter('test', null, catalog)
    for (let i = 0; i < 20; i++)
      limiter.acquire(free, { reservationId: `r${i}`, model: 'svc-cell', estimatedTokens: 1 }, NOW)
    const decision = refusal(
      limiter.acquire(free, { reservationId: 'x', model: 'svc-cell', estimatedTokens: 1 }, NOW),
    )
    // Pro allows only 10/min in this catalog, so the cheapest plan that allows 21 is Team.
    expect(decision.required_plan).toBe('team')
  })
})

describe('TenantLimiter: admission leases', () => {
  const lease = (id: string, requests = 1024, tokensPerRequest = 100) => ({
    leaseId: id,
    model: 'svc-cell' as const,
    requests,
    tokensPerRequest,
  })

  it('grants a slice of 1/16 of the headroom and counts all of it at once', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    expect(
      limiter.acquire(team, { reservationId: 'r0', model: 'svc-cell', estimatedTokens: 100 }, NOW).kind,
    ).toBe('granted')
    const grant = limiter.grantLease(team, lease('L1'), NOW)
    // 600 requests/min, 1 used: floor(599 / 16) = 37.
    expect(grant).toEqual({ leaseId: 'L1', requests: 37, tokens: 3_700, ttlMs: 1_000 })
    expect(limiter.snapshot(team, NOW)).toMatchObject({
      remainingRequests: 600 - 1 - 37,
      remainingTokens: team.tokensPerMinute - 100 - 3_700,
    })
    expect(limiter.grantLease(team, lease('L1'), NOW)).toBeNull()
    expect(limiter.grantLease(team, lease('L2', 8), NOW)?.requests).toBe(8)
  })

  it('grants nothing near a limit: small plans and the last of the allowance stay per request', () => {
    expect(new TenantLimiter('live', balance(), PLAN_CATALOG).grantLease(free, lease('a'), NOW)).toBeNull()
    const nearAllowance = new TenantLimiter(
      'live',
      balance({ tokensUsed: team.monthlyTokenAllowance! - 5_000 }),
      PLAN_CATALOG,
    )
    // 5,000 tokens left: at most 312 in a lease, fewer than 4 requests of 100.
    expect(nearAllowance.grantLease(team, lease('b'), NOW)).toBeNull()
    const nearModel = new TenantLimiter('live', balance(), PLAN_CATALOG)
    const modelLimit = Object.entries(team.modelAllowances)[0]
    if (modelLimit) {
      const [model, limit] = modelLimit as ['svc-cell', number]
      const state = new TenantLimiter(
        'live',
        balance({ resourceUse: new Map([[model, limit - 1_000]]) }),
        PLAN_CATALOG,
      )
      expect(state.grantLease(team, { ...lease('c'), model }, NOW)).toBeNull()
    }
    expect(nearModel.grantLease(team, lease('d', 4, 1_000_000), NOW)).toBeNull()
  })

  it('settling under a lease replaces the estimate; returning it frees what was not used', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    const grant = limiter.grantLease(team, lease('L', 20, 100), NOW)!
    expect(grant.requests).toBe(20)
    for (let i = 0; i < 5; i++) {
      const entry = limiter.settle(
        team,
        { ...settleRequest(`r${i}`, usage(30, 20)), leaseId: 'L', estimatedTokens: 100 },
        NOW + 10,
      )
      expect(entry).toMatchObject({ reservationId: `r${i}`, promptTokens: 30, createdAt: NOW })
    }
    // 20 requests / 2,000 tokens counted; 5 settled at 50 tokens instead of 100.
    expect(limiter.snapshot(team, NOW + 20)).toMatchObject({
      remainingRequests: 600 - 20,
      remainingTokens: team.tokensPerMinute - 2_000 + 5 * 50,
    })
    limiter.returnLease({ leaseId: 'L', unusedRequests: 15, unusedTokens: 1_500 })
    limiter.returnLease({ leaseId: 'L', unusedRequests: 15, unusedTokens: 1_500 })
    expect(limiter.snapshot(team, NOW + 30)).toMatchObject({
      remainingRequests: 600 - 5,
      remainingTokens: team.tokensPerMinute - 5 * 50,
    })
    expect(limiter.balance?.tokensUsed).toBe(250)
    expect(limiter.leasesOut).toBe(0)
  })

  it('never overshoots: an isolate admitting from leases gets exactly the limit in a burst', () => {
    const limiter = new TenantLimiter('test', null, PLAN_CATALOG)
    let admitted = 0
    let local = 0
    let leaseNo = 0
    for (let i = 0; i < 700; i++) {
      if (local > 0) {
        local -= 1
        admitted += 1
        continue
      }
      const result = limiter.acquire(
        team,
        { reservationId: `r${i}`, model: 'svc-cell', estimatedTokens: 10 },
        NOW,
      )
      if (result.kind !== 'granted') continue
      admitted += 1
      local = limiter.grantLease(team, lease(`L${leaseNo++}`, 64, 10), NOW)?.requests ?? 0
    }
    expect(admitted).toBe(team.requestsPerMinute)
    expect(leaseNo).toBeGreaterThan(1)
  })
})

describe('paid tools (web search, transcription)', () => {
  const tool = (quantity: number) => usage(0, 0, { quantity })
  const search = (id: string) => ({
    reservationId: id,
    model: 'web_search' as const,
    estimatedTokens: 0,
    estimatedQuantity: 1,
  })

  it('admits a search as one request of the window, records it in requests, not in tokens', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    const granted = limiter.acquire(pro, search('a'), NOW)
    expect(granted).toMatchObject({
      kind: 'granted',
      snapshot: { remainingRequests: 119, remainingTokens: 400_000 },
    })
    const entry = limiter.settle(
      pro,
      { ...settleRequest('a', tool(1), 'web_search'), endpoint: 'code.search' },
      NOW + 1,
    )
    expect(entry).toMatchObject({
      model: 'web_search',
      endpoint: 'code.search',
      unit: 'requests',
      quantity: 1,
      promptTokens: 0,
      completionTokens: 0,
      creditsUnits: 0,
    })
    expect(limiter.balance?.tokensUsed).toBe(0)
    expect(limiter.balance?.resourceUse.get('web_search')).toBe(1)
  })

  it("refuses once the plan's monthly searches are used: tier_allowance_exhausted in requests", () => {
    const limiter = new TenantLimiter(
      'live',
      balance({ resourceUse: new Map([['web_search', 999]]) }),
      PLAN_CATALOG,
    )
    expect(limiter.acquire(pro, search('a'), NOW).kind).toBe('granted')
    // The admitted search is reserved: a second one in flight already finds the allowance used.
    const decision = refusal(limiter.acquire(pro, search('b'), NOW))
    expect(decision).toMatchObject({
      reason: 'tier_allowance_exhausted',
      requested_feature: 'web_search',
      required_plan: 'team',
      binding_limit: { kind: 'requests', unit: 'requests', used: 1_000, limit: 1_000, remaining: 0 },
    })
    expect(actionRequiredError(decision, { catalog: PLAN_CATALOG }).message).toContain(
      "The Pro plan's allowance for web_search is used up (1000 of 1000 requests)",
    )
  })

  it('bills seconds of audio beyond the allowance at the catalog price when usage credits are on', () => {
    const limiter = new TenantLimiter(
      'live',
      balance({
        resourceUse: new Map([['transcription', 3_590]]),
        usageCreditsEnabled: true,
        creditsUnits: 100 * CREDIT_UNITS_PER_CENT,
      }),
      PLAN_CATALOG,
    )
    const admit = {
      reservationId: 'a',
      model: 'transcription' as const,
      estimatedTokens: 0,
      estimatedQuantity: 30,
    }
    expect(limiter.acquire(pro, admit, NOW).kind).toBe('granted')
    const entry = limiter.settle(pro, settleRequest('a', tool(30), 'transcription'), NOW + 1)
    // 20 of the 30 seconds are beyond the 3,600 included: 20 × $0.0001 = $0.002 = 0.2 cents.
    expect(entry).toMatchObject({ unit: 'seconds', quantity: 30, creditsUnits: 0.2 * CREDIT_UNITS_PER_CENT })
    expect(limiter.balance?.resourceUse.get('transcription')).toBe(3_620)
    expect(limiter.balance?.overageUnits).toBe(0.2 * CREDIT_UNITS_PER_CENT)
    expect(limiter.balance?.tokensUsed).toBe(0)
  })

  it('test mode: tools are rate limited with everything else, never held to allowances or billed', () => {
    const limiter = new TenantLimiter('test', null, PLAN_CATALOG)
    for (let i = 0; i < 19; i++)
      limiter.acquire(free, { reservationId: `c${i}`, model: 'svc-cell', estimatedTokens: 1 }, NOW)
    expect(limiter.acquire(free, search('s1'), NOW).kind).toBe('granted')
    expect(refusal(limiter.acquire(free, search('s2'), NOW)).reason).toBe('rate_limited')
    expect(limiter.settle(free, settleRequest('s1', tool(1), 'web_search'), NOW)).toMatchObject({
      mode: 'test',
      creditsUnits: 0,
      quantity: 1,
    })
  })

  it('grants no admission lease for a tool: each call is decided at the object', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    expect(
      limiter.grantLease(team, { leaseId: 'l', model: 'web_search', requests: 64, tokensPerRequest: 0 }, NOW),
    ).toBeNull()
  })
})

describe('OTLP ingestion (telemetry_ingest): its own per-minute windows and a monthly byte allowance', () => {
  const MiB = 1024 * 1024
  const bytes = (quantity: number) => usage(0, 0, { quantity })
  const ingest = (id: string, size: number) => ({
    reservationId: id,
    model: 'telemetry_ingest' as const,
    estimatedTokens: 0,
    estimatedQuantity: size,
  })

  it("exports are limited by ingestRequestsPerMinute, apart from the model requests' window", () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    // The model requests' window full (20 a minute on Free) does not stop telemetry...
    for (let i = 0; i < free.requestsPerMinute; i++)
      expect(
        limiter.acquire(free, { reservationId: `c${i}`, model: 'svc-cell', estimatedTokens: 1 }, NOW).kind,
      ).toBe('granted')
    for (let i = 0; i < free.ingestRequestsPerMinute; i++)
      expect(limiter.acquire(free, ingest(`t${i}`, 100), NOW + 10).kind, `export ${i}`).toBe('granted')
    // ...and telemetry does not use up the model requests: the next completion is still refused
    // by its own window only, the next export by the ingestion one.
    const decision = refusal(limiter.acquire(free, ingest('over', 100), NOW + 20))
    expect(decision).toMatchObject({
      reason: 'rate_limited',
      binding_limit: {
        kind: 'rate',
        unit: 'requests',
        limit: free.ingestRequestsPerMinute,
        used: free.ingestRequestsPerMinute + 1,
      },
    })
    expect(decision.binding_limit?.retry_after_seconds).toBeGreaterThan(59)
    // The window slides: a minute after the first exports, one more fits.
    expect(limiter.acquire(free, ingest('later', 100), NOW + 10 + 60_000).kind).toBe('granted')
  })

  it('bytes per minute: an export that would pass ingestBytesPerMinute waits for the window', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    expect(limiter.acquire(free, ingest('a', 8 * MiB), NOW).kind).toBe('granted')
    expect(limiter.acquire(free, ingest('b', 8 * MiB), NOW + 1_000).kind).toBe('granted')
    const decision = refusal(limiter.acquire(free, ingest('c', 1), NOW + 2_000))
    expect(decision).toMatchObject({
      reason: 'rate_limited',
      binding_limit: { unit: 'bytes', limit: 16 * MiB, used: 16 * MiB + 1 },
    })
    // The first 8 MiB leave the window 60 s after they came: 58 s from now.
    expect(decision.binding_limit?.retry_after_seconds).toBe(58)
    expect(decision.required_plan).toBe('pro')
  })

  it('an export that was not forwarded (settled with no usage) gives its bytes back to the minute', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    expect(limiter.acquire(free, ingest('a', 16 * MiB), NOW).kind).toBe('granted')
    expect(limiter.settle(free, settleRequest('a', null, 'telemetry_ingest'), NOW + 1)).toBeNull()
    expect(limiter.acquire(free, ingest('b', 16 * MiB), NOW + 2).kind).toBe('granted')
  })

  it('records the bytes in the ledger and the monthly use; refuses once the byte allowance is used', () => {
    const allowance = free.toolAllowances.telemetry_ingest!
    const limiter = new TenantLimiter(
      'live',
      balance({ resourceUse: new Map([['telemetry_ingest', allowance - 1_000]]) }),
      PLAN_CATALOG,
    )
    expect(limiter.acquire(free, ingest('a', 1_000), NOW).kind).toBe('granted')
    const entry = limiter.settle(
      free,
      { ...settleRequest('a', bytes(1_000), 'telemetry_ingest'), endpoint: 'telemetry.otlp' },
      NOW + 1,
    )
    expect(entry).toMatchObject({
      model: 'telemetry_ingest',
      unit: 'bytes',
      quantity: 1_000,
      creditsUnits: 0,
    })
    expect(limiter.balance?.resourceUse.get('telemetry_ingest')).toBe(allowance)
    expect(limiter.balance?.tokensUsed).toBe(0)
    const decision = refusal(limiter.acquire(free, ingest('b', 10), NOW + 2))
    expect(decision).toMatchObject({
      reason: 'tier_allowance_exhausted',
      requested_feature: 'telemetry_ingest',
      required_plan: 'pro',
      binding_limit: { kind: 'storage', unit: 'bytes', used: allowance, limit: allowance, remaining: 0 },
    })
  })

  it('after a restart the ingestion windows are rebuilt from the ledger, not the model windows', () => {
    const limiter = new TenantLimiter('live', balance(), PLAN_CATALOG)
    limiter.restore({
      createdAt: NOW - 1_000,
      promptTokens: 0,
      completionTokens: 0,
      model: 'telemetry_ingest',
      quantity: 16 * MiB,
      principal: 'sub:observability-token:1',
    })
    expect(limiter.requests.total(NOW)).toBe(0)
    expect(refusal(limiter.acquire(free, ingest('a', 1), NOW)).binding_limit).toMatchObject({ unit: 'bytes' })
    expect(
      limiter.acquire(free, { reservationId: 'c', model: 'svc-cell', estimatedTokens: 1 }, NOW).kind,
    ).toBe('granted')
  })
})
