/**
 * The path decided by the validator generated from ChatCompletionRequestSchema
 * (scripts/generate-validators.ts) must give zod's answer: whenever it accepts a request, the
 * schema accepts it too and returns the same value; whatever it declines goes to zod. Several
 * hundred requests: each field valid and invalid, message shapes, tools, refinements.
 */
import { describe, expect, it } from 'vitest'
import { ChatCompletionRequestSchema, readClosedChatRequest as readCommonChatRequest } from './chat.schemas'

const base = { model: 'svc-cell', messages: [{ role: 'user', content: 'Hello' }] }

/** Values to try per top-level field (valid and invalid mixed). */
const FIELD_VALUES: Record<string, unknown[]> = {
  model: ['svc-cell', 'svc-swarm', 'gpt-4o', '', 7, null, ['svc-cell']],
  stream: [true, false, null, 'true', 1],
  stream_options: [
    null,
    {},
    { include_usage: true },
    { include_usage: false, include_obfuscation: true },
    { include_usage: 'yes' },
    { other: true },
    [],
    'x',
  ],
  max_tokens: [1, 32, 1e6, 0, -1, 1.5, '32', null, 2 ** 53],
  max_completion_tokens: [1, 4096, 0, 2.5, null, 'x'],
  temperature: [0, 0.7, 2, -0, 2.01, -0.1, null, '1', true],
  top_p: [0, 0.5, 1, 1.01, -1, null, 'x'],
  reasoning_effort: ['low', 'medium', 'high', 'xhigh', 'max', 'ultracode', 'none', null, 1],
  n: [1, 2, 128, 0, 129, 1.5, null, '2'],
  seed: [0, -5, 42, 1.5, null, '7', 2 ** 60],
  stop: [null, '\n', [], ['a', 'b', 'c', 'd'], ['a', 'b', 'c', 'd', 'e'], [1], {}, 3],
  presence_penalty: [-2, 0, 2, 2.5, -3, null, 'x'],
  frequency_penalty: [-2, 1.5, 2.1, null, false],
  logprobs: [true, false, null, 'true'],
  top_logprobs: [0, 5, 20, 21, -1, null, 1.5],
  user: ['', 'user-1', 'x'.repeat(256), 'x'.repeat(257), null, 5],
  tools: [
    [{ type: 'function', function: { name: 'f' } }],
    [{ type: 'function', function: { name: 'f', parameters: { type: 'object' }, strict: true } }],
    [{ type: 'function', function: { name: 'f g' } }],
    [],
  ],
  tool_choice: ['auto', 'none', 'required', { type: 'function', function: { name: 'f' } }, 'sometimes'],
  metadata: [
    { a: 'b' },
    null,
    Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v'])),
    Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])),
  ],
  logit_bias: [{ '42': 1 }, { '42': 101 }, null],
  response_format: [
    { type: 'json_object' },
    { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' } } },
    { type: 'yaml' },
  ],
  store: [true],
  __proto__: [],
}

const MESSAGES: unknown[] = [
  [],
  [{ role: 'user', content: 'Hi' }],
  [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: '' },
  ],
  [{ role: 'user', content: 'Hi', name: 'ada' }],
  [{ role: 'user', content: 'Hi', name: '' }],
  [{ role: 'user', content: 'Hi', name: 'x'.repeat(65) }],
  [{ role: 'user', content: 'Hi', name: 7 }],
  [{ role: 'user', content: [] }],
  [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ],
    },
  ],
  [{ role: 'user', content: [{ type: 'text', text: 1 }] }],
  [{ role: 'user', content: [{ type: 'text' }] }],
  [{ role: 'user', content: [{ type: 'text', text: 'a', extra: 1 }] }],
  [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }],
  [{ role: 'user', content: ['a'] }],
  [{ role: 'user', content: null }],
  [{ role: 'user' }],
  [{ role: 'user', content: 5 }],
  [{ role: 'user', content: {} }],
  [{ role: 'developer', content: 'Hi' }],
  [{ role: 'assistant', content: 'Sure.' }],
  [{ role: 'assistant', content: null, tool_calls: [] }],
  [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: '{"ok":true}' },
  ],
  [{ role: 'tool', content: 'x' }],
  [{ role: 'tool', content: 'x', tool_call_id: '' }],
  [{ role: 'tool', content: 'x', tool_call_id: 'c1' }],
  [{ role: 'user', content: 'x', tool_call_id: 'c1' }],
  [{ role: 'assistant', content: 'x', refusal: null }],
  [{ role: 'user', content: 'x', unknown: 1 }],
  [{ role: 'assistant', content: 'x', refusal: 'no', annotations: [] }],
  [{ role: 'user', content: 'x', name: '😀'.repeat(32) }],
  [{ role: 'user', content: 'x', name: '😀'.repeat(33) }],
  [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }],
  [{ role: 'user', content: [{ type: 'refusal', refusal: 'x' }] }],
  [
    {
      role: 'assistant',
      content: 'x',
      tool_calls: [{ id: 'c', type: 'function', function: { name: 'bad name', arguments: '' } }],
    },
  ],
  ['hello'],
  [null],
  'hello',
  { role: 'user', content: 'x' },
]

