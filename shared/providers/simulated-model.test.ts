import { describe, expect, it } from 'vitest'
import { createChatCompletion } from './chat-completions'
import type { ProviderChatRequest } from './chat-wire'
import { chooseSimulatedTool, planSimulatedCompletion, simulateChatCompletion } from './simulated-model'
import { SseParser } from './sse'
import { countPromptTokens, countTextTokens } from './tokenizer'

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer', minimum: 1, maximum: 3 },
      },
      required: ['city'],
    },
  },
}
const ask = (content: string, extra: Partial<ProviderChatRequest> = {}): ProviderChatRequest => ({
  model: 'svc-cell',
  messages: [{ role: 'user', content }],
  ...extra,
})

async function sseEvents(response: Response): Promise<string[]> {
  const parser = new SseParser()
  const events: string[] = []
  const reader = response.body!.getReader()
  let reads = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    reads++
    for (const e of parser.pushBytes(value)) if (e.kind === 'data') events.push(e.data)
  }
  expect(reads).toBe(events.length) // one event per network chunk: really streamed in pieces
  return events
}

describe('simulated model (test mode)', () => {
  it('is deterministic: same request, same reply; a different seed, a different reply', async () => {
    const a = await planSimulatedCompletion(ask('Tell me a story about bees'), 'svc-cell')
    const b = await planSimulatedCompletion(
      ask('Tell me a story about bees', { user: 'someone', metadata: { x: '1' } }),
      'svc-cell',
    )
    const c = await planSimulatedCompletion(ask('Tell me a story about bees', { seed: 99 }), 'svc-cell')
    expect(b).toEqual(a)
    expect(a.choices[0]?.content).toContain('You wrote: "Tell me a story about bees"')
    expect(c.fingerprint).not.toBe(a.fingerprint)
  })

  it('answers like an OpenAI upstream in JSON, with usage counted by the tokenizer', async () => {
    const req = ask('Hello there')
    const body = (await (await simulateChatCompletion(req, { alias: 'svc-cell' })).json()) as {
      object: string
      model: string
      choices: { message: { content: string }; finish_reason: string }[]
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }
    }
    expect(body.object).toBe('chat.completion')
    expect(body.model).toBe('svc-cell')
    expect(body.choices[0]?.finish_reason).toBe('stop')
    const content = body.choices[0]?.message.content ?? ''
    expect(body.usage.prompt_tokens).toBe(countPromptTokens(req.messages))
    expect(body.usage.completion_tokens).toBe(countTextTokens(content))
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens)
  })

  it('streams the same text in several chunks, with usage only when asked', async () => {
    const req = ask('Hello there')
    const json = (await (await simulateChatCompletion(req, { alias: 'svc-cell' })).json()) as {
      choices: { message: { content: string } }[]
    }
    const events = await sseEvents(
      await simulateChatCompletion(
        { ...req, stream: true, stream_options: { include_usage: true } },
        { alias: 'svc-cell' },
      ),
    )
    expect(events.at(-1)).toBe('[DONE]')
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e))
    expect(chunks.length).toBeGreaterThan(4)
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '', refusal: null })
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')
    expect(text).toBe(json.choices[0]?.message.content)
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop')
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: countTextTokens(text) } })
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true)

    const withoutUsage = await sseEvents(
      await simulateChatCompletion({ ...req, stream: true }, { alias: 'svc-cell' }),
    )
    expect(withoutUsage.some((e) => e.includes('"usage"'))).toBe(false)
  })

  it('honours max_tokens with finish_reason "length"', async () => {
    const plan = await planSimulatedCompletion(ask('Hello', { max_tokens: 5 }), 'svc-cell')
    expect(plan.choices[0]?.finishReason).toBe('length')
    expect(countTextTokens(plan.choices[0]?.content ?? '')).toBe(5)
    expect(plan.usage.completionTokens).toBe(5)
  })

  it('reports reasoning tokens for reasoning_effort, inside the completion budget', async () => {
    const plan = await planSimulatedCompletion(
      ask('Hello', { reasoning_effort: 'low', max_completion_tokens: 20 }),
      'svc-cell',
    )
    expect(plan.usage.reasoningTokens).toBe(16)
    expect(plan.usage.completionTokens).toBe(20)
    expect(plan.choices[0]?.finishReason).toBe('length')
  })

  it('calls a tool when the user asks for it, and streams the call the way OpenAI does', async () => {
    const req = ask('What is the weather in Oslo? Use get_weather.', { tools: [weatherTool], stream: true })
    const events = await sseEvents(await simulateChatCompletion(req, { alias: 'svc-cell' }))
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e))
    const first = chunks[0].choices[0].delta
    expect(first.tool_calls).toEqual([
      {
        index: 0,
        id: expect.stringMatching(/^call_/),
        type: 'function',
        function: { name: 'get_weather', arguments: '' },
      },
    ])
    const fragments = chunks.slice(1, -1).map((c) => c.choices[0].delta.tool_calls[0])
    expect(fragments.length).toBeGreaterThan(1)
    expect(fragments.every((f) => f.index === 0 && f.id === undefined)).toBe(true)
    const args = JSON.parse(fragments.map((f) => f.function.arguments).join(''))
    expect(typeof args.city).toBe('string')
    expect(['celsius', 'fahrenheit']).toContain(args.unit)
    expect(args.days).toBeGreaterThanOrEqual(1)
    expect(args.days).toBeLessThanOrEqual(3)
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls')
  })

  it('documents its tool trigger: name or "call" or tool_choice; never after a tool result or with "none"', () => {
    const tools = [weatherTool, { type: 'function' as const, function: { name: 'send_mail' } }]
    expect(chooseSimulatedTool(ask('please send_mail to bob', { tools }))?.function.name).toBe('send_mail')
    expect(chooseSimulatedTool(ask('Call something useful', { tools }))?.function.name).toBe('get_weather')
    expect(chooseSimulatedTool(ask('hello', { tools }))).toBeNull()
    expect(chooseSimulatedTool(ask('hello', { tools, tool_choice: 'required' }))?.function.name).toBe(
      'get_weather',
    )
    expect(
      chooseSimulatedTool(
        ask('hello', { tools, tool_choice: { type: 'function', function: { name: 'send_mail' } } }),
      )?.function.name,
    ).toBe('send_mail')
    expect(chooseSimulatedTool(ask('call get_weather', { tools, tool_choice: 'none' }))).toBeNull()
    const afterResult: ProviderChatRequest = {
      model: 'svc-cell',
      tools,
      messages: [
        { role: 'user', content: 'call get_weather' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":3}' },
      ],
    }
    expect(chooseSimulatedTool(afterResult)).toBeNull()
  })

  it('returns JSON content for response_format json_schema', async () => {
    const plan = await planSimulatedCompletion(
      ask('give me a person', {
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'person',
            schema: { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } } },
          },
        },
      }),
      'svc-cell',
    )
    const value = JSON.parse(plan.choices[0]?.content ?? '')
    expect(typeof value.name).toBe('string')
    expect(Number.isInteger(value.age)).toBe(true)
  })

  it('runs through the same pipeline as live requests in test mode, without any provider configured', async () => {
    const result = await createChatCompletion({
      request: ask('Hi', { stream: true }),
      alias: 'svc-hive',
      mode: 'test',
      registry: null,
      env: {},
    })
    if (result.kind !== 'stream') throw new Error('expected a stream')
    expect(result.target.providerId).toBe('svc-test-mode')
    const text = await new Response(result.stream).text()
    expect(text).toContain('"model":"svc-hive"')
    expect(text).not.toContain('prompt_tokens') // client did not ask for usage
    const outcome = await result.outcome
    expect(outcome.status).toBe('completed')
    expect(outcome.usageSource).toBe('upstream')
    expect(outcome.usage.promptTokens).toBe(countPromptTokens([{ role: 'user', content: 'Hi' }]))
  })
})
