/**
 * The official `openai` npm SDK pointed at the local stack: what a developer does first.
 */
import OpenAI, { APIError, PermissionDeniedError, RateLimitError } from 'openai'
import type { ChatCompletionChunk, ChatCompletionTool } from 'openai/resources/chat/completions'
import { beforeAll, describe, expect, it } from 'vitest'
import type { UpgradeDecision } from '../../shared/plans/upgrade-decision.ts'
import { createWorkspace, stack, tag, upstream, type Workspace } from './chat-fixtures.ts'

const client = (apiKey: string, options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
  new OpenAI({ apiKey, baseURL: `${stack.baseUrl}/svc`, ...options })

const weatherTool: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
      required: ['city'],
    },
  },
}

let team: Workspace
beforeAll(async () => {
  team = await createWorkspace('team')
})

describe(`openai SDK: completions (${stack.kind})`, () => {
  it('create with a live key: the configured upstream answers, model is the alias, the request id comes back', async () => {
    const t = tag()
    const { data, request_id, response } = await client(team.liveKey)
      .chat.completions.create({ model: 'svc-cell', messages: [{ role: 'user', content: `Hello ${t}` }] })
      .withResponse()
    expect(data.object).toBe('chat.completion')
    expect(data.model).toBe('svc-cell')
    expect(data.choices[0]?.message.content).toBe(`Fake upstream fake-cell reply: Hello ${t}`)
    expect(data.choices[0]?.finish_reason).toBe('stop')
    expect(data.usage?.total_tokens).toBe(
      (data.usage?.prompt_tokens ?? 0) + (data.usage?.completion_tokens ?? 0),
    )
    expect(request_id).toMatch(/^req_/)
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('600')
    const [seen] = await upstream.requests(t)
    expect(seen?.body).toMatchObject({ model: 'fake-cell' })
    expect(seen?.headers['x-client-request-id']).toBe(request_id)
  })

  it('create with a test key: the simulated model answers and nothing reaches the upstream', async () => {
    const t = tag()
    const completion = await client(team.testKey).chat.completions.create({
      model: 'svc-comb',
      messages: [{ role: 'user', content: `Summarise this ${t}` }],
    })
    expect(completion.choices[0]?.message.content).toMatch(
      /^Test mode reply from svc-comb\. You wrote: "Summarise this/,
    )
    expect(completion.system_fingerprint).toBe('fp_svc_test_mode')
    expect(await upstream.requests(t)).toEqual([])
  })

  it('stream with the async iterator: one id and created on every chunk, finish_reason, usage when asked', async () => {
    const t = tag()
    const stream = await client(team.liveKey).chat.completions.create({
      model: 'svc-cell',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: `Stream please ${t}` }],
    })
    const chunks: ChatCompletionChunk[] = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
    expect(new Set(chunks.map((c) => c.created)).size).toBe(1)
    expect(chunks.every((c) => c.model === 'svc-cell' && c.object === 'chat.completion.chunk')).toBe(true)
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')
    expect(text).toBe(`Fake upstream fake-cell reply: Stream please ${t}`)
    const usageChunk = chunks.at(-1)!
    expect(usageChunk.choices).toEqual([])
    expect(usageChunk.usage?.completion_tokens).toBeGreaterThan(0)
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop')
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true)
  })

  it('stream helper: the final completion equals what a non-streamed call returns', async () => {
    const t = tag()
    const messages = [{ role: 'user' as const, content: `Same answer either way ${t}` }]
    const stream = client(team.testKey).chat.completions.stream({ model: 'svc-cell', messages, seed: 7 })
    let deltas = ''
    stream.on('content', (delta) => {
      deltas += delta
    })
    const final = await stream.finalChatCompletion()
    const direct = await client(team.testKey).chat.completions.create({
      model: 'svc-cell',
      messages,
      seed: 7,
    })
    expect(final.choices[0]?.message.content).toBe(direct.choices[0]?.message.content)
    expect(deltas).toBe(direct.choices[0]?.message.content)
    expect(final.choices[0]?.finish_reason).toBe('stop')
  })
})

