/**
 * A local HTTP server that speaks the wire formats of the three web search providers the plane
 * supports, for end-to-end tests (point BRAVE_SEARCH_BASE_URL, TAVILY_BASE_URL and
 * SEARXNG_BASE_URL at it; `fake.env` has all of them).
 *
 * | path prefix | provider | real endpoint                                       | auth checked            |
 * |-------------|----------|-----------------------------------------------------|-------------------------|
 * | /brave      | Brave    | GET /res/v1/web/search?q=&count= (count max 20)      | X-Subscription-Token    |
 * | /tavily     | Tavily   | POST /search {query, max_results (default 5, max 20)}| Bearer (or body api_key)|
 * | /searxng    | SearXNG  | GET /search?q=&format=json (other formats: 403)       | none                    |
 *
 * Tests in another process script it over HTTP: `/__control/fail`, `/__control/reset`,
 * `/__control/requests` (see `control` below); `controlUrl` is their base.
 *
 * Results are deterministic: result i for query q is titled "<Provider> result i: q" with URL
 * https://<provider>.example/<slug(q)>/<i>. Failures are scriptable per provider with `fail()`:
 * HTTP 500, 429 (with Retry-After), 401, a hang that never answers (timeout), a 200 with a body
 * that is not JSON, a 200 with JSON of the wrong shape, or a body cut off mid-way.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export type SearchProviderId = 'brave' | 'tavily' | 'searxng'
export type SearchFailure =
  | 'status_500'
  | 'status_429'
  | 'status_401'
  | 'timeout'
  | 'malformed_json'
  | 'wrong_shape'
  | 'truncated'

export interface RecordedSearchRequest {
  provider: SearchProviderId
  method: string
  path: string
  query: Record<string, string>
  headers: Record<string, string>
  body: unknown
  /** The failure that was served, or null for a normal answer. */
  failure: SearchFailure | null
}

export interface SearchProvidersFake {
  url: string
  /** Base of the control endpoints (`${url}/__control`). */
  controlUrl: string
  braveBaseUrl: string
  tavilyBaseUrl: string
  searxngBaseUrl: string
  keys: { brave: string; tavily: string }
  /** Env for the code worker, with all three providers pointing here. */
  env: Record<string, string>
  requests: RecordedSearchRequest[]
  /** Serves `failure` for the next `times` requests to `provider` (default: until `reset`). */
  fail(provider: SearchProviderId, failure: SearchFailure, times?: number): void
  reset(): void
  close(): Promise<void>
}

interface Script {
  failure: SearchFailure
  remaining: number
}

function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 60) || 'query'
  )
}

