/**
 * POST /svc/code/v1/search against the running stack. Live keys go through the provider chain
 * (Brave, Tavily, SearXNG: the fakes in test/fakes/search-providers.ts, scripted over HTTP);
 * test keys always get the built-in index.
 */
import { Validator } from '@cfworker/json-schema'
import { afterEach, describe, expect, it } from 'vitest'
import upgradeDecisionSchema from '../../shared/plans/upgrade-decision.schema.json'
import { createWorkspace, waitForLedger } from './chat-fixtures.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack()
const control = stack.fakes.search!.controlUrl as string

async function search(
  body: unknown,
  key = stack.tenantA.liveKey,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${stack.baseUrl}/svc/code/v1/search`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
}

const requestId = () => `search-${crypto.randomUUID()}`

async function fail(
  provider: 'brave' | 'tavily' | 'searxng',
  failure: string,
  times?: number,
): Promise<void> {
  const res = await fetch(`${control}/fail`, {
    method: 'POST',
    body: JSON.stringify({ provider, failure, ...(times ? { times } : {}) }),
  })
  expect(res.status).toBe(200)
}

async function providerRequests(): Promise<{ provider: string; failure: string | null }[]> {
  const res = await fetch(`${control}/requests`)
  return ((await res.json()) as { requests: { provider: string; failure: string | null }[] }).requests
}

afterEach(async () => {
  await fetch(`${control}/reset`, { method: 'POST' })
})

describe(`web search (${stack.kind})`, () => {
  it('answers from the first provider that works: {provider, results:[{title,url,snippet}]}', async () => {
    const res = await search({ query: 'durable objects', count: 3 })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      provider: 'brave',
      results: [1, 2, 3].map((i) => ({
        title: `Brave result ${i}: durable objects`,
        url: `https://brave.example/durable-objects/${i}`,
        snippet: `Snippet ${i} about durable objects from Brave.`,
      })),
    })
    const sent = await providerRequests()
    expect(sent).toEqual([expect.objectContaining({ provider: 'brave', failure: null })])
  })

  it('defaults count to 5 and caps what a provider returns', async () => {
    const res = await search({ query: 'rate limits' })
    expect(((await res.json()) as { results: unknown[] }).results).toHaveLength(5)
  })

  it('fails over in the configured order: Brave 500 -> Tavily, then Tavily timeout -> SearXNG', async () => {
    await fail('brave', 'status_500', 1)
    const first = await search({ query: 'failover' })
    expect(first.status).toBe(200)
    expect(((await first.json()) as { provider: string }).provider).toBe('tavily')

    await fail('brave', 'status_429', 1)
    await fail('tavily', 'timeout', 1)
    const second = await search({ query: 'failover again', count: 2 })
    expect(second.status).toBe(200)
    expect(await second.json()).toMatchObject({ provider: 'searxng', results: [{}, {}] })
    expect((await providerRequests()).map((r) => `${r.provider}:${r.failure}`)).toEqual([
      'brave:status_500',
      'tavily:null',
      'brave:status_429',
      'tavily:timeout',
      'searxng:null',
    ])
  })

  it('answers 502 naming every provider and how it failed when all of them fail', async () => {
    await fail('brave', 'status_401')
    await fail('tavily', 'malformed_json')
    await fail('searxng', 'status_500')
    const res = await search({ query: 'nothing works' })
    expect(res.status).toBe(502)
    const body = (await res.json()) as {
      error: { code: string; message: string; type: string }
      failures: unknown[]
    }
    expect(body.error).toMatchObject({ code: 'search_providers_failed', type: 'upstream_error' })
    expect(body.error.message).toMatch(
      /^every configured web search provider failed: brave: .*401.*; tavily: .*; searxng: .*500/,
    )
    expect(body.failures).toEqual([
      expect.objectContaining({ provider: 'brave', kind: 'http_status', status: 401 }),
      expect.objectContaining({ provider: 'tavily', kind: 'malformed' }),
      expect.objectContaining({ provider: 'searxng', kind: 'http_status', status: 500 }),
    ])
    expect(JSON.stringify(body)).not.toContain('brave-test-')
  })

  it('uses the built-in index for test keys, never a provider', async () => {
    const res = await search({ query: 'resume a turn with cursor', count: 2 }, stack.tenantA.testKey)
    expect(res.status).toBe(200)
    const body = (await res.json()) as { provider: string; results: { url: string }[] }
    expect(body.provider).toBe('builtin')
    expect(body.results[0]?.url).toBe('https://svc.example/docs/agent-protocol#resume')
    expect(await providerRequests()).toEqual([])
  })

  it.each([
    [{}, 'query', 'query is required'],
    [{ query: '   ' }, 'query', 'query must not be empty or only whitespace (got "   ")'],
    [{ query: 'x', count: 11 }, 'count', 'count must be an integer from 1 to 10 (got 11); omit it for 5'],
    [{ query: 'x'.repeat(401) }, 'query', 'query must be at most 400 characters (got 401)'],
  ])('answers 400 for %j', async (body, param, message) => {
    const res = await search(body)
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({
      error: { code: 'invalid_search_request', type: 'invalid_request_error', param, message },
    })
  })

  it('runs the model web_search calls of a turn with the same code (a test key: the built-in index)', async () => {
    const res = await fetch(`${stack.baseUrl}/svc/code/v1/turns`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tenantA.testKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        protocol: 'svc.code.v1',
        session_id: 's',
        turn_id: 't',
        model: 'svc-comb',
        mode: 'edit',
        request: 'use web_search to look up the resume docs',
        workspace: {},
        transcript: [],
        capabilities: {},
      }),
    })
    const text = await res.text()
    const events = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> })
    const done = events.find((e) => e.type === 'tool_call.updated' && e.data.status === 'completed')
    expect(done?.data.output).toMatchObject({ provider: 'builtin' })
  })
})

