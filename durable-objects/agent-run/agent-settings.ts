/**
 * Operator settings of the agent plane, read from the code worker's env (all optional strings,
 * validated with zod once per isolate). README's configuration table lists the same rows.
 *
 * | variable                  | default   | meaning                                                        |
 * |---------------------------|-----------|----------------------------------------------------------------|
 * | AGENT_HEARTBEAT_MS        | 15000     | silence on a turn stream before a `heartbeat` line             |
 * | AGENT_TURN_TIMEOUT_MS     | 600000    | a turn still running this long after it started fails          |
 * | AGENT_APPROVAL_TTL_MS     | 900000    | a pending approval resolves as a deny by `expiry` after this   |
 * | AGENT_MODEL_ATTEMPTS      | 3         | attempts per model round when every provider failed transiently|
 * | AGENT_RETRY_BASE_MS       | 2000      | first backoff before such a retry (doubles, capped below)      |
 * | AGENT_RETRY_MAX_MS        | 30000     | longest backoff                                                |
 * | AGENT_MAX_TOOL_ROUNDS     | 8         | model calls per turn (each tool round trip is one)             |
 * | AGENT_RUN_MAX_TOKENS      | 2000000   | tokens (input + output) one run may use over all its turns     |
 * | AGENT_RUN_MAX_COST_USD    | 25        | what one run may cost over all its turns (live keys)           |
 */
import { z } from 'zod'
import { decimalVar, envReader, wholeNumberVar } from '../../shared/config/worker-env'
import type { Effort } from './turn.schemas'

export const AgentSettingsSchema = z.object({
  AGENT_HEARTBEAT_MS: wholeNumberVar(15_000),
  AGENT_TURN_TIMEOUT_MS: wholeNumberVar(600_000),
  AGENT_APPROVAL_TTL_MS: wholeNumberVar(900_000),
  AGENT_MODEL_ATTEMPTS: wholeNumberVar(3),
  AGENT_RETRY_BASE_MS: wholeNumberVar(2_000),
  AGENT_RETRY_MAX_MS: wholeNumberVar(30_000),
  AGENT_MAX_TOOL_ROUNDS: wholeNumberVar(8),
  AGENT_RUN_MAX_TOKENS: wholeNumberVar(2_000_000),
  AGENT_RUN_MAX_COST_USD: decimalVar(25),
})
export type AgentSettingsEnv = z.input<typeof AgentSettingsSchema>

export interface AgentSettings {
  heartbeatMs: number
  turnTimeoutMs: number
  approvalTtlMs: number
  modelAttempts: number
  retryBaseMs: number
  retryMaxMs: number
  maxToolRounds: number
  runMaxTokens: number
  runMaxCostUsd: number
}

const readAgentSettings = envReader('agent runtime', AgentSettingsSchema)

/** The settings for this env, parsed once per isolate; a bad value is a 503 naming the variable and its rule. */
export function agentSettingsFromEnv(env: AgentSettingsEnv): AgentSettings {
  const v = readAgentSettings(env)
  return {
    heartbeatMs: v.AGENT_HEARTBEAT_MS,
    turnTimeoutMs: v.AGENT_TURN_TIMEOUT_MS,
    approvalTtlMs: v.AGENT_APPROVAL_TTL_MS,
    modelAttempts: v.AGENT_MODEL_ATTEMPTS,
    retryBaseMs: v.AGENT_RETRY_BASE_MS,
    retryMaxMs: v.AGENT_RETRY_MAX_MS,
    maxToolRounds: v.AGENT_MAX_TOOL_ROUNDS,
    runMaxTokens: v.AGENT_RUN_MAX_TOKENS,
    runMaxCostUsd: v.AGENT_RUN_MAX_COST_USD,
  }
}

/**
 * Output budget of one turn (all its model calls together) by `effort`; omitted = `medium`,
 * the plane's default. Capped by the model's own maximum output length.
 */
export const EFFORT_OUTPUT_TOKENS: Readonly<Record<Effort, number>> = {
  low: 2_048,
  medium: 8_192,
  high: 16_384,
  xhigh: 32_768,
  max: 65_536,
  ultracode: 131_072,
}

export function turnOutputBudget(effort: Effort | undefined, modelMaxOutput: number): number {
  return Math.min(EFFORT_OUTPUT_TOKENS[effort ?? 'medium'], modelMaxOutput)
}

/** Backoff before retry `attempt` (2 = the first retry): base * 2^(attempt-2), capped. */
export function retryDelayMs(attempt: number, settings: Pick<AgentSettings, 'retryBaseMs' | 'retryMaxMs'>) {
  return Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** Math.max(0, attempt - 2))
}
