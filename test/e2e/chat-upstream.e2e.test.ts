/**
 * Chat completions against real (fake) upstreams: what reaches the provider, failover, retries,
 * timeouts, the circuit breaker, streams cut or abandoned, and the usage metered for each.
 * Faults are scripted per test through the fake's control endpoint (rules match a tag in the
 * message, so tests never see each other's faults).
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ChatCompletionResponseSchema } from '../../functions/chat/src/chat.schemas.ts'
import { unitsToCents, usageCostUnits } from '../../shared/metering/pricing.ts'
import { countPromptTokens, countTextTokens } from '../../shared/providers/tokenizer.ts'
import {
  balanceOf,
  chat,
  createWorkspace,
  readSse,
  stack,
  tag,
  upstream,
  type Workspace,
  waitForLedger,
} from './chat-fixtures.ts'

let team: Workspace
beforeAll(async () => {
  team = await createWorkspace('team')
})

const user = (content: string) => [{ role: 'user' as const, content }]
const routesOf = async (t: string) => (await upstream.requests(t)).map((r) => r.route)

/**
 * Breakers count consecutive failures per provider and model (threshold 4 in this stack): after a
 * test that failed primary or backup, one success on each closes the count again.
 */
async function healBreakers(): Promise<void> {
  const viaBackup = tag()
  await upstream.script({
    match: { contains: viaBackup, route: 'primary' },
    fault: { kind: 'status', status: 500 },
    times: 1,
  })
  expect((await chat(team.liveKey, { model: 'svc-brood', messages: user(`heal ${viaBackup}`) })).status).toBe(
    200,
  )
  const viaPrimary = tag()
  expect(
    (await chat(team.liveKey, { model: 'svc-brood', messages: user(`heal ${viaPrimary}`) })).status,
  ).toBe(200)
  expect(await routesOf(viaPrimary)).toEqual(['primary'])
}

describe(`chat upstream: what the provider receives (${stack.kind})`, () => {
  it('forwards the OpenAI fields with the upstream model name, drops unknown ones, and answers the spec shape', async () => {
    const t = tag()
    const res = await chat(team.liveKey, {
      model: 'svc-cell',
      messages: [{ role: 'system', content: 'Be brief.' }, ...user(`Fields ${t}`)],
      temperature: 0.2,
      top_p: 0.9,
      seed: 42,
      stop: ['\n\n'],
      presence_penalty: 0.5,
      logit_bias: { '50256': -100 },
      user: 'end-user-7',
      metadata: { team: 'ml' },
      response_format: { type: 'json_object' },
      not_an_openai_field: true,
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    const body = await res.json()
    expect(ChatCompletionResponseSchema.safeParse(body).success).toBe(true)
    expect(body.model).toBe('svc-cell')
    const [seen] = await upstream.requests(t)
    expect(seen?.body).toEqual({
      model: 'fake-cell',
      messages: [{ role: 'system', content: 'Be brief.' }, ...user(`Fields ${t}`)],
      temperature: 0.2,
      top_p: 0.9,
      seed: 42,
      stop: ['\n\n'],
      presence_penalty: 0.5,
      logit_bias: { '50256': -100 },
      user: 'end-user-7',
      metadata: { team: 'ml' },
      response_format: { type: 'json_object' },
    })
    expect(seen?.headers.authorization).toBe('present')
  })

  it('asks the upstream for stream usage, keeps it out of a stream that did not ask, and meters it exactly', async () => {
    const t = tag()
    const res = await chat(team.liveKey, { model: 'svc-cell', stream: true, messages: user(`Usage ${t}`) })
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const requestId = res.headers.get('x-request-id')!
    const sse = await readSse(res)
    expect(sse.done).toBe(true)
    expect(sse.events.every((e) => !('usage' in e))).toBe(true)
    expect(sse.events.every((e) => (e.choices as unknown[]).length > 0)).toBe(true)
    const [seen] = await upstream.requests(t)
    expect(seen?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } })
    const rows = await waitForLedger(team.tenantId, (r) => r.some((row) => row.request_id === requestId))
    const row = rows.find((r) => r.request_id === requestId)!
    expect(row).toMatchObject({ mode: 'live', model: 'svc-cell', provider: 'fake', estimated: false })
    const text = sse.events
      .map((e) => (e.choices as { delta: { content?: string } }[])[0]?.delta.content ?? '')
      .join('')
    expect(row.completion_tokens).toBe(countTextTokens(text))
    expect(row.prompt_tokens).toBe(countPromptTokens(user(`Usage ${t}`)))
  })
})

