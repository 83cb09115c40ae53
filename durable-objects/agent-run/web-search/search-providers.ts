/**
 * Web search provider adapters. Each speaks one real wire format and maps it to
 * `{title, url, snippet}`; failures are thrown as `SearchProviderError` with a kind and a
 * secret-free detail, so the chain can fail over and report a 502 that says what happened.
 *
 * | provider | request                                                                      | auth                           |
 * |----------|------------------------------------------------------------------------------|--------------------------------|
 * | brave    | GET {base}/res/v1/web/search?q=&count=                                       | `X-Subscription-Token: <key>`  |
 * | tavily   | POST {base}/search `{query, max_results, search_depth:"basic"}`              | `Authorization: Bearer <key>`  |
 * | searxng  | GET {base}/search?q=&format=json (the instance must enable the json format) | none (optional Bearer)         |
 *
 * Tavily: its current API takes the key as a Bearer token; the older `api_key` body field is not
 * sent (so the key never sits in a request body that a proxy might log).
 */
import { z } from 'zod'
import { type FetchFn, fetchProviderJson, ProviderError, type ProviderFailure } from '../provider-chain'
import type { SearchHit } from './search.schemas'

export type { FetchFn }

export type SearchFailureKind = 'http_status' | 'timeout' | 'network' | 'malformed'

export class SearchProviderError extends ProviderError<SearchFailureKind> {
  constructor(provider: string, kind: SearchFailureKind, detail: string, status?: number) {
    super(provider, kind, detail, status)
    this.name = 'SearchProviderError'
  }
}

export const searchFailure: ProviderFailure = (provider, kind, detail, status) =>
  new SearchProviderError(provider, kind, detail, status)

export interface SearchCall {
  query: string
  count: number
  fetch: FetchFn
  signal: AbortSignal
}

export interface SearchProvider {
  /** Name reported in the response's `provider` field and in failure lists. */
  readonly name: string
  search(call: SearchCall): Promise<SearchHit[]>
}

const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  '#39': "'",
  apos: "'",
  nbsp: ' ',
}

/** Brave and SearXNG put `<strong>` highlights and entities in titles and snippets. */
export function plainText(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
      const lower = name.toLowerCase()
      if (lower.startsWith('#x')) return String.fromCodePoint(Number.parseInt(lower.slice(2), 16))
      if (lower.startsWith('#') && lower !== '#39')
        return String.fromCodePoint(Number.parseInt(lower.slice(1), 10))
      return ENTITIES[lower] ?? whole
    })
    .replace(/\s+/g, ' ')
    .trim()
}

function isWebUrl(url: string): boolean {
  try {
    const u = new URL(url)
    return u.protocol === 'https:' || u.protocol === 'http:'
  } catch {
    return false
  }
}

function hits(items: Array<{ title: string; url: string; snippet: string }>, count: number): SearchHit[] {
  return items
    .filter((item) => isWebUrl(item.url))
    .map((item) => ({
      title: plainText(item.title) || item.url,
      url: item.url,
      snippet: plainText(item.snippet),
    }))
    .slice(0, count)
}

/** Sends the request and returns the decoded JSON body, classifying every failure. */
function requestJson(provider: string, call: SearchCall, url: string, init: RequestInit): Promise<unknown> {
  return fetchProviderJson(provider, call.fetch, url, { ...init, signal: call.signal }, searchFailure)
}

function decode<T>(provider: string, schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]
  const where = issue?.path.length ? issue.path.join('.') : 'body'
  throw new SearchProviderError(
    provider,
    'malformed',
    `malformed response body (${where}: ${issue?.message ?? 'invalid'})`,
  )
}

function trimBase(base: string): string {
  return base.replace(/\/+$/, '')
}

/** Brave's WebSearchApiResponse: `type` is always "search"; `web` is absent when nothing matched. */
const BraveBody = z.object({
  type: z.literal('search'),
  web: z
    .object({
      results: z
        .array(z.object({ title: z.string(), url: z.string(), description: z.string().optional() }))
        .default([]),
    })
    .optional(),
})

export const BRAVE_DEFAULT_BASE_URL = 'https://api.search.brave.com'

export function braveProvider(options: { apiKey: string; baseUrl?: string }): SearchProvider {
  const base = trimBase(options.baseUrl ?? BRAVE_DEFAULT_BASE_URL)
  return {
    name: 'brave',
    async search(call) {
      const url = `${base}/res/v1/web/search?${new URLSearchParams({ q: call.query, count: String(call.count) })}`
      const body = await requestJson('brave', call, url, {
        method: 'GET',
        headers: { accept: 'application/json', 'x-subscription-token': options.apiKey },
      })
      const results = decode('brave', BraveBody, body).web?.results ?? []
      return hits(
        results.map((r) => ({ title: r.title, url: r.url, snippet: r.description ?? '' })),
        call.count,
      )
    },
  }
}

const TavilyBody = z.object({
  results: z.array(z.object({ title: z.string(), url: z.string(), content: z.string().nullish() })),
})

export const TAVILY_DEFAULT_BASE_URL = 'https://api.tavily.com'

export function tavilyProvider(options: { apiKey: string; baseUrl?: string }): SearchProvider {
  const base = trimBase(options.baseUrl ?? TAVILY_DEFAULT_BASE_URL)
  return {
    name: 'tavily',
    async search(call) {
      const body = await requestJson('tavily', call, `${base}/search`, {
        method: 'POST',
        headers: {
          accept: 'application/json',
          'content-type': 'application/json',
          authorization: `Bearer ${options.apiKey}`,
        },
        body: JSON.stringify({ query: call.query, max_results: call.count, search_depth: 'basic' }),
      })
      const results = decode('tavily', TavilyBody, body).results
      return hits(
        results.map((r) => ({ title: r.title, url: r.url, snippet: r.content ?? '' })),
        call.count,
      )
    },
  }
}

const SearxngBody = z.object({
  results: z.array(z.object({ title: z.string().nullish(), url: z.string(), content: z.string().nullish() })),
})

export function searxngProvider(options: { baseUrl: string; apiKey?: string }): SearchProvider {
  const base = trimBase(options.baseUrl)
  return {
    name: 'searxng',
    async search(call) {
      const url = `${base}/search?${new URLSearchParams({ q: call.query, format: 'json' })}`
      const headers: Record<string, string> = { accept: 'application/json' }
      if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`
      const body = await requestJson('searxng', call, url, { method: 'GET', headers })
      const results = decode('searxng', SearxngBody, body).results
      return hits(
        results.map((r) => ({ title: r.title ?? '', url: r.url, snippet: r.content ?? '' })),
        call.count,
      )
    },
  }
}
