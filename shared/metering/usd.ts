/**
 * US dollars ↔ credit units (1 unit = 1e-6 USD = 1/10,000 cent, pricing.ts), for amounts the API
 * takes and shows in USD (a key's spend limit). Its own module so the gateway, which reads a key's
 * limit, does not bundle the price tables.
 */

/** Credit units per US dollar. */
export const CREDIT_UNITS_PER_USD = 1_000_000

/** USD (a number or decimal text with at most six decimals) → credit units. */
export function usdToUnits(usd: number | string): number {
  return Math.round(Number(usd) * CREDIT_UNITS_PER_USD)
}

/** Credit units → USD, for the API (six decimals at most). */
export function unitsToUsd(units: number): number {
  return Math.round(units) / CREDIT_UNITS_PER_USD
}
