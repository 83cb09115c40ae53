import { describe, expect, it } from 'vitest'
import type { ChatFunctionTool, ProviderChatMessage } from './chat-wire'
import { countPromptTokens, countTextTokens, splitByTokens, truncateToTokens } from './tokenizer'

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
})
