/**
 * Operator settings of the real-hardware path (docs/quantum-selector.md), read from the reasoning
 * worker's env (shared by its ReasoningJob objects and its queue consumer) with one zod schema
 * (shared/config/worker-env.ts: a bad value is an error naming the variable). README's
 * configuration table lists the same rows.
 *
 * | variable                     | default | meaning                                                      |
 * |------------------------------|---------|--------------------------------------------------------------|
 * | QPU_POLL_INTERVAL_SECONDS    | 2       | seconds between polls of a running provider job              |
 * | QPU_RETRY_MAX_DELAY_SECONDS  | 60      | longest backoff of a retried queue message                   |
 * | QPU_REDRIVE_SECONDS          | 120     | a waiting job with no consumer contact for this long re-sends its message |
 * | QPU_RECONCILE_GRACE_SECONDS  | 30      | an unknown outcome the provider does not know after this long is given up |
 */
import { z } from 'zod'
import { envReader, wholeNumberVar } from '../../shared/config/worker-env'

export const QpuSettingsSchema = z.object({
  QPU_POLL_INTERVAL_SECONDS: wholeNumberVar(2, { min: 1, max: 3_600 }),
  QPU_RETRY_MAX_DELAY_SECONDS: wholeNumberVar(60, { min: 1, max: 3_600 }),
  QPU_REDRIVE_SECONDS: wholeNumberVar(120, { min: 1, max: 86_400 }),
  QPU_RECONCILE_GRACE_SECONDS: wholeNumberVar(30, { min: 0, max: 86_400 }),
})
export type QpuSettingsEnv = z.input<typeof QpuSettingsSchema>

export interface QpuSettings {
  readonly pollIntervalSeconds: number
  readonly retryMaxDelaySeconds: number
  readonly redriveMs: number
  readonly reconcileGraceMs: number
}

const readQpuSettings = envReader('qpu', QpuSettingsSchema)

export function qpuSettingsFromEnv(env: QpuSettingsEnv): QpuSettings {
  const v = readQpuSettings(env)
  return {
    pollIntervalSeconds: v.QPU_POLL_INTERVAL_SECONDS,
    retryMaxDelaySeconds: v.QPU_RETRY_MAX_DELAY_SECONDS,
    redriveMs: v.QPU_REDRIVE_SECONDS * 1000,
    reconcileGraceMs: v.QPU_RECONCILE_GRACE_SECONDS * 1000,
  }
}
