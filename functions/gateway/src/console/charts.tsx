/**
 * Charts drawn on the server as inline SVG (no script, nothing for the CSP to allow): a stacked bar
 * chart of a quantity per day and series (e.g. tokens per day and model). Each chart has a text
 * alternative (role="img" with a summary) and a legend; the numbers are in a table beside it.
 * Series colours are distinguishable for the common colour-vision deficiencies (Okabe-Ito) and
 * each has a contrast of at least 3:1 against white.
 */
import type { FC } from 'hono/jsx'

export const SERIES_COLOURS = [
  '#0072b2',
  '#d55e00',
  '#009e73',
  '#cc79a7',
  '#8a6d00',
  '#56489e',
  '#b5003c',
  '#4a5562',
]

export interface Series {
  name: string
  /** One value per day, aligned with `days`. */
  values: number[]
}

export interface BarChartProps {
  id: string
  title: string
  days: string[]
  series: Series[]
  unit: string
  format?: (n: number) => string
}

const WIDTH = 720
const HEIGHT = 240
const PAD = { top: 12, right: 12, bottom: 34, left: 64 }

/** A round upper bound for the axis: 1, 2 or 5 times a power of ten. */
export function niceMax(max: number): number {
  if (max <= 0) return 1
  const power = 10 ** Math.floor(Math.log10(max))
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power
  return 10 * power
}

export function compact(n: number): string {
  if (n >= 1_000_000) return `${Number((n / 1_000_000).toFixed(1))}M`
  if (n >= 1_000) return `${Number((n / 1_000).toFixed(1))}k`
  return String(Number(n.toFixed(2)))
}

export const BarChart: FC<BarChartProps> = ({ id, title, days, series, unit, format = compact }) => {
  const totals = days.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0))
  const total = totals.reduce((a, b) => a + b, 0)
  const top = niceMax(Math.max(0, ...totals))
  const plotW = WIDTH - PAD.left - PAD.right
  const plotH = HEIGHT - PAD.top - PAD.bottom
  const slot = plotW / Math.max(1, days.length)
  const barW = Math.max(2, slot * 0.7)
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * top)
  const labelEvery = Math.max(1, Math.ceil(days.length / 8))
  const peak = totals.indexOf(Math.max(...totals))
  const summary =
    total === 0
      ? `${title}: nothing in this period.`
      : `${title}: ${format(total)} ${unit} in ${days.length} days; busiest day ${days[peak]} with ${format(totals[peak] ?? 0)}.`
  return (
    <figure class="panel" aria-labelledby={`${id}-title`}>
      <figcaption id={`${id}-title`}>
        <strong>{title}</strong> <span class="muted">({unit} per day)</span>
      </figcaption>
      <svg class="chart" viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={summary} data-chart={id}>
        <title>{summary}</title>
        {ticks.map((t) => (
          <g>
            <line class="grid" x1={PAD.left} x2={WIDTH - PAD.right} y1={y(t)} y2={y(t)} />
            <text x={PAD.left - 6} y={y(t) + 4} text-anchor="end">
              {format(t)}
            </text>
          </g>
        ))}
        {days.map((day, i) => {
          let base = 0
          const x = PAD.left + i * slot + (slot - barW) / 2
          return (
            <g>
              {series.map((s, si) => {
                const v = s.values[i] ?? 0
                if (v <= 0) return null
                const rect = (
                  <rect
                    x={x.toFixed(1)}
                    y={y(base + v).toFixed(1)}
                    width={barW.toFixed(1)}
                    height={Math.max(1, y(base) - y(base + v)).toFixed(1)}
                    fill={SERIES_COLOURS[si % SERIES_COLOURS.length]}
                    data-series={s.name}
                  >
                    <title>{`${day} · ${s.name}: ${format(v)} ${unit}`}</title>
                  </rect>
                )
                base += v
                return rect
              })}
              {i % labelEvery === 0 ? (
                <text x={(x + barW / 2).toFixed(1)} y={HEIGHT - PAD.bottom + 16} text-anchor="middle">
                  {day.slice(5)}
                </text>
              ) : null}
            </g>
          )
        })}
        <line class="axis" x1={PAD.left} x2={WIDTH - PAD.right} y1={y(0)} y2={y(0)} />
      </svg>
      {series.length > 0 ? (
        <ul class="legend" aria-label="Legend">
          {series.map((s, si) => (
            <li>
              <svg width="12" height="12" aria-hidden="true">
                <rect width="12" height="12" fill={SERIES_COLOURS[si % SERIES_COLOURS.length]} />
              </svg>
              {s.name}: {format(s.values.reduce((a, b) => a + b, 0))}
            </li>
          ))}
        </ul>
      ) : null}
    </figure>
  )
}

/** The last `n` days (UTC) ending today, as YYYY-MM-DD. */
export function lastDays(n: number, now = new Date()): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
  return Array.from({ length: n }, (_, i) =>
    new Date(today - (n - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  )
}

/** Rows of (day, series name, value) as chart series aligned with `days`. */
export function toSeries<R>(
  days: string[],
  rows: R[],
  name: (r: R) => string,
  day: (r: R) => string,
  value: (r: R) => number,
): Series[] {
  const index = new Map(days.map((d, i) => [d, i]))
  const byName = new Map<string, number[]>()
  for (const row of rows) {
    const i = index.get(day(row))
    if (i === undefined) continue
    const key = name(row)
    const values = byName.get(key) ?? days.map(() => 0)
    values[i] = (values[i] ?? 0) + value(row)
    byName.set(key, values)
  }
  return [...byName.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([n, values]) => ({ name: n, values }))
}
