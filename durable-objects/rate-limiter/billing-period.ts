/**
 * Allowance periods are calendar months in UTC: the monthly token allowance, per-model
 * allowances and overage spend reset at 00:00 UTC on the 1st. Included credits top the credit
 * balance up to the plan's included amount at each new period (unused purchased credits stay).
 */

export interface BillingPeriod {
  /** Epoch milliseconds of the period's first instant. */
  readonly start: number
  /** Epoch milliseconds of the next period's first instant. */
  readonly end: number
}

export function billingPeriodAt(now: number): BillingPeriod {
  const date = new Date(now)
  const year = date.getUTCFullYear()
  const month = date.getUTCMonth()
  return { start: Date.UTC(year, month, 1), end: Date.UTC(year, month + 1, 1) }
}
