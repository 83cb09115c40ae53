/**
 * Charts drawn on the server as inline SVG (no script, nothing for the CSP to allow): a stacked bar
 * chart of a quantity per day and series (e.g. tokens per day and model), and a horizontal bar
 * chart of each series' total over the period (e.g. tokens per model). Each chart has a text
 * alternative (role="img" with a summary) and its numbers in text (the legend, or the bar labels).
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
  /** Counted things (tokens, requests): axis ticks on whole numbers. */
  whole?: boolean
}

const WIDTH = 720
const HEIGHT = 240
// The value axis is on the right, next to the newest days (what a narrow screen shows first).
const PAD = { top: 12, right: 64, bottom: 34, left: 12 }

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

export const BarChart: FC<BarChartProps> = ({
  id,
  title,
  days,
  series,
  unit,
  format = compact,
  whole = true,
}) => {
  const totals = days.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0))
  const total = totals.reduce((a, b) => a + b, 0)
  const top = niceMax(Math.max(0, ...totals))
  // Four steps up the axis, or another number when counts would fall between whole numbers (1.25 requests).
  const steps = whole ? ([4, 5, 2, 1].find((n) => Number.isInteger(top / n)) ?? 1) : 4
  const plotW = WIDTH - PAD.left - PAD.right
  const plotH = HEIGHT - PAD.top - PAD.bottom
  const slot = plotW / Math.max(1, days.length)
  const barW = Math.max(2, slot * 0.7)
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH
  const ticks = Array.from({ length: steps + 1 }, (_, i) => (top * i) / steps)
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
      {/* On a narrow screen it scrolls sideways (starting at the newest day) rather than shrinking its labels. */}
      <section class="chart-scroll" aria-label={`${title} per day, scrollable`} tabindex={0}>
        <svg class="chart" viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={summary} data-chart={id}>
          <title>{summary}</title>
          {ticks.map((t) => (
            <g>
              <line class="grid" x1={PAD.left} x2={WIDTH - PAD.right} y1={y(t)} y2={y(t)} />
              <text x={WIDTH - PAD.right + 6} y={y(t) + 4} text-anchor="start">
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
      </section>
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

export interface TotalsChartProps {
  id: string
  title: string
  /** Each series' total is one bar; the series' colour is the one it has in the day charts. */
  series: Series[]
  unit: string
  format?: (n: number) => string
}

/**
 * One horizontal bar per series with its total over the period, largest first. The names and
 * numbers are HTML text beside each bar (legible at any width); only the bars are SVG.
 */
export const TotalsChart: FC<TotalsChartProps> = ({ id, title, series, unit, format = compact }) => {
  const rows = series
    .map((s, si) => ({
      name: s.name,
      colour: SERIES_COLOURS[si % SERIES_COLOURS.length],
      total: s.values.reduce((a, b) => a + b, 0),
    }))
    .sort((a, b) => b.total - a.total)
  const top = Math.max(0, ...rows.map((r) => r.total))
  const summary =
    top === 0
      ? `${title}: nothing in this period.`
      : `${title}: ${rows.map((r) => `${r.name} ${format(r.total)}`).join(', ')} ${unit}.`
  return (
    <figure class="panel" aria-labelledby={`${id}-title`}>
      <figcaption id={`${id}-title`}>
        <strong>{title}</strong> <span class="muted">({unit} in the period)</span>
      </figcaption>
      {/* An image as a whole: its parts are presentational, the summary is its text. */}
      <div class="totals" role="img" aria-label={summary} data-chart={id}>
        {top === 0 ? <p class="muted">nothing in this period</p> : null}
        {top === 0
          ? null
          : rows.map((r) => (
              <div class="totals-row">
                <span class="totals-name">{r.name}</span>
                <svg viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true">
                  <rect
                    width={Math.max(0.5, (r.total / top) * 100).toFixed(2)}
                    height="10"
                    fill={r.colour}
                    data-series={r.name}
                  />
                </svg>
                <span class="num">{format(r.total)}</span>
              </div>
            ))}
      </div>
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
