/**
 * The chat worker inside workerd with its real RateLimiter binding (vitest project do-chat): the
 * deployment cases the end-to-end stack cannot show (no MODEL_PROVIDERS at all, an invalid one)
 * and the headers every response carries.
 */
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test'
import { describe, expect, it, vi } from 'vitest'
import type { LedgerEntry } from '../../../shared/metering'
import type { Identity, RequestContext } from '../../../shared/worker/request-context'
import type { ChatEnv } from './chat.context'
import ChatWorker from './index'

const chatEnv = env as unknown as ChatEnv

function identity(mode: 'live' | 'test', planId = 'pro'): Identity {
  return {
    tenantId: crypto.randomUUID(),
    mode,
    principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode },
    role: 'owner',
    planId,
    scopes: [],
  }
}

async function call(
  who: Identity,
  body: unknown,
  overrides: Partial<ChatEnv> = {},
): Promise<{ res: Response; ctx: ExecutionContext }> {
  const ctx = createExecutionContext()
  const worker = new ChatWorker(ctx, { ...chatEnv, ...overrides })
  const context: RequestContext = {
    requestId: `req_${crypto.randomUUID().replaceAll('-', '')}`,
    identity: who,
    maxBodyBytes: 4 * 1024 * 1024,
    baseUrl: 'https://svc.test',
  }
  // Exactly what the gateway sends over the binding.
  const answer = await worker.handle({
    method: 'POST',
    url: 'https://svc.test/svc/chat/completions',
    path: '/svc/chat/completions',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    context,
  })
  const res = new Response(answer.body, { status: answer.status, headers: answer.headers })
  return { res, ctx }
}

const hello = { model: 'svc-cell', messages: [{ role: 'user', content: 'Hello' }] }

describe('chat worker: reachable only through the gateway', () => {
  it('a plain HTTP fetch() that reaches the worker gets 404 not_routable, whatever headers it carries', async () => {
    const worker = new ChatWorker(createExecutionContext(), chatEnv)
    const res = await worker.fetch()
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_routable')
  })

  it('handle(): the gateway RPC answers with plain values, the body text reused, the request id on the answer', async () => {
    const worker = new ChatWorker(createExecutionContext(), chatEnv)
    const requestId = `req_${crypto.randomUUID().replaceAll('-', '')}`
    const out = await worker.handle({
      method: 'POST',
      url: 'https://svc.test/svc/chat/completions',
      path: '/svc/chat/completions',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(hello),
      context: { requestId, identity: identity('test'), maxBodyBytes: 4096, baseUrl: 'https://svc.test' },
    })
    expect(out.status).toBe(200)
    expect(typeof out.body).toBe('string')
    expect(JSON.parse(out.body as string).object).toBe('chat.completion')
    const headers = new Headers(out.headers)
    expect(headers.get('x-request-id')).toBe(requestId)
    expect(headers.get('x-ratelimit-limit-requests')).not.toBeNull()
  })

  it('handle(): a malformed JSON body handed over as text is refused 400 malformed_json', async () => {
    const worker = new ChatWorker(createExecutionContext(), chatEnv)
    const out = await worker.handle({
      method: 'POST',
      url: 'https://svc.test/svc/chat/completions',
      path: '/svc/chat/completions',
      headers: { 'content-type': 'application/json' },
      body: '{"model":',
      context: {
        requestId: 'req_x',
        identity: identity('test'),
        maxBodyBytes: 2 ** 40,
        baseUrl: 'https://svc.test',
      },
    })
    expect(out.status).toBe(400)
    expect(JSON.parse(out.body as string).error.code).toBe('malformed_json')
  })
})