describe(`chat upstream: failover and retries (${stack.kind})`, () => {
  afterEach(healBreakers)

  it('fails over to the next provider on a 500', async () => {
    const t = tag()
    await upstream.script({
      match: { contains: t, route: 'primary' },
      fault: { kind: 'status', status: 500 },
    })
    const res = await chat(team.liveKey, { model: 'svc-brood', messages: user(`Failover ${t}`) })
    expect(res.status).toBe(200)
    expect((await res.json()).choices[0].message.content).toBe(
      `Fake upstream fake-brood reply: Failover ${t}`,
    )
    expect(await routesOf(t)).toEqual(['primary', 'backup'])
  })

  it('fails over when a provider cannot be reached at all (connection refused)', async () => {
    const t = tag()
    const res = await chat(team.liveKey, { model: 'svc-hive', messages: user(`Unreachable ${t}`) })
    expect(res.status).toBe(200)
    expect((await res.json()).choices[0].message.content).toBe(
      `Fake upstream fake-hive reply: Unreachable ${t}`,
    )
    expect(await routesOf(t)).toEqual([''])
  })

  it('fails over on a 429 whose Retry-After is longer than it is worth waiting', async () => {
    const t = tag()
    await upstream.script({
      match: { contains: t, route: 'primary' },
      fault: { kind: 'status', status: 429, retryAfter: '30' },
    })
    const res = await chat(team.liveKey, { model: 'svc-brood', messages: user(`Busy ${t}`) })
    expect(res.status).toBe(200)
    expect(await routesOf(t)).toEqual(['primary', 'backup'])
  })

  it('when every provider is briefly down, retries after the Retry-After the upstream asked for', async () => {
    const t = tag()
    await upstream.script({
      match: { contains: t, route: 'primary' },
      fault: { kind: 'status', status: 503 },
      times: 1,
    })
    await upstream.script({
      match: { contains: t, route: 'backup' },
      fault: { kind: 'status', status: 429, retryAfter: '1' },
      times: 1,
    })
    const started = Date.now()
    const res = await chat(team.liveKey, { model: 'svc-brood', messages: user(`Retry ${t}`) })
    expect(res.status).toBe(200)
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000)
    expect(await routesOf(t)).toEqual(['primary', 'backup', 'primary'])
  })

  it('fails over when a provider does not answer within its timeout', async () => {
    const t = tag()
    await upstream.script({ match: { contains: t, route: 'slow' }, fault: { kind: 'hang' } })
    const started = Date.now()
    const res = await chat(team.liveKey, { model: 'svc-buzz', messages: user(`Hang ${t}`) })
    const elapsed = Date.now() - started
    expect(res.status).toBe(200)
    expect(elapsed).toBeGreaterThanOrEqual(1_000)
    expect(elapsed).toBeLessThan(5_000)
    expect(await routesOf(t)).toEqual(['slow', 'backup'])
  })

  it('does not fail over on a 400 the client caused: the upstream message comes back with the alias', async () => {
    const t = tag()
    await upstream.script({
      match: { contains: t, route: 'primary' },
      fault: {
        kind: 'status',
        status: 400,
        body: {
          error: {
            message: 'fake-brood does not support this combination of parameters.',
            type: 'invalid_request_error',
            param: 'messages',
            code: 'invalid_value',
          },
        },
      },
    })
    const res = await chat(team.liveKey, { model: 'svc-brood', messages: user(`Bad ${t}`) })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({
      error: {
        message: 'svc-brood does not support this combination of parameters.',
        type: 'invalid_request_error',
        param: 'messages',
        code: 'invalid_value',
      },
    })
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('600')
    expect(await routesOf(t)).toEqual(['primary'])
  })

  it('answers 502 naming every provider and how it failed when all of them fail, with a bounded number of tries', async () => {
    const t = tag()
    await upstream.script({
      match: { contains: t, route: 'primary' },
      fault: { kind: 'status', status: 503 },
    })
    await upstream.script({ match: { contains: t, route: 'backup' }, fault: { kind: 'status', status: 500 } })
    const res = await chat(team.liveKey, { model: 'svc-brood', messages: user(`Down ${t}`) })
    expect(res.status).toBe(502)
    const { error } = await res.json()
    expect(error.code).toBe('upstream_unavailable')
    expect(error.message).toBe(
      'Every model provider for svc-brood failed: primary: HTTP 503 (2 attempts); backup: HTTP 500 (2 attempts). Retry the request later.',
    )
    expect(await routesOf(t)).toEqual(['primary', 'backup', 'primary', 'backup'])
    expect(res.headers.get('x-ratelimit-remaining-requests')).not.toBeNull()
    // Admitted, then failed: in the request log with its 502 and latency, nothing used or charged.
    const requestId = res.headers.get('x-request-id')
    const rows = await waitForLedger(team.tenantId, (r) => r.some((row) => row.request_id === requestId))
    expect(rows.find((row) => row.request_id === requestId)).toMatchObject({
      provider: 'none',
      prompt_tokens: 0,
      completion_tokens: 0,
      quantity: 0,
      credits_cents: '0.0000',
      estimated: false,
      status: 502,
    })
    expect(rows.find((row) => row.request_id === requestId)?.latency_ms).toBeGreaterThan(0)
    // The balance is still the sum of the rows (it moves in the transaction that inserts them).
    const live = rows.filter((r) => r.mode === 'live')
    const tokens = live.reduce((sum, r) => sum + r.prompt_tokens + r.completion_tokens, 0)
    expect(Number((await balanceOf(team.tenantId)).tokens_used)).toBe(tokens)
  })
})

