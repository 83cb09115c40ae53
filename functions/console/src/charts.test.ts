import { describe, expect, it } from 'vitest'
import { BarChart, lastDays, niceMax, TotalsChart, toSeries } from './charts'

const days = lastDays(3, new Date('2026-11-24T12:00:00Z'))
const rows = [
  { day: '2026-11-22', model: 'svc-cell', tokens: 40 },
  { day: '2026-11-24', model: 'svc-cell', tokens: 10 },
  { day: '2026-11-24', model: 'svc-hive', tokens: 200 },
  { day: '2026-10-01', model: 'svc-hive', tokens: 999 },
]
const series = toSeries(
  days,
  rows,
  (r) => r.model,
  (r) => r.day,
  (r) => r.tokens,
)

const tickLabels = (svg: string) => [...svg.matchAll(/<text x="662" [^>]*>([^<]*)<\/text>/g)].map((m) => m[1])

describe('console charts', () => {
  it('aligns rows with the days of the period and drops rows outside it', () => {
    expect(days).toEqual(['2026-11-22', '2026-11-23', '2026-11-24'])
    expect(series).toEqual([
      { name: 'svc-cell', values: [40, 0, 10] },
      { name: 'svc-hive', values: [0, 0, 200] },
    ])
  })

  it('puts axis ticks on whole numbers for counts, at 1, 2 or 5 times a power of ten', () => {
    expect([niceMax(3), niceMax(210), niceMax(0)]).toEqual([5, 500, 1])
    const requests = String(
      BarChart({
        id: 'r',
        title: 'Requests',
        days,
        unit: 'requests',
        series: [{ name: 'm', values: [3, 0, 1] }],
      }),
    )
    expect(tickLabels(requests)).toEqual(['0', '1', '2', '3', '4', '5'])
    const tokens = String(BarChart({ id: 't', title: 'Tokens', days, unit: 'tokens', series }))
    expect(tickLabels(tokens)).toEqual(['0', '125', '250', '375', '500'])
    expect(tokens).toContain('Tokens: 250 tokens in 3 days; busiest day 2026-11-24 with 210.')
  })

  it('draws one bar per model with its total, largest first, in the colour the day chart gives it', () => {
    const svg = String(TotalsChart({ id: 'm', title: 'Tokens', unit: 'tokens', series }))
    const bars = [
      ...svg.matchAll(/width="([\d.]+)" height="10" fill="(#[0-9a-f]{6})" data-series="([^"]+)"/g),
    ].map((m) => [m[3], m[2], m[1]])
    expect(bars).toEqual([
      ['svc-hive', '#d55e00', '100.00'],
      ['svc-cell', '#0072b2', '25.00'],
    ])
    expect(svg).toContain('aria-label="Tokens: svc-hive 200, svc-cell 50 tokens."')
    expect(String(TotalsChart({ id: 'e', title: 'Tokens', unit: 'tokens', series: [] }))).toContain(
      'nothing in this period',
    )
  })
})
