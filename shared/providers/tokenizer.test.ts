import { describe, expect, it } from 'vitest'
import type { ChatFunctionTool, ProviderChatMessage } from './chat-wire'
import {
  countPromptTokens,
  countTextTokens,
  MAX_COUNTED_RUN,
  splitByTokens,
  truncateToTokens,
} from './tokenizer'
import { countTokens, encode } from './tokenizer-o200k'

describe('tokenizer (o200k_base)', () => {
  it('counts known strings like tiktoken does', () => {
    expect(countTextTokens('hello world')).toBe(2)
    // OpenAI cookbook, o200k_base: 8 tokens.
    expect(countTextTokens('お誕生日おめでとう')).toBe(8)
    expect(countTextTokens('')).toBe(0)
  })

  it('counts special-token markers typed by users as plain text instead of throwing', () => {
    expect(countTextTokens('a <|endoftext|> b')).toBeGreaterThan(3)
  })

  it('matches the prompt tokens the OpenAI API reported for the cookbook conversation (gpt-4o: 124)', () => {
    const messages: ProviderChatMessage[] = [
      {
        role: 'system',
        content:
          'You are a helpful, pattern-following assistant that translates corporate jargon into plain English.',
      },
      { role: 'system', name: 'example_user', content: 'New synergies will help drive top-line growth.' },
      {
        role: 'system',
        name: 'example_assistant',
        content: 'Things working well together will increase revenue.',
      },
      {
        role: 'system',
        name: 'example_user',
        content:
          "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.",
      },
      {
        role: 'system',
        name: 'example_assistant',
        content: "Let's talk later when we're less busy about how to do better.",
      },
      {
        role: 'user',
        content: "This late pivot means we don't have time to boil the ocean for the client deliverable.",
      },
    ]
    expect(countPromptTokens(messages)).toBe(124)
  })

  it('matches the prompt tokens the OpenAI API reported for the cookbook tool request (gpt-4o: 101)', () => {
    const tools: ChatFunctionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_current_weather',
          description: 'Get the current weather in a given location',
          parameters: {
            type: 'object',
            properties: {
              location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' },
              unit: {
                type: 'string',
                description: 'The unit of temperature to return',
                enum: ['celsius', 'fahrenheit'],
              },
            },
            required: ['location'],
          },
        },
      },
    ]
    const messages: ProviderChatMessage[] = [
      {
        role: 'system',
        content: 'You are a helpful assistant that can answer to questions about the weather.',
      },
      { role: 'user', content: "What's the weather like in San Francisco?" },
    ]
    expect(countPromptTokens(messages, tools)).toBe(101)
  })

  it('counts text parts of array content and a fixed price per image', () => {
    const asString = countPromptTokens([{ role: 'user', content: 'hello world' }])
    const asParts = countPromptTokens([{ role: 'user', content: [{ type: 'text', text: 'hello world' }] }])
    expect(asParts).toBe(asString)
    const withImage = countPromptTokens([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'hello world' },
          { type: 'image_url', image_url: { url: 'x' } },
        ],
      },
    ])
    expect(withImage - asString).toBe(85)
  })

  it('truncates and splits on token boundaries without losing text', () => {
    const text = 'The quick brown fox jumps over the lazy dog. お誕生日おめでとう'
    expect(countTextTokens(truncateToTokens(text, 5))).toBe(5)
    expect(truncateToTokens(text, 1000)).toBe(text)
    const pieces = splitByTokens(text, 3)
    expect(pieces.length).toBeGreaterThan(3)
    expect(pieces.join('')).toBe(text)
    expect(pieces.some((p) => p.includes('\uFFFD'))).toBe(false)
  })

  it('never cuts a character that is several tokens in two', () => {
    // '🫠' is three tokens; ' 🫠' two, the first holding the space and the character's first bytes.
    expect(encode('🫠')).toHaveLength(3)
    expect(truncateToTokens('ok 🫠🫠', 2)).toBe('ok ')
    expect(truncateToTokens('ok 🫠🫠', 4)).toBe('ok 🫠')
    expect(truncateToTokens('🫠', 2)).toBe('')
    const pieces = splitByTokens('🫠 x 🫠🫠', 1)
    expect(pieces.join('')).toBe('🫠 x 🫠🫠')
    expect(pieces.some((p) => p.includes('\uFFFD'))).toBe(false)
    expect(pieces).toContain('🫠')
  })
})

describe('countTextTokens on long runs without spaces', () => {
  it('counts prose exactly as the encoding does', () => {
    const prose = 'The quick brown fox jumps over the lazy dog. '.repeat(200)
    expect(countTextTokens(prose)).toBe(countTokens(prose))
  })

  it('counts a 200,000-letter run in slices instead of one quadratic merge (whole: minutes)', () => {
    const run = 'ACGT'.repeat(50_000)
    const sliced = countTextTokens(`sequence: ${run} end`)
    let expected = countTokens('sequence: ') + countTokens(' end')
    for (let at = 0; at < run.length; at += MAX_COUNTED_RUN) {
      expected += countTokens(run.slice(at, at + MAX_COUNTED_RUN))
    }
    expect(sliced).toBe(expected)
  })

  it('never cuts a surrogate pair at a slice boundary', () => {
    const text = `a${'😀'.repeat(200)}`
    const cut = MAX_COUNTED_RUN - 1 // index 256 is the second half of a pair
    expect(countTextTokens(text)).toBe(countTokens(text.slice(0, cut)) + countTokens(text.slice(cut)))
  })
})
