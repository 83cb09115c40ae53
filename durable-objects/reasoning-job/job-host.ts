/**
 * What a ReasoningJob object's capabilities need from the object (the AgentRun pattern: a thin
 * class for RPC and alarm arbitration over modules behind a host; cloudflare/agents does the same
 * with its scheduler behind a SchedulerHost). The capabilities: the steps of the state machine
 * (job-steps.ts), the QPU attempt (job-qpu.ts), the run slot (job-run-slot.ts), metering
 * (job-metering.ts), receipts (job-receipts.ts), views (job-view.ts) and the content cipher
 * (job-content.ts). They read and write the object's storage and never call each other through
 * the object: what one needs of another is handed to it when the object builds them.
 */

import type { ReasoningSettings } from './job-settings'
import type { QpuStore } from './qpu.store'
import type { QpuSettings } from './qpu-settings'
import type { ReasoningJobEnv } from './reasoning-job.context'
import type { JobChange, JobStore } from './reasoning-job.store'

/** How soon a failed index write or an unacknowledged settle (or release) is tried again. */
export const RETRY_SIDE_WORK_MS = 5_000

export interface JobHost {
  readonly store: JobStore
  readonly qpu: QpuStore
  readonly workerEnv: ReasoningJobEnv
  readonly settings: ReasoningSettings
  readonly qpuSettings: QpuSettings
  now(): number
  /**
   * A state change and the work it implies, written together: the index write (due now) and, for a
   * terminal state, the release of the run slot.
   */
  commit(change: JobChange, now: number): void
  /** One alarm for the due-work table, at its earliest row. */
  armAlarm(): Promise<void>
}

export function iso(ms: number): string {
  return new Date(ms).toISOString()
}
