import { describe, expect, it } from 'vitest'
import { billingPeriodAt } from './billing-period'
import { SlidingWindow } from './sliding-window'

describe('billing period', () => {
  it('is the calendar month in UTC', () => {
    expect(billingPeriodAt(Date.UTC(2026, 11, 31, 23, 59, 59))).toEqual({
      start: Date.UTC(2026, 11, 1),
      end: Date.UTC(2027, 0, 1),
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