describe(`openai SDK: tool calls (${stack.kind})`, () => {
  it.each([
    ['live', () => team.liveKey],
    ['test', () => team.testKey],
  ])('non-streamed tool call (%s key)', async (_mode, key) => {
    const completion = await client(key()).chat.completions.create({
      model: 'svc-cell',
      tools: [weatherTool],
      messages: [{ role: 'user', content: `Call get_weather for Oslo ${tag()}` }],
    })
    const choice = completion.choices[0]!
    expect(choice.finish_reason).toBe('tool_calls')
    const call = choice.message.tool_calls?.[0]
    expect(call?.type).toBe('function')
    if (call?.type !== 'function') return
    expect(call.id).toMatch(/^call_/)
    expect(call.function.name).toBe('get_weather')
    expect(JSON.parse(call.function.arguments)).toBeTypeOf('object')
  })

  it.each([
    ['live', () => team.liveKey],
    ['test', () => team.testKey],
  ])('streamed tool call deltas carry index, then id/type/name first (%s key)', async (_mode, key) => {
    const stream = client(key()).chat.completions.stream({
      model: 'svc-cell',
      tools: [weatherTool],
      tool_choice: 'required',
      messages: [{ role: 'user', content: `What is the weather in Oslo? ${tag()}` }],
    })
    const fragments: NonNullable<ChatCompletionChunk['choices'][number]['delta']['tool_calls']> = []
    stream.on('chunk', (chunk) => fragments.push(...(chunk.choices[0]?.delta.tool_calls ?? [])))
    const final = await stream.finalChatCompletion()
    expect(fragments.length).toBeGreaterThan(1)
    expect(fragments.every((f) => f.index === 0)).toBe(true)
    expect(fragments[0]).toMatchObject({ type: 'function', function: { name: 'get_weather', arguments: '' } })
    expect(fragments[0]?.id).toMatch(/^call_/)
    const call = final.choices[0]?.message.tool_calls?.[0]
    expect(final.choices[0]?.finish_reason).toBe('tool_calls')
    if (call?.type !== 'function') throw new Error('expected a function call')
    expect(call.function.arguments).toBe(fragments.map((f) => f.function?.arguments ?? '').join(''))
    expect(JSON.parse(call.function.arguments)).toBeTypeOf('object')
  })
})