function samples(): unknown[] {
  const out: unknown[] = [base, {}, null, [], 'x', { messages: base.messages }, { model: 'svc-cell' }]
  for (const messages of MESSAGES) out.push({ ...base, messages })
  for (const [field, values] of Object.entries(FIELD_VALUES)) {
    for (const value of values) {
      const body: Record<string, unknown> = { ...base }
      Object.defineProperty(body, field, { value, enumerable: true, writable: true, configurable: true })
      out.push(body)
      out.push({ ...body, stream: true, stream_options: { include_usage: true }, temperature: 0.2 })
    }
  }
  // Pairs that interact (top_logprobs needs logprobs: true).
  out.push({ ...base, logprobs: true, top_logprobs: 3 }, { ...base, logprobs: false, top_logprobs: 3 })
  out.push({ ...base, logprobs: null, top_logprobs: null })
  const tools = [{ type: 'function', function: { name: 'f' } }]
  out.push({ ...base, tools, tool_choice: { type: 'function', function: { name: 'f' } } })
  out.push({ ...base, tools, tool_choice: { type: 'function', function: { name: 'g' } } })
  return out
}

describe('the generated chat request validator', () => {
  it('never accepts what zod refuses, and returns exactly what zod returns', () => {
    const all = samples()
    let accepted = 0
    for (const body of all) {
      const common = readCommonChatRequest(body)
      if (common === null) continue
      accepted++
      const parsed = ChatCompletionRequestSchema.safeParse(body)
      expect(parsed.success, JSON.stringify(body)).toBe(true)
      expect(common, JSON.stringify(body)).toStrictEqual(parsed.data)
    }
    expect(all.length).toBeGreaterThan(250)
    expect(accepted).toBeGreaterThan(100)
  })

  it('decides the requests clients send most: text chats with the usual options', () => {
    const common = [
      base,
      { model: 'svc-cell', messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 32 },
      {
        model: 'svc-hive',
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
          { role: 'assistant', content: 'Hello.' },
          { role: 'user', content: 'More.' },
        ],
        stream: true,
        stream_options: { include_usage: true },
        temperature: 0.7,
        top_p: 0.9,
        stop: ['\n\n'],
        user: 'u-1',
        reasoning_effort: 'high',
        seed: 3,
        n: 1,
      },
    ]
    for (const body of common) expect(readCommonChatRequest(body), JSON.stringify(body)).not.toBeNull()
  })

  it('decides tools and images too, and leaves unknown fields, metadata and every invalid value to zod', () => {
    expect(
      readCommonChatRequest({ ...base, tools: [{ type: 'function', function: { name: 'f' } }] }),
    ).not.toBeNull()
    expect(
      readCommonChatRequest({
        ...base,
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'u' } }] }],
      }),
    ).not.toBeNull()
    for (const body of [
      { ...base, metadata: { a: 'b' } },
      { ...base, store: true },
      { ...base, temperature: 3 },
      { ...base, messages: [] },
      { ...base, model: 'gpt-4o' },
    ])
      expect(readCommonChatRequest(body)).toBeNull()
  })
})