describe(`chat upstream: circuit breaker (${stack.kind})`, () => {
  // The cool-down and the probe that closes the breaker again run on an injected clock in
  // shared/providers/upstream-client.test.ts; here, that the open breaker holds across requests.
  it('stops calling a provider after 4 consecutive failures', async () => {
    const t = tag()
    await upstream.script({ match: { contains: t, route: 'flaky' }, fault: { kind: 'status', status: 503 } })
    for (let i = 0; i < 4; i++) {
      const res = await chat(team.liveKey, { model: 'svc-comb', messages: user(`Breaker ${i} ${t}`) })
      expect(res.status).toBe(200)
    }
    expect(await routesOf(t)).toEqual([
      'flaky',
      'backup',
      'flaky',
      'backup',
      'flaky',
      'backup',
      'flaky',
      'backup',
    ])
    const skipped = tag()
    await upstream.script({
      match: { contains: skipped, route: 'flaky' },
      fault: { kind: 'status', status: 503 },
    })
    expect(
      (await chat(team.liveKey, { model: 'svc-comb', messages: user(`Open ${t} ${skipped}`) })).status,
    ).toBe(200)
    expect(await routesOf(skipped)).toEqual(['backup'])
  })
})

describe(`chat upstream: streams (${stack.kind})`, () => {
  it('a stream cut mid-way ends with an error event, no [DONE], and is metered by counting what was sent', async () => {
    const t = tag()
    const messages = user(`Please write a long enough answer for a cut ${t}`)
    await upstream.script({ match: { contains: t }, fault: { kind: 'cut', afterChunks: 4 } })
    const res = await chat(team.liveKey, { model: 'svc-cell', stream: true, messages })
    expect(res.status).toBe(200)
    const requestId = res.headers.get('x-request-id')!
    const sse = await readSse(res)
    expect(sse.done).toBe(false)
    const last = sse.events.at(-1) as { error: { code: string; type: string; message: string } }
    expect(last.error).toMatchObject({ code: 'upstream_stream_interrupted', type: 'upstream_error' })
    const chunks = sse.events.slice(0, -1) as { id: string; choices: { delta: { content?: string } }[] }[]
    expect(chunks).toHaveLength(4)
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
    const received = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')
    expect(received.length).toBeGreaterThan(0)
    const rows = await waitForLedger(team.tenantId, (r) => r.some((row) => row.request_id === requestId))
    expect(rows.find((r) => r.request_id === requestId)).toMatchObject({
      estimated: true,
      prompt_tokens: countPromptTokens(messages),
      completion_tokens: countTextTokens(received),
    })
  })

  it('does not fail over once bytes reached the client', async () => {
    const t = tag()
    await upstream.script({
      match: { contains: t, route: 'primary' },
      fault: { kind: 'cut', afterChunks: 2 },
    })
    const res = await chat(team.liveKey, {
      model: 'svc-brood',
      stream: true,
      messages: user(`No failover ${t}`),
    })
    const sse = await readSse(res)
    expect(sse.done).toBe(false)
    expect((sse.events.at(-1) as { error?: { code: string } }).error?.code).toBe(
      'upstream_stream_interrupted',
    )
    expect(await routesOf(t)).toEqual(['primary'])
    await healBreakers()
  })

  it('relays an error the upstream sends mid-stream as data: {"error":...}', async () => {
    const t = tag()
    await upstream.script({ match: { contains: t }, fault: { kind: 'error_event', afterChunks: 2 } })
    const sse = await readSse(
      await chat(team.liveKey, { model: 'svc-cell', stream: true, messages: user(`Err ${t}`) }),
    )
    expect(sse.done).toBe(false)
    expect(sse.events.at(-1)).toEqual({
      error: {
        message:
          'The model provider reported an error mid-stream: The server had an error while processing your request. Retry the request.',
        type: 'upstream_error',
        param: null,
        code: 'upstream_error',
      },
    })
  })

  it('a client that disconnects mid-stream aborts the upstream request, and what was streamed is metered', async () => {
    const t = tag()
    await upstream.script({ match: { contains: t }, fault: { kind: 'slow', delayMs: 300 } })
    const controller = new AbortController()
    const res = await chat(
      team.liveKey,
      { model: 'svc-cell', stream: true, messages: user(`Slow stream that the client abandons ${t}`) },
      {},
      { signal: controller.signal },
    )
    const requestId = res.headers.get('x-request-id')!
    const reader = res.body!.getReader()
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toContain('chat.completion.chunk')
    controller.abort()
    const deadline = Date.now() + 5_000
    let observed = await upstream.requests(t)
    while (!observed[0]?.closedEarly && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      observed = await upstream.requests(t)
    }
    expect(observed[0]?.closedEarly).toBe(true)
    const rows = await waitForLedger(team.tenantId, (r) => r.some((row) => row.request_id === requestId))
    expect(rows.find((r) => r.request_id === requestId)?.estimated).toBe(true)
  })
})

