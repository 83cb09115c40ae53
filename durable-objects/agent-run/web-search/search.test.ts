import { describe, expect, it } from 'vitest'
import { AppError } from '../../../shared/http/errors'
import { BUILTIN_CORPUS, BuiltinSearchIndex, tokenize } from './builtin-index'
import { parseWebSearchRequest } from './search.schemas'
import { runWebSearch, searchChainFromEnv } from './search-chain'
import { braveProvider, type FetchFn, plainText, searxngProvider, tavilyProvider } from './search-providers'

interface Seen {
  url: string
  method: string
  headers: Headers
  body: string | null
}

/** A fetch that answers by host name prefix, recording what it was sent. */
function fakeFetch(routes: Record<string, (seen: Seen) => Response | Promise<Response>>) {
  const seen: Seen[] = []
  const fn: FetchFn = async (input, init) => {
    const s: Seen = {
      url: input,
      method: init.method ?? 'GET',
      headers: new Headers(init.headers),
      body: typeof init.body === 'string' ? init.body : null,
    }
    seen.push(s)
    const route = Object.entries(routes).find(([prefix]) => input.startsWith(prefix))
    if (!route) throw new TypeError('fetch failed')
    return route[1](s)
  }
  return { fn, seen }
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

const braveBody = (n: number) => ({
  type: 'search',
  web: {
    type: 'search',
    results: Array.from({ length: n }, (_, i) => ({
      title: `Brave <strong>result</strong> ${i}`,
      url: `https://brave.example/${i}`,
      description: `About &amp; <strong>svc</strong> ${i}`,
    })),
  },
})

const env = {
  BRAVE_SEARCH_API_KEY: 'brave-secret',
  BRAVE_SEARCH_BASE_URL: 'http://brave.test',
  TAVILY_API_KEY: 'tvly-secret',
  TAVILY_BASE_URL: 'http://tavily.test/',
  SEARXNG_BASE_URL: 'http://searx.test',
}

function error(p: Promise<unknown>): Promise<AppError> {
  return p.then(
    () => {
      throw new Error('expected a rejection')
    },
    (err: unknown) => {
      if (err instanceof AppError) return err
      throw err
    },
  )
}

describe('parseWebSearchRequest', () => {
  it('defaults count to 5 and trims the query', () => {
    expect(parseWebSearchRequest({ query: '  svc agents ' })).toEqual({ query: 'svc agents', count: 5 })
    expect(parseWebSearchRequest({ query: 'x', count: 1 }).count).toBe(1)
    expect(parseWebSearchRequest({ query: 'x', count: 10 }).count).toBe(10)
  })

  it.each([
    [{}, 'query', 'query is required'],
    [{ query: 3 }, 'query', 'query must be a string'],
    [{ query: '   ' }, 'query', 'must not be empty'],
    [{ query: 'q'.repeat(401) }, 'query', 'at most 400 characters'],
    [{ query: 'x', count: 0 }, 'count', 'count must be an integer from 1 to 10 (got 0)'],
    [{ query: 'x', count: 11 }, 'count', '(got 11)'],
    [{ query: 'x', count: 2.5 }, 'count', '(got 2.5)'],
    [{ query: 'x', count: '5' }, 'count', '(got "5")'],
  ])('rejects %j', (body, param, message) => {
    try {
      parseWebSearchRequest(body)
      expect.unreachable()
    } catch (err) {
      expect(err).toBeInstanceOf(AppError)
      expect((err as AppError).status).toBe(400)
      expect((err as AppError).param).toBe(param)
      expect((err as AppError).message).toContain(message)
    }
  })

  it('rejects a non-object body', () => {
    expect(() => parseWebSearchRequest(null)).toThrow(AppError)
  })
})

describe('provider wire formats', () => {
  const signal = new AbortController().signal

  it('Brave: GET with q, count and X-Subscription-Token; strips highlight markup', async () => {
    const { fn, seen } = fakeFetch({ 'http://brave.test': () => json(braveBody(3)) })
    const hits = await braveProvider({ apiKey: 'k1', baseUrl: 'http://brave.test/' }).search({
      query: 'svc agents',
      count: 2,
      fetch: fn,
      signal,
    })
    const url = new URL(seen[0]!.url)
    expect(url.pathname).toBe('/res/v1/web/search')
    expect(url.searchParams.get('q')).toBe('svc agents')
    expect(url.searchParams.get('count')).toBe('2')
    expect(seen[0]!.headers.get('x-subscription-token')).toBe('k1')
    expect(hits).toEqual([
      { title: 'Brave result 0', url: 'https://brave.example/0', snippet: 'About & svc 0' },
      { title: 'Brave result 1', url: 'https://brave.example/1', snippet: 'About & svc 1' },
    ])
  })

  it('Brave: a response without a web section is zero results', async () => {
    const { fn } = fakeFetch({
      'http://brave.test': () => json({ type: 'search', query: { original: 'x' } }),
    })
    expect(
      await braveProvider({ apiKey: 'k', baseUrl: 'http://brave.test' }).search({
        query: 'x',
        count: 5,
        fetch: fn,
        signal,
      }),
    ).toEqual([])
  })

  it('Brave: a 200 that is not a search response is malformed, not zero results', async () => {
    const { fn } = fakeFetch({ 'http://brave.test': () => json({ data: 'something else' }) })
    await expect(
      braveProvider({ apiKey: 'k', baseUrl: 'http://brave.test' }).search({
        query: 'x',
        count: 5,
        fetch: fn,
        signal,
      }),
    ).rejects.toMatchObject({ provider: 'brave', kind: 'malformed' })
  })

  it('Tavily: POST JSON {query, max_results} with a Bearer key, never the key in the body', async () => {
    const { fn, seen } = fakeFetch({
      'http://tavily.test': () =>
        json({
          query: 'q',
          results: [
            { title: 'T1', url: 'https://t.example/1', content: 'first', score: 0.9 },
            { title: 'T2', url: 'ftp://t.example/2', content: 'not a web url', score: 0.5 },
          ],
          response_time: 0.4,
        }),
    })
    const hits = await tavilyProvider({ apiKey: 'tvly-k', baseUrl: 'http://tavily.test' }).search({
      query: 'q',
      count: 3,
      fetch: fn,
      signal,
    })
    expect(seen[0]!.method).toBe('POST')
    expect(seen[0]!.url).toBe('http://tavily.test/search')
    expect(seen[0]!.headers.get('authorization')).toBe('Bearer tvly-k')
    expect(JSON.parse(seen[0]!.body!)).toEqual({ query: 'q', max_results: 3, search_depth: 'basic' })
    expect(seen[0]!.body).not.toContain('tvly-k')
    expect(hits).toEqual([{ title: 'T1', url: 'https://t.example/1', snippet: 'first' }])
  })

  it('SearXNG: GET /search?q=&format=json and caps to count', async () => {
    const { fn, seen } = fakeFetch({
      'http://searx.test': () =>
        json({
          query: 'q',
          number_of_results: 0,
          results: Array.from({ length: 8 }, (_, i) => ({
            url: `https://s.example/${i}`,
            title: `S${i}`,
            content: `c${i}`,
            engine: 'ddg',
          })),
          answers: [],
        }),
    })
    const hits = await searxngProvider({ baseUrl: 'http://searx.test' }).search({
      query: 'q',
      count: 4,
      fetch: fn,
      signal,
    })
    const url = new URL(seen[0]!.url)
    expect(url.pathname).toBe('/search')
    expect(url.searchParams.get('format')).toBe('json')
    expect(hits.map((h) => h.title)).toEqual(['S0', 'S1', 'S2', 'S3'])
  })

  it('plainText decodes entities and drops tags', () => {
    expect(plainText('<b>a</b> &lt;b&gt; &#39;x&#39; &#x41; &quot;q&quot;  \n z')).toBe(`a <b> 'x' A "q" z`)
  })
})

describe('runWebSearch: the provider chain', () => {
  it('uses the first provider that answers and caps results to count', async () => {
    const { fn, seen } = fakeFetch({ 'http://brave.test': () => json(braveBody(10)) })
    const chain = searchChainFromEnv(env, { testMode: false })
    const res = await runWebSearch({ query: 'svc', count: 3 }, chain, { fetch: fn })
    expect(res.provider).toBe('brave')
    expect(res.results).toHaveLength(3)
    expect(seen).toHaveLength(1)
  })

  it('fails over in order past 500, 429, timeouts and malformed bodies', async () => {
    const { fn, seen } = fakeFetch({
      'http://brave.test': () => json({ error: 'boom' }, 500),
      'http://tavily.test': () => new Response('<html>not json</html>', { status: 200 }),
      'http://searx.test': () =>
        json({ results: [{ url: 'https://s.example/1', title: 'S', content: 'c' }] }),
    })
    const res = await runWebSearch({ query: 'q', count: 5 }, searchChainFromEnv(env, { testMode: false }), {
      fetch: fn,
    })
    expect(res).toEqual({
      provider: 'searxng',
      results: [{ title: 'S', url: 'https://s.example/1', snippet: 'c' }],
    })
    expect(seen.map((s) => new URL(s.url).host)).toEqual(['brave.test', 'tavily.test', 'searx.test'])
  })

  it('502 lists each provider and how it failed, without secrets', async () => {
    const { fn } = fakeFetch({
      'http://brave.test': () => new Response('slow down', { status: 429 }),
      'http://tavily.test': () => new Promise<Response>(() => {}),
      'http://searx.test': () => json({ results: [{ title: 'no url' }] }),
    })
    const chain = searchChainFromEnv({ ...env, SEARCH_TIMEOUT_MS: '50' }, { testMode: false })
    const err = await error(runWebSearch({ query: 'q', count: 5 }, chain, { fetch: fn }))
    expect(err.status).toBe(502)
    expect(err.code).toBe('search_providers_failed')
    expect(err.message).toContain('brave: HTTP 429 (rate limited)')
    expect(err.message).toContain('tavily: timed out after 50 ms')
    expect(err.message).toContain('searxng: malformed response body (results.0.url')
    expect(JSON.stringify(err.toBody())).not.toMatch(/brave-secret|tvly-secret/)
    expect(err.toBody().failures).toEqual([
      { provider: 'brave', kind: 'http_status', detail: 'HTTP 429 (rate limited)', status: 429 },
      { provider: 'tavily', kind: 'timeout', detail: 'timed out after 50 ms', status: null },
      expect.objectContaining({ provider: 'searxng', kind: 'malformed' }),
    ])
  })

  it('reports network errors and non-JSON bodies distinctly', async () => {
    const { fn } = fakeFetch({ 'http://tavily.test': () => new Response('{"results": [', { status: 200 }) })
    const chain = searchChainFromEnv(
      {
        BRAVE_SEARCH_API_KEY: 'k',
        BRAVE_SEARCH_BASE_URL: 'http://nowhere.test',
        TAVILY_API_KEY: 't',
        TAVILY_BASE_URL: 'http://tavily.test',
      },
      { testMode: false },
    )
    const err = await error(runWebSearch({ query: 'q', count: 5 }, chain, { fetch: fn }))
    expect(err.message).toBe(
      'every configured web search provider failed: brave: network error (TypeError); tavily: malformed response body (not JSON)',
    )
  })

  it('times out a provider whose body never finishes', async () => {
    const stalled: FetchFn = async (_url, init) =>
      new Response(
        new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode('{"results":'))
            init.signal?.addEventListener('abort', () => controller.error(new Error('aborted')))
          },
        }),
      )
    const chain = searchChainFromEnv({ SEARXNG_BASE_URL: 'http://searx.test' }, { testMode: false })
    const err = await error(runWebSearch({ query: 'q', count: 5 }, chain, { fetch: stalled, timeoutMs: 30 }))
    expect(err.message).toContain('searxng: timed out after 30 ms')
  })

  it('503 when nothing is configured; listed but unconfigured providers are skipped', async () => {
    const err = await error(
      runWebSearch({ query: 'q', count: 5 }, searchChainFromEnv({}, { testMode: false })),
    )
    expect(err.status).toBe(503)
    expect(err.code).toBe('search_unavailable')
    expect(searchChainFromEnv({ SEARCH_PROVIDERS: 'searxng,brave' }, { testMode: false }).providers).toEqual(
      [],
    )
  })

  it('follows SEARCH_PROVIDERS order and rejects unknown names as a server misconfiguration', () => {
    const chain = searchChainFromEnv(
      { ...env, SEARCH_PROVIDERS: 'searxng, tavily,brave' },
      { testMode: false },
    )
    expect(chain.providers.map((p) => p.name)).toEqual(['searxng', 'tavily', 'brave'])
    expect(chain.timeoutMs).toBe(8000)
    try {
      searchChainFromEnv({ SEARCH_PROVIDERS: 'google' }, { testMode: false })
      expect.unreachable()
    } catch (err) {
      expect((err as AppError).status).toBe(500)
      expect((err as AppError).internalMessage).toContain('google')
      expect((err as AppError).message).not.toContain('google')
    }
    expect(() => searchChainFromEnv({ BRAVE_SEARCH_BASE_URL: 'not a url' }, { testMode: false })).toThrow(
      AppError,
    )
  })

  it('test mode uses only the built-in index, even with live providers configured', async () => {
    const { fn, seen } = fakeFetch({})
    const chain = searchChainFromEnv(env, { testMode: true })
    const res = await runWebSearch({ query: 'resume a turn stream with cursor', count: 3 }, chain, {
      fetch: fn,
    })
    expect(res.provider).toBe('builtin')
    expect(res.results[0]?.title).toBe('Resuming a turn stream with cursor')
    expect(seen).toHaveLength(0)
  })
})

