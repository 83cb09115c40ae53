import { describe, expect, it } from 'vitest'
import { billingPeriodAt } from './billing-period'
import { centsToUnits, picoUsd, unitsToCents, usageCostUnits } from './pricing'
import { formatResetDuration, rateLimitHeaders } from './rate-limit-headers'
import { SlidingWindow } from './sliding-window'

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

describe('billing period', () => {
  it('is the calendar month in UTC', () => {
    expect(billingPeriodAt(Date.UTC(2026, 11, 31, 23, 59, 59))).toEqual({
      start: Date.UTC(2026, 11, 1),
      end: Date.UTC(2027, 0, 1),
    })
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

describe('SlidingWindow', () => {
  it('keeps events for exactly the window and tells when an amount fits', () => {
    const window = new SlidingWindow(1_000)
    window.add(0, 5)
    window.add(400, 3)
    expect(window.total(999)).toBe(8)
    expect(window.msUntilFits(500, 4, 10)).toBe(500) // the first event (5) leaves at 1000
    expect(window.msUntilFits(500, 2, 10)).toBe(0)
    expect(window.total(1_000)).toBe(3)
    expect(window.count(1_400)).toBe(0)
  })

  it('adjusts an event in the window and ignores adjustments after it left', () => {
    const window = new SlidingWindow(1_000)
    const event = window.add(0, 100)
    window.adjust(event, 10)
    expect(window.total(10)).toBe(10)
    expect(window.total(1_000)).toBe(0)
    window.adjust(event, 50)
    expect(window.total(1_001)).toBe(0)
  })

  it('stays correct across compaction of many events', () => {
    const window = new SlidingWindow(100)
    for (let t = 0; t < 5_000; t++) window.add(t, 1)
    expect(window.count(4_999)).toBe(100)
    expect(window.msUntilNextExpiry(4_999)).toBe(1)
  })
})
