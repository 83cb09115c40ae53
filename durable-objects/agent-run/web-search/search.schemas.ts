/**
 * Web search request and response (POST /svc/code/v1/search, spec 000 "Web search request").
 * The client calls it with its turn credential to run the model's `web_search` tool call.
 */
import { z } from 'zod'
import { parseWith } from '../../../shared/http/validation'

export const SEARCH_COUNT = { min: 1, max: 10, default: 5 } as const
/**
 * Not in the spec: the strictest provider (Brave) refuses queries over 400 characters, so longer
 * ones are a 400 here rather than a 502 from every provider.
 */
export const SEARCH_QUERY_MAX_CHARS = 400

const countRule = (issue: { input?: unknown }) =>
  `must be an integer from ${SEARCH_COUNT.min} to ${SEARCH_COUNT.max} (got ${JSON.stringify(issue.input)}); omit it for ${SEARCH_COUNT.default}`

/**
 * The one definition of a search request: the route documents it and validates with it, and each
 * rule words its own refusal ("query must be at most 400 characters (got 401)").
 */
export const WebSearchRequestSchema = z.object(
  {
    query: z
      .string()
      .trim()
      .min(1, { error: 'must not be empty or only whitespace' })
      .max(SEARCH_QUERY_MAX_CHARS, {
        error: (issue) =>
          `must be at most ${SEARCH_QUERY_MAX_CHARS} characters (got ${String(issue.input).length})`,
      })
      .describe(`What to search for (1-${SEARCH_QUERY_MAX_CHARS} characters after trimming)`),
    count: z
      .int({ error: countRule })
      .min(SEARCH_COUNT.min, { error: countRule })
      .max(SEARCH_COUNT.max, { error: countRule })
      .default(SEARCH_COUNT.default)
      .describe(`Results wanted, ${SEARCH_COUNT.min}-${SEARCH_COUNT.max}`),
  },
  { error: 'must be a JSON object with a query' },
)
export type WebSearchRequest = z.infer<typeof WebSearchRequestSchema>

export const SearchHitSchema = z.object({ title: z.string(), url: z.string(), snippet: z.string() }).strict()
export type SearchHit = z.infer<typeof SearchHitSchema>

export const WebSearchResponseSchema = z
  .object({ provider: z.string().min(1), results: z.array(SearchHitSchema).max(SEARCH_COUNT.max) })
  .strict()
export type WebSearchResponse = z.infer<typeof WebSearchResponseSchema>

/** Validates a web search body with WebSearchRequestSchema; AppError 400 naming the field and the rule. */
export function parseWebSearchRequest(body: unknown): WebSearchRequest {
  return parseWith(WebSearchRequestSchema, body, { code: 'invalid_search_request' })
}
