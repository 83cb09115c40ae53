/**
 * One web search for a caller, metered: the one path of both POST /svc/code/v1/search and the
 * model's `web_search` calls inside an agent turn. Test keys always get the built-in index.
 *
 * Order: the deployment must have a provider (503 `search_unavailable`, nothing metered), then
 * the tenant's RateLimiter admits the search (one request against requests per minute and the
 * plan's monthly web search allowance; 402/429 action-required, or 503 `metering_unavailable`),
 * then the providers are tried in order (502 when every one failed: nothing used or charged, the
 * request log shows the 502), and the search is recorded as one request of `web_search` before
 * the caller gets its results.
 */
import { meterToolCall, openMeter } from '../../../shared/metering'
import { resolvePlan } from '../../../shared/plans'
import { type Identity, isTestMode } from '../../../shared/worker/request-context'
import type { AgentRunEnv } from '../agent-run.context'
import type { WebSearchRequest, WebSearchResponse } from './search.schemas'
import { requireSearchProviders, runWebSearch, searchChainFromEnv } from './search-chain'

export interface MeteredSearch {
  /** The request id recorded in the ledger. */
  readonly requestId: string
  /** The API endpoint the search serves (`code.search`, `code.turns`). */
  readonly endpoint: string
  readonly signal?: AbortSignal
}

export async function meteredWebSearch(
  env: AgentRunEnv,
  identity: Identity,
  request: WebSearchRequest,
  call: MeteredSearch,
): Promise<{ result: WebSearchResponse; headers: Record<string, string> }> {
  const chain = searchChainFromEnv(env, { testMode: isTestMode(identity) })
  requireSearchProviders(chain)
  const { catalog } = resolvePlan(env, identity.planId)
  const meter = openMeter(env.RATE_LIMITER, identity, call.endpoint)
  return meterToolCall(
    meter,
    catalog,
    { requestId: call.requestId, tool: 'web_search', estimatedQuantity: 1 },
    async () => {
      const result = await runWebSearch(request, chain, call.signal ? { signal: call.signal } : {})
      return { result, quantity: 1, estimated: false, provider: result.provider }
    },
  )
}