describe('chat worker: deployments without a model provider', () => {
  it('a live key gets 503 provider_not_configured naming MODEL_PROVIDERS when it is unset', async () => {
    const { res } = await call(identity('live'), hello, { MODEL_PROVIDERS: undefined })
    expect(res.status).toBe(503)
    const { error } = (await res.json()) as { error: { code: string; message: string } }
    expect(error.code).toBe('provider_not_configured')
    expect(error.message).toContain('The operator must map svc-cell to a provider in MODEL_PROVIDERS')
    expect(error.message).toContain('test keys (svc_sk_test_) use the built-in model')
  })

  it('an invalid MODEL_PROVIDERS is an operator error: 503 provider_config_invalid, details only in the log', async () => {
    const { res } = await call(identity('live'), hello, { MODEL_PROVIDERS: '{"version":1,"providers":[]}' })
    expect(res.status).toBe(503)
    const { error } = (await res.json()) as { error: { code: string; message: string } }
    expect(error.code).toBe('provider_config_invalid')
    expect(error.message).toContain('MODEL_PROVIDERS is invalid')
    expect(error.message).not.toContain('expected array')
  })

  it('a test key is answered by the simulated model anyway, with rate-limit headers, and metered as test usage', async () => {
    const who = identity('test')
    const { res, ctx } = await call(who, hello, { MODEL_PROVIDERS: undefined })
    expect(res.status).toBe(200)
    const body = (await res.json()) as {
      choices: { message: { content: string } }[]
      usage: { prompt_tokens: number; completion_tokens: number }
    }
    expect(body.choices[0]?.message.content).toMatch(/^Test mode reply from svc-cell/)
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('120')
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('119')
    // Stored before the answer left: read at once, without waiting for the request's waitUntil.
    expect(await ledgerRows(who)).toEqual([
      {
        mode: 'test',
        provider: 'svc-test-mode',
        prompt_tokens: body.usage.prompt_tokens,
        completion_tokens: body.usage.completion_tokens,
        estimated: 0,
        status: 200,
        latency_measured: true,
      },
    ])
    await waitOnExecutionContext(ctx)
  })

  it('a stream ends with [DONE] only once its usage is stored', async () => {
    const who = identity('test')
    const { res, ctx } = await call(who, { ...hello, stream: true, stream_options: { include_usage: true } })
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
    const usage = JSON.parse(
      text
        .split('\n\n')
        .filter((e) => e.startsWith('data: {'))
        .map((e) => e.slice(6))
        .find((e) => e.includes('"usage":{')) ?? 'null',
    ) as { usage: { prompt_tokens: number; completion_tokens: number } }
    expect(await ledgerRows(who)).toEqual([
      {
        mode: 'test',
        provider: 'svc-test-mode',
        prompt_tokens: usage.usage.prompt_tokens,
        completion_tokens: usage.usage.completion_tokens,
        estimated: 0,
        status: 200,
        latency_measured: true,
      },
    ])
    await waitOnExecutionContext(ctx)
  })
})

/**
 * The ledger rows kept by the tenant's test-mode RateLimiter (hosted by svc-metering), through the
 * read-only method of the test build of that worker (test/support/metering-test-worker.ts).
 */
async function ledgerRows(who: Identity) {
  const stub = chatEnv.RATE_LIMITER.get(chatEnv.RATE_LIMITER.idFromName(`${who.tenantId}:test`))
  const rows = await (stub as unknown as { keptLedger(): Promise<LedgerEntry[]> }).keptLedger()
  return rows.map((row) => ({
    mode: row.mode,
    provider: row.provider,
    prompt_tokens: row.promptTokens,
    completion_tokens: row.completionTokens,
    estimated: row.estimated ? 1 : 0,
    status: row.status,
    // Measured by this worker from admission to the settle (0 is possible: workerd's clock moves on I/O).
    latency_measured: typeof row.latencyMs === 'number' && row.latencyMs >= 0,
  }))
}

describe('chat worker: the plan catalog', () => {
  it('a plan id the catalog does not define is 503 plan_not_in_catalog, as on the agent plane', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const { res } = await call(identity('test', 'gold'), hello)
    errors.mockRestore()
    expect(res.status).toBe(503)
    expect(await res.json()).toMatchObject({
      error: { code: 'plan_not_in_catalog', type: 'service_unavailable' },
    })
  })
})

describe("chat worker: the model's context window", () => {
  it("refuses a prompt beyond the model's own window even when the plan allows more", async () => {
    // svc-cell's window is 131,072 tokens, Team's limit 256,000; this prompt is about 150,000.
    const prompt = 'lorem '.repeat(150_000)
    const { res } = await call(identity('test', 'team'), {
      model: 'svc-cell',
      messages: [{ role: 'user', content: prompt }],
    })
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({
      error: { code: 'context_limit_reached', param: 'messages' },
      svc_upgrade: { required_plan: null, binding_limit: { kind: 'context', limit: 131_072 } },
    })
  })
})

describe('chat worker: x-ratelimit headers on refusals', () => {
  it('a 400 carries the current counters and is not counted', async () => {
    const who = identity('test', 'free')
    await call(who, hello)
    const { res } = await call(who, { ...hello, temperature: 3 })
    expect(res.status).toBe(400)
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('20')
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('19')
    const again = await call(who, { ...hello, temperature: 3 })
    expect(again.res.headers.get('x-ratelimit-remaining-requests')).toBe('19')
  })

  it('a 403 plan refusal carries them too, with x-should-retry: false', async () => {
    const { res } = await call(identity('test', 'free'), { ...hello, model: 'svc-hive' })
    expect(res.status).toBe(403)
    expect(res.headers.get('x-should-retry')).toBe('false')
    expect(res.headers.get('x-ratelimit-limit-tokens')).toBe('40000')
  })
})
