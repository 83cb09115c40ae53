import { describe, expect, it } from 'vitest'
import { PLAN_CATALOG } from '../plans/plan-catalog'
import { centsToUnits, picoUsd, toolCostUnits, unitsToCents, usageCostUnits } from './pricing'
import { formatResetDuration, rateLimitHeaders } from './rate-limit-headers'

describe('pricing', () => {
  it('reads catalog prices exactly', () => {
    expect(picoUsd('0.0000001')).toBe(100_000)
    expect(picoUsd('0.000000025')).toBe(25_000)
    expect(picoUsd('2')).toBe(2e12)
    expect(() => picoUsd('1e-7')).toThrow()
  })

  it('bills uncached prompt, cached prompt and completion (reasoning included) at their own prices', () => {
    // svc-cell: prompt $0.10/M, completion $0.40/M, cache read $0.025/M.
    const cost = usageCostUnits('svc-cell', {
      promptTokens: 1_000_000,
      completionTokens: 1_000_000,
      cachedTokens: 400_000,
    })
    // 600k × 0.1 + 400k × 0.025 + 1M × 0.4 = $0.06 + $0.01 + $0.40 = $0.47 = 47 cents.
    expect(unitsToCents(cost)).toBe('47.0000')
  })

  it('rounds once, half up, to 1/10,000 cent', () => {
    // 3 svc-cell prompt tokens = $0.0000003 = 0.00003 cents = 0.3 units → 0; 5 tokens → 0.5 → 1.
    expect(usageCostUnits('svc-cell', { promptTokens: 3, completionTokens: 0, cachedTokens: 0 })).toBe(0)
    expect(usageCostUnits('svc-cell', { promptTokens: 5, completionTokens: 0, cachedTokens: 0 })).toBe(1)
  })

  it('converts between credit units and the ledger cents text without drift', () => {
    for (const units of [0, 1, 9_999, 10_000, 123_456_789, -42])
      expect(centsToUnits(unitsToCents(units))).toBe(units)
    expect(centsToUnits('2000')).toBe(20_000_000)
    expect(centsToUnits('0.00005')).toBe(1)
    expect(unitsToCents(-42)).toBe('-0.0042')
  })
})

describe('paid tools', () => {
  it("prices a tool's units at the plan catalog's list price, exactly", () => {
    // A search at $0.005 is half a cent; a minute of audio at $0.0001/s is 0.6 cents.
    expect(toolCostUnits(PLAN_CATALOG, 'web_search', 1)).toBe(5_000)
    expect(toolCostUnits(PLAN_CATALOG, 'transcription', 60)).toBe(6_000)
    expect(unitsToCents(toolCostUnits(PLAN_CATALOG, 'web_search', 3))).toBe('1.5000')
    // OTLP ingestion: USD 0.50 per GB after decompression; a 30 kB export is 0.0015 cents.
    expect(unitsToCents(toolCostUnits(PLAN_CATALOG, 'telemetry_ingest', 1_000_000_000))).toBe('50.0000')
    expect(unitsToCents(toolCostUnits(PLAN_CATALOG, 'telemetry_ingest', 30_000))).toBe('0.0015')
  })
})

describe('rate-limit headers', () => {
  it('formats durations the way OpenAI does', () => {
    expect(formatResetDuration(0)).toBe('0ms')
    expect(formatResetDuration(250)).toBe('250ms')
    expect(formatResetDuration(1_500)).toBe('1.5s')
    expect(formatResetDuration(59_999)).toBe('59.999s')
    expect(formatResetDuration(60_000)).toBe('1m0s')
    expect(formatResetDuration(360_000)).toBe('6m0s')
  })

  it('names all six headers', () => {
    expect(
      rateLimitHeaders({
        limitRequests: 20,
        remainingRequests: 19,
        resetRequestsMs: 59_000,
        limitTokens: 40_000,
        remainingTokens: 39_000,
        resetTokensMs: 120,
      }),
    ).toEqual({
      'x-ratelimit-limit-requests': '20',
      'x-ratelimit-remaining-requests': '19',
      'x-ratelimit-reset-requests': '59s',
      'x-ratelimit-limit-tokens': '40000',
      'x-ratelimit-remaining-tokens': '39000',
      'x-ratelimit-reset-tokens': '120ms',
    })
  })
})
