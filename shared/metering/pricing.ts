/**
 * What usage costs, in exact integer arithmetic.
 *
 * Prices come from the model catalog (`pricing.prompt`, `pricing.completion`,
 * `pricing.input_cache_read`: decimal strings in USD per token) and, for paid tools, from the plan
 * catalog (`toolPrices`: USD per search, per second of audio). Cached prompt tokens are part
 * of `prompt_tokens` and billed at the cache-read price; reasoning tokens are part of
 * `completion_tokens` and billed at the completion price (OpenAI's convention).
 *
 * Money is counted in credit units of 1/10,000 of a cent (1e-6 USD), the precision of the
 * ledger's `numeric(14,4)` cents columns, so amounts in memory, in the Durable Object's ledger
 * and in Postgres are the same integers. A request's cost is computed in pico-USD and rounded
 * half up to a credit unit once.
 */
import type { ModelAlias } from '../catalog/model-aliases'
import { modelEntry } from '../catalog/model-catalog'
import type { MeteredTool, PlanCatalog } from '../plans/plan-catalog'
import type { NormalizedUsage } from '../providers/chat-wire'

/** Credit units per cent: one unit is 1/10,000 of a cent. */
export const CREDIT_UNITS_PER_CENT = 10_000
const PICO_USD_PER_UNIT = 1_000_000

/** "0.000000025" (USD) → 25,000 pico-USD. Exact for up to 12 decimals. */
export function picoUsd(decimal: string): number {
  const match = /^(\d+)(?:\.(\d{1,12}))?$/.exec(decimal)
  if (!match) throw new Error(`not a decimal price: ${decimal}`)
  return Number(match[1]) * 1e12 + Number((match[2] ?? '').padEnd(12, '0'))
}

export interface ModelPrices {
  readonly promptPico: number
  readonly completionPico: number
  readonly cacheReadPico: number
}

const priceCache = new Map<ModelAlias, ModelPrices>()

export function modelPrices(model: ModelAlias): ModelPrices {
  let prices = priceCache.get(model)
  if (!prices) {
    const { pricing } = modelEntry(model)
    prices = {
      promptPico: picoUsd(pricing.prompt),
      completionPico: picoUsd(pricing.completion),
      cacheReadPico: picoUsd(pricing.input_cache_read),
    }
    priceCache.set(model, prices)
  }
  return prices
}

/** The list price of a request's usage, in credit units. */
export function usageCostUnits(
  model: ModelAlias,
  usage: Pick<NormalizedUsage, 'promptTokens' | 'completionTokens' | 'cachedTokens'>,
): number {
  const prices = modelPrices(model)
  const cached = Math.min(usage.cachedTokens, usage.promptTokens)
  const pico =
    (usage.promptTokens - cached) * prices.promptPico +
    cached * prices.cacheReadPico +
    usage.completionTokens * prices.completionPico
  return Math.floor((pico + PICO_USD_PER_UNIT / 2) / PICO_USD_PER_UNIT)
}

/** An upper-bound price for `tokens` not yet produced (billed at the completion price). */
export function estimateCostUnits(model: ModelAlias, tokens: number): number {
  return Math.ceil((tokens * modelPrices(model).completionPico) / PICO_USD_PER_UNIT)
}

/** The list price of `quantity` units of a paid tool (the catalog's `toolPrices`), in credit units. */
export function toolCostUnits(catalog: PlanCatalog, tool: MeteredTool, quantity: number): number {
  const pico = quantity * picoUsd(catalog.toolPrices[tool])
  return Math.floor((pico + PICO_USD_PER_UNIT / 2) / PICO_USD_PER_UNIT)
}

/** Credit units → the ledger's cents text ("12.3456"). */
export function unitsToCents(units: number): string {
  const sign = units < 0 ? '-' : ''
  const abs = Math.abs(Math.round(units))
  const whole = Math.floor(abs / CREDIT_UNITS_PER_CENT)
  const fraction = String(abs % CREDIT_UNITS_PER_CENT).padStart(4, '0')
  return `${sign}${whole}.${fraction}`
}

/** The ledger's cents text (Postgres numeric, e.g. "12.3456", "-3", "0.5") → credit units. */
export function centsToUnits(cents: string | number): number {
  const text = typeof cents === 'number' ? cents.toFixed(4) : cents.trim()
  const match = /^(-)?(\d+)(?:\.(\d+))?$/.exec(text)
  if (!match) throw new Error(`not a cents amount: ${text}`)
  const fraction = (match[3] ?? '').padEnd(5, '0')
  let units = Number(match[2]) * CREDIT_UNITS_PER_CENT + Number(fraction.slice(0, 4))
  if (Number(fraction[4]) >= 5) units += 1
  return match[1] ? -units : units
}
