import { describe, expect, it } from 'vitest'
import { spendPeriodAt } from './spend-period'

const at = (iso: string) => Date.parse(iso)
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

describe('spend periods', () => {
  it('days run from 00:00 UTC to the next 00:00 UTC', () => {
    const p = spendPeriodAt('day', at('2026-12-07T23:59:59.999Z'))
    expect([iso(p.start), iso(p.end)]).toEqual(['2026-12-07T00:00:00.000Z', '2026-12-08T00:00:00.000Z'])
    expect(iso(spendPeriodAt('day', at('2026-12-08T00:00:00.000Z')).start)).toBe('2026-12-08T00:00:00.000Z')
  })

  it('weeks start on Monday, also from a Sunday and across a year boundary', () => {
    // 2026-12-07 is a Monday, 2026-12-13 a Sunday; 2027-01-03 a Sunday.
    expect(iso(spendPeriodAt('week', at('2026-12-07T00:00:00Z')).start)).toBe('2026-12-07T00:00:00.000Z')
    const sunday = spendPeriodAt('week', at('2026-12-13T23:00:00Z'))
    expect([iso(sunday.start), iso(sunday.end)]).toEqual([
      '2026-12-07T00:00:00.000Z',
      '2026-12-14T00:00:00.000Z',
    ])
    expect(iso(spendPeriodAt('week', at('2027-01-03T12:00:00Z')).start)).toBe('2026-12-28T00:00:00.000Z')
  })

  it('months start on the 1st; total never resets', () => {
    const dec = spendPeriodAt('month', at('2026-12-31T23:59:59Z'))
    expect([iso(dec.start), iso(dec.end)]).toEqual(['2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'])
    expect(spendPeriodAt('total', at('2026-12-07T10:00:00Z'))).toEqual({ kind: 'total', start: 0, end: null })
  })
})