function results(provider: SearchProviderId, query: string, count: number) {
  const name = provider === 'brave' ? 'Brave' : provider === 'tavily' ? 'Tavily' : 'SearXNG'
  return Array.from({ length: count }, (_, i) => ({
    title: `${name} result ${i + 1}: ${query}`,
    url: `https://${provider}.example/${slug(query)}/${i + 1}`,
    snippet: `Snippet ${i + 1} about ${query} from ${name}.`,
  }))
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  res.writeHead(status, {
    'content-type': typeof body === 'string' ? 'text/html; charset=utf-8' : 'application/json',
    ...headers,
  })
  res.end(text)
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function clampCount(raw: unknown, fallback: number): number {
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw !== '' ? Number(raw) : fallback
  return Number.isInteger(n) ? Math.min(Math.max(n, 1), 20) : fallback
}

export async function startSearchProvidersFake(
  options: { host?: string; port?: number; keys?: { brave?: string; tavily?: string } } = {},
): Promise<SearchProvidersFake> {
  const keys = {
    brave: options.keys?.brave ?? `brave-test-${randomUUID()}`,
    tavily: options.keys?.tavily ?? `tvly-test-${randomUUID()}`,
  }
  const scripts = new Map<SearchProviderId, Script>()
  const requests: RecordedSearchRequest[] = []
  const sockets = new Set<Socket>()
  const hanging = new Set<ServerResponse>()

  function takeFailure(provider: SearchProviderId): SearchFailure | null {
    const script = scripts.get(provider)
    if (!script) return null
    script.remaining -= 1
    if (script.remaining <= 0) scripts.delete(provider)
    return script.failure
  }

  /** Serves a scripted failure; returns true when it did. */
  function serveFailure(res: ServerResponse, failure: SearchFailure | null): boolean {
    switch (failure) {
      case null:
        return false
      case 'status_500':
        send(res, 500, { error: 'internal server error' })
        return true
      case 'status_429':
        send(res, 429, { error: 'rate limit exceeded' }, { 'retry-after': '1' })
        return true
      case 'status_401':
        send(res, 401, { error: 'unauthorized' })
        return true
      case 'timeout':
        hanging.add(res)
        return true
      case 'malformed_json':
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"results": [ {"title": "unterminated"')
        return true
      case 'wrong_shape':
        send(res, 200, { data: 'this is not the provider response shape' })
        return true
      case 'truncated':
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '4096' })
        res.write('{"results":[')
        res.socket?.destroy()
        return true
    }
  }

  /**
   * Control endpoints for tests in another process (the e2e fakes run in vitest's global setup):
   * POST /__control/fail {provider, failure, times?} scripts a failure; POST /__control/reset
   * clears failures and the request log; GET /__control/requests returns the request log.
   */
  async function control(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (req.method === 'GET' && path === '/requests') return send(res, 200, { requests })
    if (req.method === 'POST' && path === '/reset') {
      scripts.clear()
      requests.length = 0
      return send(res, 200, { ok: true })
    }
    if (req.method === 'POST' && path === '/fail') {
      const body = JSON.parse((await readBody(req)) || '{}') as {
        provider?: SearchProviderId
        failure?: SearchFailure
        times?: number
      }
      if (!body.provider || !body.failure)
        return send(res, 400, { error: 'provider and failure are required' })
      scripts.set(body.provider, { failure: body.failure, remaining: body.times ?? Number.POSITIVE_INFINITY })
      return send(res, 200, { ok: true })
    }
    return send(res, 404, { error: 'unknown control endpoint' })
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake')
    if (url.pathname.startsWith('/__control/'))
      return control(req, res, url.pathname.slice('/__control'.length))
    const provider = (['brave', 'tavily', 'searxng'] as const).find((p) => url.pathname.startsWith(`/${p}/`))
    if (!provider) {
      send(res, 404, { error: 'not found' })
      return
    }
    const path = url.pathname.slice(provider.length + 1)
    const raw = req.method === 'POST' ? await readBody(req) : ''
    let body: unknown = null
    if (raw) {
      try {
        body = JSON.parse(raw)
      } catch {
        body = raw
      }
    }
    const headers: Record<string, string> = {}
    for (const name of ['accept', 'authorization', 'content-type', 'x-subscription-token']) {
      const value = req.headers[name]
      if (typeof value === 'string') headers[name] = value
    }
    const failure = takeFailure(provider)
    requests.push({
      provider,
      method: req.method ?? 'GET',
      path,
      query: Object.fromEntries(url.searchParams),
      headers,
      body,
      failure,
    })
    if (serveFailure(res, failure)) return

    if (provider === 'brave') {
      if (req.method !== 'GET' || path !== '/res/v1/web/search') return send(res, 404, { error: 'not found' })
      if (headers['x-subscription-token'] !== keys.brave) {
        return send(res, 401, {
          type: 'ErrorResponse',
          error: {
            id: randomUUID(),
            status: 401,
            code: 'SUBSCRIPTION_TOKEN_INVALID',
            detail: 'The provided subscription token is invalid.',
          },
          time: Date.now(),
        })
      }
      const q = url.searchParams.get('q') ?? ''
      if (q.trim() === '') {
        return send(res, 422, {
          type: 'ErrorResponse',
          error: {
            id: randomUUID(),
            status: 422,
            code: 'VALIDATION',
            detail: 'Unable to validate request parameter(s)',
          },
          time: Date.now(),
        })
      }
      const hits = results('brave', q, clampCount(url.searchParams.get('count'), 20))
      return send(res, 200, {
        type: 'search',
        query: { original: q, more_results_available: true },
        mixed: { type: 'mixed', main: hits.map((_, index) => ({ type: 'web', index, all: false })) },
        web: {
          type: 'search',
          family_friendly: true,
          results: hits.map((h) => ({
            type: 'search_result',
            title: h.title.replace(q, `<strong>${q}</strong>`),
            url: h.url,
            description: h.snippet.replace(q, `<strong>${q}</strong>`),
            is_source_local: false,
            language: 'en',
          })),
        },
      })
    }

    if (provider === 'tavily') {
      if (req.method !== 'POST' || path !== '/search') return send(res, 404, { detail: 'Not Found' })
      const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {}
      const bearer = headers.authorization?.replace(/^Bearer\s+/i, '')
      if (bearer !== keys.tavily && fields.api_key !== keys.tavily) {
        return send(res, 401, { detail: { error: 'Unauthorized: missing or invalid API key.' } })
      }
      if (typeof fields.query !== 'string' || fields.query.trim() === '') {
        return send(res, 400, { detail: { error: 'Query is missing.' } })
      }
      const hits = results('tavily', fields.query, clampCount(fields.max_results, 5))
      return send(res, 200, {
        query: fields.query,
        follow_up_questions: null,
        answer: null,
        images: [],
        results: hits.map((h, i) => ({
          title: h.title,
          url: h.url,
          content: h.snippet,
          score: 0.9 - i * 0.05,
          raw_content: null,
        })),
        response_time: 0.42,
        request_id: randomUUID(),
      })
    }

    if (req.method !== 'GET' || path !== '/search')
      return send(res, 404, '<html><body>Not Found</body></html>')
    if (url.searchParams.get('format') !== 'json')
      return send(res, 403, '<html><body>403 Forbidden</body></html>')
    const q = url.searchParams.get('q') ?? ''
    if (q.trim() === '') return send(res, 400, '<html><body>Bad Request</body></html>')
    const hits = results('searxng', q, 10)
    return send(res, 200, {
      query: q,
      number_of_results: 0,
      results: hits.map((h, i) => ({
        url: h.url,
        title: h.title,
        content: h.snippet,
        engine: 'duckduckgo',
        engines: ['duckduckgo'],
        positions: [i + 1],
        score: 1 / (i + 1),
        category: 'general',
      })),
      answers: [],
      corrections: [],
      infoboxes: [],
      suggestions: [],
      unresponsive_engines: [],
    })
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { error: err instanceof Error ? err.message : String(err) })
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const url = `http://${options.host ?? '127.0.0.1'}:${port}`

  return {
    url,
    controlUrl: `${url}/__control`,
    braveBaseUrl: `${url}/brave`,
    tavilyBaseUrl: `${url}/tavily`,
    searxngBaseUrl: `${url}/searxng`,
    keys,
    env: {
      BRAVE_SEARCH_API_KEY: keys.brave,
      BRAVE_SEARCH_BASE_URL: `${url}/brave`,
      TAVILY_API_KEY: keys.tavily,
      TAVILY_BASE_URL: `${url}/tavily`,
      SEARXNG_BASE_URL: `${url}/searxng`,
    },
    requests,
    fail(provider, failure, times = Number.POSITIVE_INFINITY) {
      scripts.set(provider, { failure, remaining: times })
    },
    reset() {
      scripts.clear()
      requests.length = 0
    },
    async close() {
      for (const res of hanging) res.destroy()
      hanging.clear()
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