describe('built-in search index', () => {
  const index = new BuiltinSearchIndex()

  it('is deterministic: same query, same results', () => {
    const a = index.search('approval modes plan edit auto', 5)
    const b = new BuiltinSearchIndex().search('approval modes plan edit auto', 5)
    expect(a).toEqual(b)
    expect(a[0]?.title).toBe('Approval modes: manual, plan, edit and auto')
  })

  it('ranks by token overlap, title words weighing more, and picks the best sentence as snippet', () => {
    const res = index.search('what does a 409 mean when reattaching', 3)
    expect(res[0]?.url).toBe('https://svc.example/docs/agent-protocol#reattach')
    expect(res[0]?.snippet).toContain('409')
    const audio = index.search('which audio formats are accepted for transcription, mp3?', 1)
    expect(audio).toEqual([
      {
        title: 'Audio transcription',
        url: 'https://svc.example/docs/transcription',
        snippet: expect.stringContaining('25 MiB'),
      },
    ])
  })

  it('returns nothing for queries sharing no token and honours count and base URL', () => {
    expect(index.search('zebra giraffe', 5)).toEqual([])
    expect(index.search('the of and', 5)).toEqual([])
    expect(index.search('svc', 2)).toHaveLength(2)
    expect(new BuiltinSearchIndex(BUILTIN_CORPUS, 'http://docs.local/').search('heartbeat', 1)[0]?.url).toBe(
      'http://docs.local/agent-protocol#heartbeat',
    )
  })

  it('tokenizes words, drops stop words and plural s', () => {
    expect(tokenize('The Approvals of svc.code.v1 tools!')).toEqual(['approval', 'svc', 'code', 'v1', 'tool'])
  })
})
