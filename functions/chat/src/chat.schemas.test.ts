import { describe, expect, it } from 'vitest'
import { AppError } from '../../../shared/http/errors'
import type { ProviderChatRequest } from '../../../shared/providers/chat-wire'
import {
  type ChatCompletionRequest,
  ChatCompletionResponseSchema,
  parseChatCompletionRequest,
} from './chat.schemas'

const base = { model: 'svc-cell', messages: [{ role: 'user', content: 'Hello' }] }

function rejection(body: unknown): AppError {
  try {
    parseChatCompletionRequest(body)
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
  throw new Error('expected the body to be rejected')
}

describe('chat completion request schema', () => {
  it('accepts the minimal spec request and a full OpenAI-style one', () => {
    expect(parseChatCompletionRequest(base).messages).toHaveLength(1)
    const full = parseChatCompletionRequest({
      ...base,
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather?' },
            { type: 'image_url', image_url: { url: 'https://x/y.png' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          refusal: null,
          annotations: [],
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":3}' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 10,
      max_completion_tokens: 20,
      temperature: 0,
      top_p: 1,
      n: 2,
      seed: 7,
      stop: ['\n'],
      presence_penalty: -2,
      frequency_penalty: 2,
      logprobs: true,
      top_logprobs: 3,
      reasoning_effort: 'ultracode',
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' } } },
      user: 'u-1',
      metadata: { k: 'v' },
      some_future_field: 1,
    })
    expect(full.reasoning_effort).toBe('ultracode')
    // Echo-only fields and unknown top-level fields are dropped, never forwarded.
    expect(full.messages[2]).not.toHaveProperty('refusal')
    expect(full).not.toHaveProperty('some_future_field')
    // The validated request is what the provider layer consumes.
    const forProviders: ProviderChatRequest = full satisfies ChatCompletionRequest
    expect(forProviders.tools?.[0]?.function.name).toBe('get_weather')
  })

  it.each([
    [{ ...base, temperature: 3.5 }, 'temperature must be between 0 and 2 (got 3.5)', 'temperature'],
    [{ ...base, temperature: -0.1 }, 'temperature must be between 0 and 2 (got -0.1)', 'temperature'],
    [{ ...base, max_tokens: 0 }, 'max_tokens must be an integer >= 1 (got 0)', 'max_tokens'],
    [{ ...base, max_tokens: 2.5 }, 'max_tokens must be an integer >= 1 (got 2.5)', 'max_tokens'],
    [{ ...base, messages: [] }, 'messages must contain at least 1 message (got an empty array)', 'messages'],
    [{ model: 'svc-cell' }, 'messages is required', 'messages'],
    [
      { ...base, messages: [{ role: 'developer', content: 'x' }] },
      'messages[0].role must be one of system, user, assistant, tool (got "developer")',
      'messages[0].role',
    ],
    [
      { ...base, messages: [{ role: 'user', content: 42 }] },
      'messages[0].content must be a string or an array of content parts (got 42)',
      'messages[0].content',
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 5 }] }] },
      'messages[0].content[0].text must be a string (got 5)',
      'messages[0].content[0].text',
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'video', url: 'x' }] }] },
      'messages[0].content[0].type must be one of "text", "image_url", "input_audio", "file", "refusal" (got "video")',
      'messages[0].content[0].type',
    ],
    [{ ...base, messages: [{ role: 'user' }] }, 'messages[0].content is required', 'messages[0].content'],
    [
      { ...base, messages: [{ role: 'tool', content: 'r' }] },
      'messages[0].tool_call_id is required on tool messages',
      'messages[0].tool_call_id',
    ],
    [
      { ...base, reasoning_effort: 'extreme' },
      'reasoning_effort must be one of low, medium, high, xhigh, max, ultracode (got "extreme")',
      'reasoning_effort',
    ],
    [{ ...base, stream: 'yes' }, 'stream must be a boolean (true or false) (got "yes")', 'stream'],
    [
      { ...base, model: 'gpt-4o' },
      'model must be one of svc-cell, svc-brood, svc-comb, svc-buzz, svc-hive, svc-swarm (got "gpt-4o")',
      'model',
    ],
    [{ ...base, top_p: 2 }, 'top_p must be between 0 and 1 (got 2)', 'top_p'],
    [
      { ...base, tool_choice: 'auto' },
      'tool_choice is only allowed when tools are given (got "auto")',
      'tool_choice',
    ],
  ])('rejects %j with one precise 400', (body, message, param) => {
    const err = rejection(body)
    expect(err.status).toBe(400)
    expect(err.code).toBe('invalid_request_body')
    expect(err.message).toBe(message)
    expect(err.param).toBe(param)
  })

  it('rejects a body that is not an object', () => {
    const err = rejection([1, 2])
    expect(err.message).toBe('the request body must be a JSON object (got an array of 2 items)')
    expect(err.param).toBeNull()
  })
})

describe('chat completion response schema', () => {
  it('requires the six spec fields and allows extra top-level fields', () => {
    const ok = {
      id: 'c',
      object: 'chat.completion',
      created: 1,
      model: 'svc-cell',
      choices: [{}],
      usage: {},
      system_fingerprint: 'fp',
    }
    expect(ChatCompletionResponseSchema.parse(ok)).toMatchObject({ system_fingerprint: 'fp' })
    expect(ChatCompletionResponseSchema.safeParse({ ...ok, object: 'chat.completion.chunk' }).success).toBe(
      false,
    )
    const { usage: _usage, ...withoutUsage } = ok
    expect(ChatCompletionResponseSchema.safeParse(withoutUsage).success).toBe(false)
  })
})
