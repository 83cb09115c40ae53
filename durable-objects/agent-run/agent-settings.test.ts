import { describe, expect, it } from 'vitest'
import { AppError } from '../../shared/http/errors'
import { agentSettingsFromEnv, retryDelayMs, turnOutputBudget } from './agent-settings'

describe('agent settings from env', () => {
  it('has documented defaults', () => {
    expect(agentSettingsFromEnv({})).toEqual({
      heartbeatMs: 15_000,
      turnTimeoutMs: 600_000,
      approvalTtlMs: 900_000,
      modelAttempts: 3,
      retryBaseMs: 2_000,
      retryMaxMs: 30_000,
      maxToolRounds: 8,
      runMaxTokens: 2_000_000,
      runMaxCostUsd: 25,
    })
  })

  it('reads every variable', () => {
    const settings = agentSettingsFromEnv({
      AGENT_HEARTBEAT_MS: '500',
      AGENT_TURN_TIMEOUT_MS: '1000',
      AGENT_APPROVAL_TTL_MS: '2000',
      AGENT_MODEL_ATTEMPTS: '5',
      AGENT_RETRY_BASE_MS: '10',
      AGENT_RETRY_MAX_MS: '40',
      AGENT_MAX_TOOL_ROUNDS: '2',
      AGENT_RUN_MAX_TOKENS: '1000',
      AGENT_RUN_MAX_COST_USD: '0.5',
    })
    expect(settings).toMatchObject({
      heartbeatMs: 500,
      modelAttempts: 5,
      maxToolRounds: 2,
      runMaxCostUsd: 0.5,
    })
  })

  it('treats a bad value as an operator error (503 naming the variable and the rule, the value only in the logs)', () => {
    let error: AppError | undefined
    try {
      agentSettingsFromEnv({ AGENT_HEARTBEAT_MS: 'soon' })
    } catch (err) {
      error = err as AppError
    }
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ status: 503, code: 'service_misconfigured' })
    expect(error?.message).toContain('AGENT_HEARTBEAT_MS must be a whole number at least 1')
    expect(error?.internalMessage).toContain('AGENT_HEARTBEAT_MS="soon"')
    expect(error?.message).not.toContain('soon')
  })
})

describe('budgets and backoff', () => {
  it('derives the output budget of a turn from effort, capped by the model', () => {
    expect(turnOutputBudget(undefined, 32_768)).toBe(8_192)
    expect(turnOutputBudget('low', 32_768)).toBe(2_048)
    expect(turnOutputBudget('ultracode', 32_768)).toBe(32_768)
  })

  it('doubles the retry delay from the base up to the cap', () => {
    const s = { retryBaseMs: 2_000, retryMaxMs: 30_000 }
    expect([2, 3, 4, 5, 6, 7].map((n) => retryDelayMs(n, s))).toEqual([
      2_000, 4_000, 8_000, 16_000, 30_000, 30_000,
    ])
  })
})
