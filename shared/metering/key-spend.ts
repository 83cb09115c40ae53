/**
 * What an API key has spent, at list price (issue 29; docs/plans.md, "Per-key limits"). A key's
 * spend is the list price of every request it made (tokens at the model catalog's prices, paid
 * tools at the plan catalog's `toolPrices`), whatever the workspace was charged: within the plan's
 * allowance and in test mode the charge is 0, the key's spend is not. Read by the RateLimiter (it
 * rebuilds a key's spend after a restart) and by the platform worker (a key's `spend`), so both
 * compute it the same way: per ledger row, rounded once per row exactly as pricing.ts does.
 */
import { sql } from 'drizzle-orm'
import { MODEL_ALIASES } from '../catalog/model-aliases'
import type { Drizzle } from '../db/client'
import { METERED_TOOLS, type PlanCatalog } from '../plans/plan-catalog'
import type { LedgerEntry, MeteredResource } from './metering.schemas'
import { isMeteredTool } from './metering.schemas'
import { estimateCostUnits, modelPrices, picoUsd, toolCostUnits, usageCostUnits } from './pricing'

/** The list price of one ledger row, in credit units (0 for a failed request's zero row). */
export function listCostUnits(
  catalog: PlanCatalog,
  entry: Pick<LedgerEntry, 'model' | 'promptTokens' | 'completionTokens' | 'cachedTokens' | 'quantity'>,
): number {
  if (isMeteredTool(entry.model)) return toolCostUnits(catalog, entry.model, entry.quantity)
  return usageCostUnits(entry.model, entry)
}

/**
 * The most a request admitted with `estimatedTokens` (prompt + output budget) or a tool's
 * `estimatedQuantity` can cost at list price: every token at the dearer of the prompt and
 * completion prices, so the real cost never exceeds it.
 */
export function worstCaseCostUnits(
  catalog: PlanCatalog,
  resource: MeteredResource,
  estimatedTokens: number,
  estimatedQuantity: number | undefined,
): number {
  if (isMeteredTool(resource)) return toolCostUnits(catalog, resource, estimatedQuantity ?? 0)
  const prices = modelPrices(resource)
  return prices.promptPico > prices.completionPico
    ? Math.ceil((estimatedTokens * prices.promptPico) / 1_000_000)
    : estimateCostUnits(resource, estimatedTokens)
}

/** Prices per resource as one JSON parameter: [resource, prompt, completion, cache read, per unit] in pico-USD. */
function priceTable(catalog: PlanCatalog): string {
  const rows: [string, number, number, number, number][] = []
  for (const alias of MODEL_ALIASES) {
    const p = modelPrices(alias)
    rows.push([alias, p.promptPico, p.completionPico, p.cacheReadPico, 0])
  }
  for (const tool of METERED_TOOLS) rows.push([tool, 0, 0, 0, picoUsd(catalog.toolPrices[tool])])
  return JSON.stringify(rows)
}

/**
 * The key's spend in Postgres since `since` (epoch ms), in credit units: each row priced and
 * rounded half up like listCostUnits, in SQL (numeric arithmetic is exact), so a period of any
 * length is one aggregate. `excludeRequestIds`: rows the caller counts itself (the RateLimiter's
 * rows not yet marked flushed, which a flush in progress may already have written here).
 */
export interface KeySpendQuery {
  readonly tenantId: string
  readonly mode: 'live' | 'test'
  readonly keyId: string
  readonly since: number
  readonly excludeRequestIds?: readonly string[]
}

export async function storedKeySpendUnits(
  db: Drizzle,
  query: KeySpendQuery,
  catalog: PlanCatalog,
): Promise<number> {
  const result = await db.execute<{ units: string }>(sql`
    with prices as (
      select p ->> 0 as model, (p ->> 1)::numeric as prompt, (p ->> 2)::numeric as completion,
        (p ->> 3)::numeric as cache_read, (p ->> 4)::numeric as per_unit
      from jsonb_array_elements(${priceTable(catalog)}::jsonb) as p
    )
    select coalesce(sum(case when l.unit = 'tokens' then floor((
        (l.prompt_tokens - least(l.cached_tokens, l.prompt_tokens)) * pr.prompt
        + least(l.cached_tokens, l.prompt_tokens) * pr.cache_read
        + l.completion_tokens * pr.completion + 500000) / 1000000)
      else floor((l.quantity * pr.per_unit + 500000) / 1000000) end), 0)::text as units
    from usage_ledger l join prices pr on pr.model = l.model
    where l.tenant_id = ${query.tenantId}::uuid and l.mode = ${query.mode}
      and l.principal = ${`key:${query.keyId}`}
      and l.created_at >= ${new Date(query.since).toISOString()}::timestamptz
      and l.request_id not in (select jsonb_array_elements_text(${JSON.stringify(query.excludeRequestIds ?? [])}::jsonb))`)
  return Number(result.rows[0]?.units ?? 0)
}
