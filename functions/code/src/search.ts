/**
 * POST /svc/code/v1/search: one web search through the configured provider chain (Brave, Tavily,
 * SearXNG, in SEARCH_PROVIDERS order); test keys always get the built-in index. 403 when the
 * plan has no web search, 400 bad input, 503 none configured, then the tenant's RateLimiter
 * admits it (402/429 action-required, x-ratelimit-* headers), 502 every provider failed (each
 * named with how). The search is recorded as one request of `web_search` before the answer
 * leaves. The agent loop's `web_search` tool calls run the same code (meteredWebSearch).
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { meteredWebSearch } from '../../../durable-objects/agent-run/web-search/metered-search'
import {
  parseWebSearchRequest,
  WebSearchRequestSchema,
  WebSearchResponseSchema,
} from '../../../durable-objects/agent-run/web-search/search.schemas'
import { actionRequiredResponse, errorResponse } from '../../../shared/http/error-body'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import type { CodeEnv } from './code.context'
import { callerOf, requireFeature } from './turns'

export function searchRoutes(app: OpenAPIHono<FamilyEnv<CodeEnv>>): void {
  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'post',
      path: '/svc/code/v1/search',
      tags: ['Agent'],
      summary: 'Web search: the provider used and titled results with URLs and snippets',
      request: {
        body: { required: true, content: { 'application/json': { schema: WebSearchRequestSchema } } },
      },
      responses: {
        200: { description: 'Results', content: { 'application/json': { schema: WebSearchResponseSchema } } },
        400: errorResponse('The query is missing or invalid (the message names the field and the rule)'),
        402: actionRequiredResponse('insufficient_credits or overage_cap_reached'),
        403: actionRequiredResponse(
          'feature_required: the plan does not include web search; insufficient_scope (error body) for a credential without agents:write',
        ),
        429: actionRequiredResponse(
          "tier_allowance_exhausted (the month's searches) or rate_limited (retry after Retry-After)",
        ),
        502: errorResponse('Every configured search provider failed (each named with how, in failures)'),
        503: errorResponse('No search provider is configured, or usage limits cannot be checked'),
      },
    }),
  )
  app.post('/svc/code/v1/search', async (c) => {
    const identity = callerOf(c)
    requireFeature(c.env, identity, 'web_search')
    const request = parseWebSearchRequest(await c.req.json())
    const { result, headers } = await meteredWebSearch(c.env, identity, request, {
      requestId: c.get('request').requestId,
      endpoint: 'code.search',
      signal: c.req.raw.signal,
    })
    return c.json(result, 200, headers)
  })
}