describe(`openai SDK: errors (${stack.kind})`, () => {
  it('a validation error arrives as APIError 400 with code, param and the request id', async () => {
    const err = await client(team.testKey)
      .chat.completions.create({
        model: 'svc-cell',
        temperature: 3.5,
        messages: [{ role: 'user', content: 'x' }],
      })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(APIError)
    const apiError = err as APIError
    expect(apiError.status).toBe(400)
    expect(apiError.code).toBe('invalid_request_body')
    expect(apiError.param).toBe('temperature')
    expect(apiError.message).toContain('temperature must be between 0 and 2 (got 3.5)')
    expect(apiError.requestID).toMatch(/^req_/)
    expect(apiError.headers?.get('x-ratelimit-limit-requests')).toBe('600')
  })

  it('a plan refusal is a PermissionDeniedError whose code is the reason and whose message says what to do', async () => {
    const free = await createWorkspace('free')
    const err = await client(free.liveKey)
      .chat.completions.create({ model: 'svc-hive', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PermissionDeniedError)
    const apiError = err as PermissionDeniedError
    expect(apiError.code).toBe('model_access_required')
    expect(apiError.param).toBe('model')
    expect(apiError.message).toMatch(/svc-hive is not included in the Free plan.*upgrade to the team plan/)
  })

  it('does not retry an exhausted allowance (x-should-retry: false), but the error says when it resets', async () => {
    const exhausted = await createWorkspace('free', { tokensUsed: 200_000 })
    let calls = 0
    const counting: typeof fetch = (input, init) => {
      calls += 1
      return fetch(input, init)
    }
    const err = await client(exhausted.liveKey, { fetch: counting, maxRetries: 2 })
      .chat.completions.create({ model: 'svc-cell', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RateLimitError)
    const apiError = err as RateLimitError
    expect(calls).toBe(1)
    expect(apiError.code).toBe('token_allowance_exhausted')
    expect(apiError.headers?.get('x-should-retry')).toBe('false')
    expect(apiError.message).toMatch(
      /monthly token allowance is used up \(200000 of 200000 tokens\); it resets at/,
    )
  })

  it("a transient rate limit is retryable: Retry-After within the SDK's 60 s and no x-should-retry", async () => {
    const free = await createWorkspace('free')
    const sdk = client(free.testKey, { maxRetries: 0 })
    await Promise.all(
      Array.from({ length: 20 }, () =>
        sdk.chat.completions.create({ model: 'svc-cell', messages: [{ role: 'user', content: 'fill' }] }),
      ),
    )
    const err = await sdk.chat.completions
      .create({ model: 'svc-cell', messages: [{ role: 'user', content: 'one more' }] })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RateLimitError)
    const apiError = err as RateLimitError
    expect(apiError.code).toBe('rate_limited')
    expect(apiError.headers?.get('x-should-retry')).toBeNull()
    const retryAfter = Number(apiError.headers?.get('retry-after'))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(apiError.headers?.get('x-ratelimit-remaining-requests')).toBe('0')
  })
})

/** What the SDK keeps of a refusal by the plan: `error`, which carries the upgrade decision too. */
type SdkUpgradeError = APIError<number, Headers, { code: string; svc_upgrade: UpgradeDecision }>

async function sdkRefusal(call: () => Promise<unknown>): Promise<SdkUpgradeError> {
  const err = await call().then(
    () => {
      throw new Error('the request was not refused')
    },
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(APIError)
  return err as SdkUpgradeError
}

describe(`openai SDK: the upgrade decision is readable from the error object (${stack.kind})`, () => {
  const user = [{ role: 'user' as const, content: 'x' }]
  const turn = (model: string) => ({
    protocol: 'svc.code.v1',
    session_id: 'sdk',
    run_id: crypto.randomUUID(),
    turn_id: 'turn-1',
    model,
    mode: 'edit',
    request: 'Say hello',
    workspace: {},
    transcript: [],
    capabilities: {},
  })
  // 402: no funded credit left; 403: the model is not in the plan; 429: the allowance is used up.
  const refusals = [
    {
      status: 402,
      reason: 'insufficient_credits',
      plan: 'pro',
      preset: { tokensUsed: 5_000_000, usageCreditsEnabled: true, creditsCents: '0' },
      model: 'svc-cell',
    },
    { status: 403, reason: 'model_access_required', plan: 'free', model: 'svc-hive' },
    {
      status: 429,
      reason: 'token_allowance_exhausted',
      plan: 'free',
      preset: { tokensUsed: 200_000 },
      model: 'svc-cell',
    },
  ] as const

  it.each(refusals)('chat completions $status: err.error.svc_upgrade.reason is $reason', async (c) => {
    const workspace = await createWorkspace(c.plan, 'preset' in c ? c.preset : undefined)
    const err = await sdkRefusal(() =>
      client(workspace.liveKey, { maxRetries: 0 }).chat.completions.create({
        model: c.model,
        messages: user,
      }),
    )
    expect(err.status).toBe(c.status)
    expect(err.error.svc_upgrade.reason).toBe(c.reason)
    expect(err.error.svc_upgrade).toMatchObject({ schema_version: '2026-07-31', current_plan: c.plan })
    expect(err.code).toBe(c.reason)
  })

  it.each(refusals)('agent turns $status: err.error.svc_upgrade.reason is $reason', async (c) => {
    const workspace = await createWorkspace(c.plan, 'preset' in c ? c.preset : undefined)
    const err = await sdkRefusal(() =>
      client(workspace.liveKey, { maxRetries: 0 }).post('/code/v1/turns', { body: turn(c.model) }),
    )
    expect(err.status).toBe(c.status)
    expect(err.error.svc_upgrade.reason).toBe(c.reason)
    expect(err.error.svc_upgrade).toMatchObject({ schema_version: '2026-07-31', current_plan: c.plan })
  })

  it('the 402 message writes the reset time as ISO 8601 exactly', async () => {
    const workspace = await createWorkspace('pro', {
      tokensUsed: 5_000_000,
      usageCreditsEnabled: true,
      creditsCents: '1000',
      overageCents: '5000',
    })
    const err = await sdkRefusal(() =>
      client(workspace.liveKey, { maxRetries: 0 }).chat.completions.create({
        model: 'svc-cell',
        messages: user,
      }),
    )
    expect(err.status).toBe(402)
    expect(err.error.svc_upgrade.reason).toBe('overage_cap_reached')
    const resetsAt = err.error.svc_upgrade.binding_limit?.resets_at
    expect(resetsAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/)
    expect(err.message).toContain(`retry after ${resetsAt}`)
  })
})
