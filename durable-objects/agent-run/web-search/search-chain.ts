/**
 * The web search provider chain: providers are tried in the configured order until one answers.
 * - no provider configured -> AppError 503 `search_unavailable`
 * - every provider failed  -> AppError 502 `search_providers_failed`, the message listing each
 *   provider and how it failed (HTTP status, timeout, network error, malformed body)
 * A provider that answers with zero results has answered: the chain does not fail over on it.
 *
 * Configuration (all optional strings in the worker env):
 * | variable                     | meaning                                                              |
 * |------------------------------|----------------------------------------------------------------------|
 * | SEARCH_PROVIDERS             | order, comma-separated from brave, tavily, searxng, builtin          |
 * |                              | (default `brave,tavily,searxng`; listed but unconfigured are skipped) |
 * | BRAVE_SEARCH_API_KEY         | enables Brave                                                        |
 * | BRAVE_SEARCH_BASE_URL        | default https://api.search.brave.com                                 |
 * | TAVILY_API_KEY               | enables Tavily                                                       |
 * | TAVILY_BASE_URL              | default https://api.tavily.com                                       |
 * | SEARXNG_BASE_URL             | enables SearXNG (its instance URL)                                   |
 * | SEARXNG_API_KEY              | optional Bearer token for a SearXNG behind an authenticating proxy  |
 * | SEARCH_TIMEOUT_MS            | per-provider timeout, default 8000                                   |
 * | SEARCH_BUILTIN_DOCS_BASE_URL | base of the built-in index's result URLs                             |
 * Test mode (a `svc_sk_test_` key) always uses only the built-in index.
 */
import { z } from 'zod'
import { AppError } from '../../../shared/http/errors'
import { firstAnswer } from '../provider-chain'
import { BuiltinSearchIndex, builtinProvider } from './builtin-index'
import type { WebSearchRequest, WebSearchResponse } from './search.schemas'
import {
  braveProvider,
  type FetchFn,
  type SearchProvider,
  searchFailure,
  searxngProvider,
  tavilyProvider,
} from './search-providers'

export const DEFAULT_SEARCH_TIMEOUT_MS = 8000
export const SEARCH_PROVIDER_NAMES = ['brave', 'tavily', 'searxng', 'builtin'] as const

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v?.trim() ? v.trim() : undefined))
const optionalUrl = optionalText.refine((v) => v === undefined || /^https?:\/\/[^\s]+$/.test(v), {
  error: 'must be an http(s) URL',
})

export const SearchEnvSchema = z.object({
  SEARCH_PROVIDERS: optionalText,
  BRAVE_SEARCH_API_KEY: optionalText,
  BRAVE_SEARCH_BASE_URL: optionalUrl,
  TAVILY_API_KEY: optionalText,
  TAVILY_BASE_URL: optionalUrl,
  SEARXNG_BASE_URL: optionalUrl,
  SEARXNG_API_KEY: optionalText,
  SEARCH_TIMEOUT_MS: optionalText.refine((v) => v === undefined || (/^\d+$/.test(v) && Number(v) > 0), {
    error: 'must be a positive integer (milliseconds)',
  }),
  SEARCH_BUILTIN_DOCS_BASE_URL: optionalUrl,
})
export type SearchEnv = z.input<typeof SearchEnvSchema>

export interface SearchChainConfig {
  providers: SearchProvider[]
  timeoutMs: number
}

function misconfigured(detail: string): AppError {
  return new AppError(
    500,
    'search_misconfigured',
    'web search is misconfigured on this server; contact support',
    {
      internalMessage: `search config: ${detail}`,
    },
  )
}

/**
 * Builds the provider chain from the worker env. `testMode` (a `svc_sk_test_` credential) always
 * gives the built-in index alone, so test traffic never reaches a paid provider.
 */
export function searchChainFromEnv(env: SearchEnv, options: { testMode: boolean }): SearchChainConfig {
  const parsed = SearchEnvSchema.safeParse(env)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw misconfigured(`${issue?.path.join('.')}: ${issue?.message}`)
  }
  const cfg = parsed.data
  const timeoutMs = cfg.SEARCH_TIMEOUT_MS ? Number(cfg.SEARCH_TIMEOUT_MS) : DEFAULT_SEARCH_TIMEOUT_MS
  const index = () => builtinProvider(new BuiltinSearchIndex(undefined, cfg.SEARCH_BUILTIN_DOCS_BASE_URL))
  if (options.testMode) return { providers: [index()], timeoutMs }

  const order = (cfg.SEARCH_PROVIDERS ?? 'brave,tavily,searxng')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean)
  const providers: SearchProvider[] = []
  for (const name of new Set(order)) {
    switch (name) {
      case 'brave':
        if (cfg.BRAVE_SEARCH_API_KEY) {
          providers.push(
            braveProvider({ apiKey: cfg.BRAVE_SEARCH_API_KEY, baseUrl: cfg.BRAVE_SEARCH_BASE_URL }),
          )
        }
        break
      case 'tavily':
        if (cfg.TAVILY_API_KEY)
          providers.push(tavilyProvider({ apiKey: cfg.TAVILY_API_KEY, baseUrl: cfg.TAVILY_BASE_URL }))
        break
      case 'searxng':
        if (cfg.SEARXNG_BASE_URL)
          providers.push(searxngProvider({ baseUrl: cfg.SEARXNG_BASE_URL, apiKey: cfg.SEARXNG_API_KEY }))
        break
      case 'builtin':
        providers.push(index())
        break
      default:
        throw misconfigured(
          `SEARCH_PROVIDERS names unknown provider ${JSON.stringify(name)} (known: ${SEARCH_PROVIDER_NAMES.join(', ')})`,
        )
    }
  }
  return { providers, timeoutMs }
}

export interface RunSearchOptions {
  fetch?: FetchFn
  timeoutMs?: number
  /** Aborts the whole search (e.g. the client went away). */
  signal?: AbortSignal
}

/** 503 `search_unavailable` when no provider is configured (checked before anything is metered). */
export function requireSearchProviders(chain: SearchChainConfig): void {
  if (chain.providers.length > 0) return
  throw new AppError(
    503,
    'search_unavailable',
    'no web search provider is configured on this server (set BRAVE_SEARCH_API_KEY, TAVILY_API_KEY or SEARXNG_BASE_URL)',
  )
}

/** Tries each provider in order; returns the first answer capped to `count`. */
export async function runWebSearch(
  request: WebSearchRequest,
  chain: SearchChainConfig,
  options: RunSearchOptions = {},
): Promise<WebSearchResponse> {
  requireSearchProviders(chain)
  const fetchFn: FetchFn = options.fetch ?? ((input, init) => fetch(input, init))
  const { provider, answer } = await firstAnswer(
    chain.providers,
    (p, signal) => p.search({ query: request.query, count: request.count, fetch: fetchFn, signal }),
    {
      signal: options.signal,
      timeoutMs: options.timeoutMs ?? chain.timeoutMs,
      failure: searchFailure,
      code: 'search_providers_failed',
      what: 'web search provider',
    },
  )
  return { provider: provider.name, results: answer.slice(0, request.count) }
}
