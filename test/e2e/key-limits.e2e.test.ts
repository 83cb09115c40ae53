/**
 * Per-key limits end to end (issue 29; docs/plans.md, "Per-key limits"), through the gateway of a
 * stack started as `npm start` starts it: a key whose spend limit is worth about 20 requests takes
 * 64 at once, for JSON and streamed chat and for agent turns, in test and live mode, and never
 * spends more than its limit — by the client's own record of what it received and by the key's
 * `spend`; its refusals carry the action-required body. A model outside the key's list is 403, the
 * key's own rate is 429, and a PATCH is met by the key's next request.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { describe, expect, it } from 'vitest'
import { turnOutputBudget } from '../../durable-objects/agent-run/agent-settings.ts'
import { modelEntry } from '../../shared/catalog/model-catalog.ts'
import { listCostUnits, worstCaseCostUnits } from '../../shared/metering/key-spend.ts'
import { PLAN_CATALOG } from '../../shared/plans/plan-catalog.ts'
import { countPromptTokens } from '../../shared/providers/tokenizer.ts'
import { readSse } from './chat-fixtures.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack({ plan: 'team' })
const url = (p: string) => `${stack.baseUrl}${p}`
const ADMIN = stack.tenantA.liveKey
const MAX_TOKENS = 48

interface KeyView {
  id: string
  key?: string
  allowed_models: string[] | null
  spend_limit: { amount_usd: number; period: string } | null
  rate_limit: Record<string, number> | null
  spend: {
    period: string
    amount_usd: number
    used_usd: number
    remaining_usd: number
    resets_at: string | null
  } | null
}

interface Usage {
  prompt_tokens: number
  completion_tokens: number
  prompt_tokens_details?: { cached_tokens?: number | null } | null
}

async function api(credential: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(url(path), {
    method,
    headers: {
      authorization: `Bearer ${credential}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
}

async function createKey(mode: 'test' | 'live', limits: Record<string, unknown>): Promise<KeyView> {
  const res = await api(ADMIN, 'POST', '/platform/v1/api-keys', { name: `limits ${mode}`, mode, ...limits })
  expect(res.status, await res.clone().text()).toBe(201)
  return (await res.json()) as KeyView
}

const readKey = async (id: string) =>
  (await (await api(ADMIN, 'GET', `/platform/v1/api-keys/${id}`)).json()) as KeyView

/** The key's spend once every admitted request is in Postgres (the RateLimiter flushes within about a second). */
async function settledSpend(id: string, expectedUnits?: number): Promise<KeyView['spend']> {
  let last: KeyView['spend'] = null
  for (let i = 0; i < 60; i++) {
    last = (await readKey(id)).spend
    const used = Math.round((last?.used_usd ?? 0) * 1e6)
    if (expectedUnits === undefined ? i >= 4 : used === expectedUnits) return last
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return last
}

const messages = (text: string) => [{ role: 'user' as const, content: text }]
const costOf = (model: 'svc-cell' | 'svc-comb', usage: Usage) =>
  listCostUnits(PLAN_CATALOG, {
    model,
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    quantity: usage.prompt_tokens + usage.completion_tokens,
  })

/** The refusal of a spent key: 402 overage_cap_reached, a credits limit in cents, the key's page. */
async function expectSpentRefusal(res: Response, keyId: string): Promise<void> {
  expect(res.status).toBe(402)
  const body = (await res.json()) as {
    error: { code: string; message: string }
    svc_upgrade: {
      reason: string
      binding_limit: Record<string, unknown>
      actions: { kind: string; url: string | null; available: boolean }[]
    }
  }
  expect(body.error.code).toBe('overage_cap_reached')
  expect(body.error.message).toContain("This API key's spend limit is reached")
  expect(body.svc_upgrade.reason).toBe('overage_cap_reached')
  expect(body.svc_upgrade.binding_limit).toMatchObject({ kind: 'credits', unit: 'cents' })
  for (const field of ['used', 'limit', 'remaining'])
    expect(typeof body.svc_upgrade.binding_limit[field]).toBe('number')
  expect(body.svc_upgrade.binding_limit).toHaveProperty('resets_at')
  expect(body.svc_upgrade.actions[0]).toMatchObject({ kind: 'manage_spend_cap', available: true })
  expect(body.svc_upgrade.actions[0]?.url).toMatch(new RegExp(`/api-keys/${keyId}$`))
}

describe.each(['test', 'live'] as const)('a key with a spend limit worth ~20 requests (%s mode)', (mode) => {
  const text = `How many legs has a bee? ${mode}`
  const worst = worstCaseCostUnits(
    PLAN_CATALOG,
    'svc-cell',
    countPromptTokens(messages(text), undefined) + MAX_TOKENS,
    undefined,
  )
  const limitUnits = 20 * worst

  for (const stream of [false, true]) {
    it(`64 concurrent ${stream ? 'streamed' : 'JSON'} completions never spend more than the limit`, async () => {
      const key = await createKey(mode, { spend_limit: { amount_usd: limitUnits / 1e6, period: 'day' } })
      expect(key.spend).toMatchObject({ period: 'day', used_usd: 0, remaining_usd: limitUnits / 1e6 })
      const body = {
        model: 'svc-cell',
        messages: messages(text),
        max_tokens: MAX_TOKENS,
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      }
      const responses = await Promise.all(
        Array.from({ length: 64 }, () => api(key.key!, 'POST', '/svc/chat/completions', body)),
      )
      let received = 0
      let served = 0
      for (const res of responses) {
        if (res.status === 402) {
          await expectSpentRefusal(res, key.id)
          continue
        }
        expect(res.status, await res.clone().text()).toBe(200)
        served += 1
        const usage = stream
          ? ((await readSse(res)).events.at(-1)?.usage as Usage)
          : ((await res.json()) as { usage: Usage }).usage
        received += costOf('svc-cell', usage)
      }
      expect(served).toBeGreaterThanOrEqual(20)
      expect(served).toBeLessThan(64)
      // The client's own record of what it received, and the key's spend: equal, within the limit.
      expect(received).toBeLessThanOrEqual(limitUnits)
      const spend = await settledSpend(key.id, received)
      expect(Math.round((spend?.used_usd ?? 0) * 1e6)).toBe(received)
      expect(spend?.remaining_usd).toBeCloseTo((limitUnits - received) / 1e6, 6)
    })
  }

  it('64 concurrent agent turns never spend more than the limit', async () => {
    const turnWorst = worstCaseCostUnits(
      PLAN_CATALOG,
      'svc-comb',
      turnOutputBudget(undefined, modelEntry('svc-comb').max_output_length) + 500,
      undefined,
    )
    const turnLimit = 20 * turnWorst
    const key = await createKey(mode, { spend_limit: { amount_usd: turnLimit / 1e6, period: 'month' } })
    const responses = await Promise.all(
      Array.from({ length: 64 }, () =>
        api(key.key!, 'POST', '/svc/code/v1/turns', {
          protocol: 'svc.code.v1',
          session_id: 'key-limits',
          run_id: crypto.randomUUID(),
          turn_id: 'turn-1',
          model: 'svc-comb',
          mode: 'plan',
          request: 'Say hello',
          workspace: {},
          transcript: [],
          capabilities: {},
        }),
      ),
    )
    let served = 0
    for (const res of responses) {
      if (res.status === 402) {
        await expectSpentRefusal(res, key.id)
        continue
      }
      expect(res.status, await res.clone().text()).toBe(200)
      served += 1
      await res.text()
    }
    expect(served).toBeGreaterThan(0)
    expect(served).toBeLessThan(64)
    const spend = await settledSpend(key.id)
    expect(spend!.used_usd * 1e6).toBeLessThanOrEqual(turnLimit)
  })
})

describe('a key limited to some models, and to its own rate', () => {
  it('a model outside allowed_models is 403 model_access_required, for chat and agent turns', async () => {
    const key = await createKey('test', { allowed_models: ['svc-cell'] })
    expect(key.allowed_models).toEqual(['svc-cell'])
    const ok = await api(key.key!, 'POST', '/svc/chat/completions', {
      model: 'svc-cell',
      messages: messages('hi'),
    })
    expect(ok.status).toBe(200)
    const refused = await api(key.key!, 'POST', '/svc/chat/completions', {
      model: 'svc-brood',
      messages: messages('hi'),
    })
    expect(refused.status).toBe(403)
    const body = (await refused.json()) as { error: { code: string; message: string }; svc_upgrade: unknown }
    expect(body.error.code).toBe('model_access_required')
    expect(body.error.message).toContain("not in the key's allowed_models")
    expect(body.svc_upgrade).toMatchObject({ reason: 'model_access_required', requested_model: 'svc-brood' })
    const turn = await api(key.key!, 'POST', '/svc/code/v1/turns', {
      protocol: 'svc.code.v1',
      session_id: 'key-limits',
      run_id: crypto.randomUUID(),
      turn_id: 'turn-1',
      model: 'svc-comb',
      mode: 'plan',
      request: 'Say hello',
      workspace: {},
      transcript: [],
      capabilities: {},
    })
    expect(turn.status).toBe(403)
    expect(((await turn.json()) as { error: { code: string } }).error.code).toBe('model_access_required')
  })

  it("the key's requests per minute: 429 rate_limited with Retry-After and the key's x-ratelimit-* figures", async () => {
    const key = await createKey('test', { rate_limit: { requests_per_minute: 3 } })
    const send = () =>
      api(key.key!, 'POST', '/svc/chat/completions', { model: 'svc-cell', messages: messages('hi') })
    for (let i = 0; i < 3; i++) {
      const res = await send()
      expect(res.status).toBe(200)
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('3')
      expect(res.headers.get('x-ratelimit-remaining-requests')).toBe(String(2 - i))
    }
    const refused = await send()
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(refused.headers.get('x-ratelimit-limit-requests')).toBe('3')
    const body = (await refused.json()) as {
      error: { code: string }
      svc_upgrade: { binding_limit: { retry_after_seconds: number; limit: number } }
    }
    expect(body.error.code).toBe('rate_limited')
    expect(body.svc_upgrade.binding_limit.limit).toBe(3)
    expect(body.svc_upgrade.binding_limit.retry_after_seconds).toBeGreaterThan(0)
  })

  it("a rate above the plan's is refused; a PATCH takes effect on the key's next request", async () => {
    const tooFast = await api(ADMIN, 'POST', '/platform/v1/api-keys', {
      name: 'too fast',
      mode: 'test',
      rate_limit: { requests_per_minute: 1_000_000 },
    })
    expect(tooFast.status).toBe(400)
    const key = await createKey('test', { spend_limit: { amount_usd: 0.000001, period: 'total' } })
    const send = () =>
      api(key.key!, 'POST', '/svc/chat/completions', { model: 'svc-cell', messages: messages('hi') })
    await expectSpentRefusal(await send(), key.id)
    const patched = await api(ADMIN, 'PATCH', `/platform/v1/api-keys/${key.id}`, {
      spend_limit: { amount_usd: 5, period: 'week' },
      allowed_models: ['svc-cell'],
    })
    expect(patched.status).toBe(200)
    expect(((await patched.json()) as KeyView).spend).toMatchObject({ period: 'week', amount_usd: 5 })
    expect((await send()).status).toBe(200)
    const removed = await api(ADMIN, 'PATCH', `/platform/v1/api-keys/${key.id}`, { spend_limit: null })
    expect(((await removed.json()) as KeyView).spend).toBeNull()
  })

  it('an MCP tool call on a spent key is a tool error naming the limit; on another model, the model list', async () => {
    const key = await createKey('test', {
      allowed_models: ['svc-cell'],
      spend_limit: { amount_usd: 0.000001, period: 'month' },
    })
    const client = new Client({ name: 'key-limits-e2e', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url('/mcp')), {
        requestInit: { headers: { authorization: `Bearer ${key.key}` } },
      }),
    )
    try {
      const spent = (await client.callTool({
        name: 'chat_completion',
        arguments: { model: 'svc-cell', prompt: 'hi', max_tokens: 8 },
      })) as { isError?: boolean; content: { text?: string }[] }
      expect(spent.isError).toBe(true)
      expect(spent.content[0]?.text).toContain("This API key's spend limit is reached")
      expect(spent.content[0]?.text).toContain('overage_cap_reached')
      const otherModel = (await client.callTool({
        name: 'chat_completion',
        arguments: { model: 'svc-brood', prompt: 'hi' },
      })) as { isError?: boolean; content: { text?: string }[] }
      expect(otherModel.isError).toBe(true)
      expect(otherModel.content[0]?.text).toContain('model_access_required')
    } finally {
      await client.close()
    }
  })
})
