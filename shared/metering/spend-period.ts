/**
 * The reset periods of a key's spend limit (issue 29; docs/plans.md): UTC calendar days, weeks
 * starting on Monday, months starting on the 1st, or `total` (never resets). Read by the platform
 * worker (a key's spend, its usage statement) and by the RateLimiter that enforces the limit.
 */

export const SPEND_PERIODS = ['day', 'week', 'month', 'total'] as const
export type SpendPeriodKind = (typeof SPEND_PERIODS)[number]

export interface SpendPeriod {
  readonly kind: SpendPeriodKind
  /** Epoch milliseconds of the period's first instant (0 for `total`). */
  readonly start: number
  /** Epoch milliseconds of the next period's first instant; null for `total` (it never resets). */
  readonly end: number | null
}

const DAY_MS = 86_400_000

/** The period of `kind` that holds the instant `at` (epoch milliseconds). */
export function spendPeriodAt(kind: SpendPeriodKind, at: number): SpendPeriod {
  const date = new Date(at)
  const year = date.getUTCFullYear()
  const month = date.getUTCMonth()
  const day = Date.UTC(year, month, date.getUTCDate())
  switch (kind) {
    case 'day':
      return { kind, start: day, end: day + DAY_MS }
    case 'week': {
      // getUTCDay: Sunday 0 … Saturday 6; weeks start on Monday.
      const start = day - ((date.getUTCDay() + 6) % 7) * DAY_MS
      return { kind, start, end: start + 7 * DAY_MS }
    }
    case 'month':
      return { kind, start: Date.UTC(year, month, 1), end: Date.UTC(year, month + 1, 1) }
    case 'total':
      return { kind, start: 0, end: null }
  }
}
