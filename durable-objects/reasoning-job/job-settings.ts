/**
 * Operator settings of reasoning jobs, read from the reasoning worker's env (which the
 * ReasoningJob objects share) with one zod schema, once per isolate (shared/config/worker-env.ts:
 * a bad value is a 503 naming the variable, never a silent default). README's configuration table
 * lists the same rows.
 *
 * | variable                 | default | meaning                                                       |
 * |--------------------------|---------|---------------------------------------------------------------|
 * | REASONING_LAB_ENABLED    | true    | false: job creation answers 503 reasoning_lab_disabled        |
 * | REASONING_MAX_ATTEMPTS   | 4       | attempts of one step (a round of model calls) before failing  |
 * | REASONING_RETRY_BASE_MS  | 2000    | backoff before the second attempt (doubles, capped below)     |
 * | REASONING_RETRY_MAX_MS   | 60000   | longest backoff                                               |
 */
import { z } from 'zod'
import { envReader, wholeNumberVar } from '../../shared/config/worker-env'
import type { ReasoningModel } from './job.schemas'

/** Candidates generated per job, per model (docs/reasoning-jobs.md). */
export const CANDIDATES_PER_MODEL: Readonly<Record<ReasoningModel, number>> = {
  'svc-hive': 4,
  'svc-swarm': 3,
}
/** Output budget of one candidate and of one judge verdict, in tokens. */
export const CANDIDATE_MAX_TOKENS = 1024
export const JUDGE_MAX_TOKENS = 256

export const ReasoningSettingsSchema = z.object({
  REASONING_LAB_ENABLED: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const value = (v ?? '').trim()
      if (value === '' || value === 'true') return true
      if (value === 'false') return false
      ctx.addIssue({ code: 'custom', message: 'must be true or false' })
      return z.NEVER
    }),
  REASONING_MAX_ATTEMPTS: wholeNumberVar(4, { min: 1, max: 20 }),
  REASONING_RETRY_BASE_MS: wholeNumberVar(2_000),
  REASONING_RETRY_MAX_MS: wholeNumberVar(60_000),
})
export type ReasoningSettingsEnv = z.input<typeof ReasoningSettingsSchema>

export interface ReasoningSettings {
  readonly labEnabled: boolean
  readonly maxAttempts: number
  readonly retryBaseMs: number
  readonly retryMaxMs: number
}

const readReasoningSettings = envReader('reasoning', ReasoningSettingsSchema)

export function reasoningSettingsFromEnv(env: ReasoningSettingsEnv): ReasoningSettings {
  const v = readReasoningSettings(env)
  return {
    labEnabled: v.REASONING_LAB_ENABLED,
    maxAttempts: v.REASONING_MAX_ATTEMPTS,
    retryBaseMs: v.REASONING_RETRY_BASE_MS,
    retryMaxMs: v.REASONING_RETRY_MAX_MS,
  }
}

/** Delay before attempt `attempt + 1` after `attempt` failed (attempt >= 1). */
export function retryDelayMs(attempt: number, settings: ReasoningSettings): number {
  return Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** Math.max(0, attempt - 1))
}
