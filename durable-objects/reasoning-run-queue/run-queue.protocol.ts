/**
 * The run queue's RPC surface (docs/reasoning-jobs.md, "The run queue"): what a ReasoningJob object
 * asks of its workspace's ReasoningRunQueue, and what the queue asks back. One queue object per
 * workspace (tenant) and mode, so test jobs never wait behind live ones.
 *
 *   job   ── enqueue ──▶ queue   waiting (position) | running (a slot is the job's) | released
 *   queue ── runSlotGranted ──▶ job   'running' (keeps the slot) | 'finished' (the slot is freed)
 *   job   ── release ──▶ queue   the job ended: its slot (or its place) goes to the next in line
 *
 * Every call is idempotent, and each side writes what it learnt before it acts on it, so any call
 * may be repeated after a crash: that is how both sides' alarms re-drive a lost step.
 */
import type { Mode } from '../../shared/worker/request-context'

/** The queue object of a workspace and mode. */
export function runQueueName(tenantId: string, mode: Mode): string {
  return `${tenantId}/${mode}`
}

export interface EnqueueCall {
  readonly jobId: string
  /** The name of the job's object (the queue calls it back when a slot is free). */
  readonly holder: string
  /** The plan's `reasoningConcurrency`: how many jobs of the queue may run at once. */
  readonly slots: number
}

export type EnqueueReply =
  /** Waits for a slot; `position` is 1 for the next to start. */
  | { readonly state: 'waiting'; readonly position: number }
  /** A slot is the job's: it may start. */
  | { readonly state: 'running' }
  /** The job already released its place (it ended): nothing to wait for. */
  | { readonly state: 'released' }

/** What a job answers when the queue grants it a slot or checks that it still uses one. */
export type SlotAnswer = 'running' | 'finished'

/** The part of a job's object the queue calls (ReasoningJob implements it). */
export interface RunSlotHolder {
  runSlotGranted(jobId: string): Promise<SlotAnswer>
}

/** The queue's RPC methods, as a ReasoningJob object and the reasoning worker call them. */
export interface RunQueuePort {
  enqueue(call: EnqueueCall): Promise<EnqueueReply>
  release(jobId: string): Promise<void>
  /** 1-based place among the waiting jobs, or null (running, released or unknown). */
  position(jobId: string): Promise<number | null>
  /** Every waiting job's place, by job id. */
  positions(): Promise<Record<string, number>>
}

export type RunQueueNamespace = DurableObjectNamespace<RunQueuePort & Rpc.DurableObjectBranded>
