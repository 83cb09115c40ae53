import { describe, expect, it } from 'vitest'
import { systemPrompt, toolsFor, transcriptMessages } from './model-prompt'
import { parseTurnRequest } from './turn.schemas'
import { turnSettingsOf } from './turn-settings'

function settings(overrides: Record<string, unknown> = {}, webSearch = true) {
  return turnSettingsOf(
    parseTurnRequest({
      protocol: 'svc.code.v1',
      session_id: 's',
      turn_id: 't',
      model: 'svc-comb',
      mode: 'plan',
      request: 'x',
      workspace: { root: 'project' },
      transcript: [],
      capabilities: {},
      ...overrides,
    }),
    { testMode: false, billingPlanId: 'team', webSearch, requestId: 'r' },
  )
}

describe('what the model is given', () => {
  it('offers the client tools, then web_search (when the billing plan has it) and update_plan', () => {
    const tool = {
      name: 'read_file',
      description: 'd',
      input_schema: { type: 'object' },
      tags: ['read-only'],
    }
    expect(toolsFor(settings({ client_tools: [tool] })).map((t) => t.function.name)).toEqual([
      'read_file',
      'web_search',
      'update_plan',
    ])
    expect(toolsFor(settings({}, false)).map((t) => t.function.name)).toEqual(['update_plan'])
  })

  it('states the mode and the workspace in the system prompt', () => {
    const prompt = systemPrompt(settings())
    expect(prompt).toContain('Plan mode: only read-only tools run')
    expect(prompt).toContain('Workspace: {"root":"project"}')
  })

  it('takes chat-shaped entries of a first transcript and ignores the rest', () => {
    expect(
      transcriptMessages([
        { role: 'user', content: 'hi' },
        { role: 'tool', content: 'x' },
        'free text',
        { role: 'assistant', content: 'hello' },
        { role: 'user', content: 42 },
      ]),
    ).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ])
  })
})
