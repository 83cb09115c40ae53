/**
 * Web search request and response (POST /svc/code/v1/search, spec 000 "Web search request").
 * The client calls it with its turn credential to run the model's `web_search` tool call.
 */
import { z } from 'zod'
import { AppError } from '../../../shared/http/errors'

export const SEARCH_COUNT = { min: 1, max: 10, default: 5 } as const
/**
 * Not in the spec: the strictest provider (Brave) refuses queries over 400 characters, so longer
 * ones are a 400 here rather than a 502 from every provider.
 */
export const SEARCH_QUERY_MAX_CHARS = 400

export const WebSearchRequestSchema = z.object({
  query: z.string(),
  count: z.int().min(SEARCH_COUNT.min).max(SEARCH_COUNT.max).default(SEARCH_COUNT.default),
})
export type WebSearchRequest = z.infer<typeof WebSearchRequestSchema>

export const SearchHitSchema = z.object({ title: z.string(), url: z.string(), snippet: z.string() }).strict()
export type SearchHit = z.infer<typeof SearchHitSchema>

export const WebSearchResponseSchema = z
  .object({ provider: z.string().min(1), results: z.array(SearchHitSchema).max(SEARCH_COUNT.max) })
  .strict()
export type WebSearchResponse = z.infer<typeof WebSearchResponseSchema>

function bad(message: string, param: string): AppError {
  return new AppError(400, 'invalid_search_request', message, { param })
}

/** Validates a web search body; throws AppError 400 naming the field and the rule. */
export function parseWebSearchRequest(body: unknown): WebSearchRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError(400, 'invalid_search_request', 'the search request must be a JSON object with a query')
  }
  const { query, count } = body as Record<string, unknown>
  if (query === undefined) throw bad('query is required', 'query')
  if (typeof query !== 'string')
    throw bad(`query must be a string (got ${query === null ? 'null' : typeof query})`, 'query')
  const trimmed = query.trim()
  if (trimmed === '') throw bad('query must not be empty or only whitespace', 'query')
  if (trimmed.length > SEARCH_QUERY_MAX_CHARS) {
    throw bad(`query must be at most ${SEARCH_QUERY_MAX_CHARS} characters (got ${trimmed.length})`, 'query')
  }
  if (
    count !== undefined &&
    (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 10)
  ) {
    throw bad(
      `count must be an integer from ${SEARCH_COUNT.min} to ${SEARCH_COUNT.max} (got ${JSON.stringify(count)}); omit it for ${SEARCH_COUNT.default}`,
      'count',
    )
  }
  return WebSearchRequestSchema.parse({ query: trimmed, count })
}
