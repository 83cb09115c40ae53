import { describe, expect, it } from 'vitest'
import { ChatCompletionChunkSchema, ChatCompletionSchema, WireUsageSchema } from './chat-wire'
import {
  isChatCompletion as looksLikeChatCompletion,
  isChatCompletionChunk as looksLikeChatCompletionChunk,
  isWireUsage as looksLikeWireUsage,
} from './chat-wire.validator.generated'
import { readChatCompletion, readChatCompletionChunk } from './wire-check'

const usage = {
  prompt_tokens: 19,
  completion_tokens: 10,
  total_tokens: 29,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
}
const completion = {
  id: 'chatcmpl-abc',
  object: 'chat.completion',
  created: 1741570283,
  model: 'gpt-4o-2024-08-06',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Hello!', refusal: null, annotations: [] },
      logprobs: null,
      finish_reason: 'stop',
    },
  ],
  usage,
  service_tier: 'default',
  system_fingerprint: 'fp_1',
}
const toolCompletion = {
  ...completion,
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
      },
      finish_reason: 'tool_calls',
    },
  ],
}
const chunk = {
  id: 'chatcmpl-abc',
  object: 'chat.completion.chunk',
  created: 1741570283,
  model: 'gpt-4o',
  choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
  usage: null,
}
const toolChunk = {
  ...chunk,
  choices: [
    {
      index: 0,
      delta: {
        tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }],
      },
      finish_reason: null,
    },
  ],
}
const usageChunk = { ...chunk, choices: [], usage }

/** Variants that change one thing; some valid for the schema, most not. */
function variants(base: Record<string, unknown>): unknown[] {
  const out: unknown[] = [null, 'text', [], 42, {}]
  for (const key of Object.keys(base)) {
    const { [key]: _dropped, ...without } = base
    out.push(without)
    for (const value of [null, undefined, '', 'x', -1, 1.5, 0, 2 ** 60, [], {}, [{}], true]) {
      out.push({ ...base, [key]: value })
    }
  }
  return out
}
const choiceVariants = (base: Record<string, unknown>, choice: Record<string, unknown>, inner: string) =>
  variants(choice)
    .concat(variants(choice[inner] as Record<string, unknown>).map((v) => ({ ...choice, [inner]: v })))
    .map((c) => ({ ...base, choices: [c] }))

describe('wire checks', () => {
  it('accept what providers send without zod', () => {
    expect(looksLikeChatCompletion(completion)).toBe(true)
    expect(looksLikeChatCompletion(toolCompletion)).toBe(true)
    expect(looksLikeChatCompletionChunk(chunk)).toBe(true)
    expect(looksLikeChatCompletionChunk(toolChunk)).toBe(true)
    expect(looksLikeChatCompletionChunk(usageChunk)).toBe(true)
  })

  it('the usage check accepts exactly what WireUsageSchema accepts among its variants', () => {
    const samples = [
      ...variants({ ...usage }),
      ...variants({ ...usage.prompt_tokens_details }).map((d) => ({ ...usage, prompt_tokens_details: d })),
      ...variants({ ...usage.completion_tokens_details }).map((d) => ({
        ...usage,
        completion_tokens_details: d,
      })),
    ]
    let accepted = 0
    for (const sample of samples) {
      const zod = WireUsageSchema.safeParse(sample).success
      expect(looksLikeWireUsage(sample), JSON.stringify(sample)).toBe(zod)
      if (zod) accepted++
    }
    expect(accepted).toBeGreaterThan(20)
  })

  it('never accept what the schemas refuse, and answer as the schemas do', () => {
    const completions = [
      ...variants(completion),
      ...variants({ ...usage }).map((u) => ({ ...completion, usage: u })),
      ...choiceVariants(completion, completion.choices[0]!, 'message'),
      ...choiceVariants(toolCompletion, toolCompletion.choices[0]!, 'message'),
    ]
    let refused = 0
    for (const sample of completions) {
      const zod = ChatCompletionSchema.safeParse(sample).success
      if (!zod) refused++
      if (looksLikeChatCompletion(sample)) expect(zod, JSON.stringify(sample)).toBe(true)
      expect(readChatCompletion(sample) !== null).toBe(zod)
    }
    const chunks = [
      ...variants(chunk),
      ...variants({ ...usage }).map((u) => ({ ...usageChunk, usage: u })),
      ...choiceVariants(chunk, chunk.choices[0]!, 'delta'),
      ...choiceVariants(toolChunk, toolChunk.choices[0]!, 'delta'),
    ]
    for (const sample of chunks) {
      const zod = ChatCompletionChunkSchema.safeParse(sample).success
      if (!zod) refused++
      if (looksLikeChatCompletionChunk(sample)) expect(zod, JSON.stringify(sample)).toBe(true)
      expect(readChatCompletionChunk(sample) !== null).toBe(zod)
    }
    expect(refused).toBeGreaterThan(100)
  })

  it('hand back the value itself, as zod would return an equal one', () => {
    expect(readChatCompletion(completion)).toBe(completion)
    expect(ChatCompletionSchema.parse(completion)).toEqual(completion)
    expect(readChatCompletionChunk(toolChunk)).toBe(toolChunk)
  })
})