describe(`web search: metered like chat (${stack.kind})`, () => {
  const validator = new Validator(upgradeDecisionSchema as object, '2020-12', false)

  it('records a live search as one request of web_search in the ledger, with x-ratelimit headers', async () => {
    const id = requestId()
    const res = await search({ query: 'durable objects' }, stack.tenantA.liveKey, { 'x-request-id': id })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('600')
    const rows = await waitForLedger(stack.tenantA.id, (r) => r.some((row) => row.request_id === id))
    expect(rows.find((row) => row.request_id === id)).toMatchObject({
      mode: 'live',
      endpoint: 'code.search',
      model: 'web_search',
      provider: 'brave',
      unit: 'requests',
      quantity: 1,
      prompt_tokens: 0,
      completion_tokens: 0,
      credits_cents: '0.0000',
      estimated: false,
    })
  })

  it("refuses once the plan's monthly searches are used: 429 tier_allowance_exhausted, no provider called", async () => {
    const workspace = await createWorkspace('pro', { toolUse: { web_search: 1_000 } })
    const res = await search({ query: 'x' }, workspace.liveKey)
    expect(res.status).toBe(429)
    expect(res.headers.get('x-should-retry')).toBe('false')
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('120')
    const body = await res.json()
    expect(validator.validate(body).errors).toEqual([])
    expect(body).toMatchObject({
      error: { code: 'tier_allowance_exhausted', type: 'insufficient_quota' },
      svc_upgrade: {
        current_plan: 'pro',
        required_plan: 'team',
        requested_feature: 'web_search',
        binding_limit: { kind: 'requests', unit: 'requests', used: 1_000, limit: 1_000, remaining: 0 },
      },
    })
    expect(await providerRequests()).toEqual([])
  })

  it('with usage credits on, bills a search beyond the allowance at its list price ($0.005)', async () => {
    const workspace = await createWorkspace('pro', {
      toolUse: { web_search: 1_000 },
      usageCreditsEnabled: true,
      creditsCents: '100',
    })
    const res = await search({ query: 'x' }, workspace.liveKey)
    expect(res.status).toBe(200)
    const rows = await waitForLedger(workspace.tenantId, (r) => r.length === 1)
    expect(rows[0]).toMatchObject({ model: 'web_search', quantity: 1, credits_cents: '0.5000' })
  })

  it('test keys: recorded as test usage with zero credits, and rate limited with everything else', async () => {
    const workspace = await createWorkspace('pro')
    const res = await search({ query: 'cursor' }, workspace.testKey)
    expect(res.status).toBe(200)
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('119')
    const rows = await waitForLedger(workspace.tenantId, (r) => r.length === 1)
    expect(rows[0]).toMatchObject({
      mode: 'test',
      model: 'web_search',
      provider: 'builtin',
      credits_cents: '0.0000',
    })
  })
})
