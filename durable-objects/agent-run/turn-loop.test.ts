import { describe, expect, it } from 'vitest'
import { AppError } from '../../shared/http/errors'
import { parseTurnRequest } from './turn.schemas'
import { costOf, isTransient, systemPrompt, toolsFor, transcriptMessages, turnDiff } from './turn-loop'
import { turnPlanOf } from './turn-settings'

const H = `sha256:${'b'.repeat(64)}`

function plan(overrides: Record<string, unknown> = {}, webSearch = true) {
  return turnPlanOf(
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
    { testMode: false, planId: 'team', webSearch, requestId: 'r' },
  )
}

describe('what the model is given', () => {
  it('offers the client tools, then web_search (when the plan has it) and update_plan', () => {
    const tool = {
      name: 'read_file',
      description: 'd',
      input_schema: { type: 'object' },
      tags: ['read-only'],
    }
    expect(toolsFor(plan({ client_tools: [tool] })).map((t) => t.function.name)).toEqual([
      'read_file',
      'web_search',
      'update_plan',
    ])
    expect(toolsFor(plan({}, false)).map((t) => t.function.name)).toEqual(['update_plan'])
  })

  it('states the mode and the workspace in the system prompt', () => {
    const prompt = systemPrompt(plan())
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

describe('accounting and failures', () => {
  it('prices live usage at the catalog prices and never bills test mode', () => {
    const usage = {
      input_tokens: 1000,
      output_tokens: 100,
      reasoning_tokens: 0,
      cached_input_tokens: 400,
      total_tokens: 1100,
    }
    const live = costOf({ model: 'svc-cell', test_mode: false }, usage)
    expect(live).toBeCloseTo(600 * 0.0000001 + 400 * 0.000000025 + 100 * 0.0000004, 12)
    expect(costOf({ model: 'svc-cell', test_mode: true }, usage)).toBe(0)
  })

  it('retries only what may pass later', () => {
    expect(isTransient(new AppError(502, 'upstream_unavailable', 'x'))).toBe(true)
    expect(isTransient(new AppError(429, 'rate_limited', 'x'))).toBe(true)
    expect(isTransient(new AppError(503, 'provider_not_configured', 'x'))).toBe(false)
    expect(isTransient(new AppError(400, 'upstream_rejected_request', 'x'))).toBe(false)
  })

  it('sums a turn diff from its file changes', () => {
    expect(
      turnDiff([
        { path: 'a', op: 'create', diff: '+a', base_hash: null, new_hash: H },
        { path: 'b', from_path: 'c', op: 'rename', diff: '', base_hash: H, new_hash: H },
      ]),
    ).toEqual({
      diff: '+a\n',
      files: [
        { path: 'a', op: 'create' },
        { path: 'b', op: 'rename', from_path: 'c' },
      ],
    })
  })
})