describe(`chat upstream: client disconnects (${stack.kind})`, () => {
  // The local runtime does not tell a worker that the client of a JSON request went away (the
  // request signal does not cross Miniflare's entry worker and service-binding RPC), so the
  // upstream answer is awaited. What a user must be able to rely on: it is metered, once.
  it('a client that gives up on a JSON request: the upstream answer is still metered under its request id', async () => {
    const t = tag()
    const requestId = `gave-up-${crypto.randomUUID()}`
    await upstream.script({ match: { contains: t }, fault: { kind: 'slow', delayMs: 1_000 } })
    const controller = new AbortController()
    const pending = chat(
      team.liveKey,
      { model: 'svc-cell', messages: user(`Slow JSON ${t}`) },
      { 'x-request-id': requestId },
      { signal: controller.signal },
    ).catch((err: unknown) => err)
    const deadline = Date.now() + 5_000
    while ((await upstream.requests(t)).length === 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50))
    controller.abort()
    expect(await pending).toBeInstanceOf(Error)
    const rows = await waitForLedger(team.tenantId, (r) => r.some((row) => row.request_id === requestId))
    expect(rows.filter((r) => r.request_id.startsWith(requestId))).toEqual([
      expect.objectContaining({ request_id: requestId, estimated: false, model: 'svc-cell' }),
    ])
  })
})

describe(`chat upstream: usage and credits (${stack.kind})`, () => {
  it('meters cached and reasoning tokens and bills overage beyond the allowance at the exact list price', async () => {
    const pro = await createWorkspace('pro', {
      tokensUsed: 5_000_000,
      usageCreditsEnabled: true,
      creditsCents: '1000',
    })
    const t = tag()
    await upstream.script({ match: { contains: t }, usage: { cached_tokens: 6, reasoning_tokens: 40 } })
    const res = await chat(pro.liveKey, { model: 'svc-cell', messages: user(`Overage ${t}`) })
    expect(res.status).toBe(200)
    const requestId = res.headers.get('x-request-id')!
    const { usage } = await res.json()
    expect(usage.prompt_tokens_details.cached_tokens).toBe(6)
    expect(usage.completion_tokens_details.reasoning_tokens).toBe(40)
    const expectedCents = unitsToCents(
      usageCostUnits('svc-cell', {
        promptTokens: usage.prompt_tokens,
        completionTokens: usage.completion_tokens,
        cachedTokens: 6,
      }),
    )
    const [row] = await waitForLedger(pro.tenantId, (r) => r.length === 1)
    expect(row).toMatchObject({
      request_id: requestId,
      cached_tokens: 6,
      reasoning_tokens: 40,
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      credits_cents: expectedCents,
      estimated: false,
    })
    expect(Number(expectedCents)).toBeGreaterThan(0)
    const balance = await balanceOf(pro.tenantId)
    expect(Number(balance.tokens_used)).toBe(5_000_000 + usage.total_tokens)
    expect(balance.overage_cents).toBe(expectedCents)
    expect(Number(balance.credits_balance_cents)).toBeCloseTo(1000 - Number(expectedCents), 4)
  })

  it('a live key gets 503 naming the missing configuration for an alias without a provider; a test key still works', async () => {
    const enterprise = await createWorkspace('enterprise')
    const res = await chat(enterprise.liveKey, { model: 'svc-swarm', messages: user('x') })
    expect(res.status).toBe(503)
    const { error } = await res.json()
    expect(error.code).toBe('provider_not_configured')
    expect(error.message).toContain('The operator must map svc-swarm to a provider in MODEL_PROVIDERS')
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('3000')
    const simulated = await chat(enterprise.testKey, { model: 'svc-swarm', messages: user('x') })
    expect(simulated.status).toBe(200)
  })
})
