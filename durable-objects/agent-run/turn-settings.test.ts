import { describe, expect, it } from 'vitest'
import { AppError } from '../../shared/http/errors'
import { parseTurnRequest } from './turn.schemas'
import { CONTEXT_LIMITS, turnSettingsOf } from './turn-settings'

const caller = { testMode: true, billingPlanId: 'team', webSearch: true, requestId: 'req_1' }
const request = (overrides: Record<string, unknown> = {}) =>
  parseTurnRequest({
    protocol: 'svc.code.v1',
    session_id: 's',
    turn_id: 't',
    model: 'svc-comb',
    mode: 'auto',
    request: 'do it',
    workspace: { root: '/repo' },
    transcript: [{ role: 'user', content: 'earlier' }],
    capabilities: { diff: true },
    cursor: 4,
    ...overrides,
  })

describe('the stored settings of a turn', () => {
  it('keeps what the loop needs and the caller facts, not the transcript or cursor', () => {
    const settings = turnSettingsOf(request(), caller)
    expect(settings).toEqual({
      session_id: 's',
      model: 'svc-comb',
      mode: 'auto',
      effort: null,
      enable_thinking: false,
      request: 'do it',
      client_tools: [],
      workspace_context: '{"root":"/repo"}',
      capabilities_context: '{"diff":true}',
      test_mode: true,
      billing_plan_id: 'team',
      web_search: true,
      request_id: 'req_1',
    })
  })

  it('cuts a large workspace to a bounded text for the prompt', () => {
    const settings = turnSettingsOf(request({ workspace: { files: 'x'.repeat(50_000) } }), caller)
    expect(settings.workspace_context.length).toBeLessThan(CONTEXT_LIMITS.workspace + 100)
    expect(settings.workspace_context).toMatch(/more characters cut\)$/)
  })

  it('refuses a turn too large to store with a 400 that says what to shorten', () => {
    let error: unknown
    try {
      turnSettingsOf(request({ request: 'y'.repeat(1_600_000) }), caller)
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ status: 400, code: 'turn_too_large', param: 'request' })
  })
})
