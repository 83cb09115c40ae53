/**
 * A job's run slot in its workspace's run queue (docs/reasoning-jobs.md, "The run queue"; the
 * queue is durable-objects/reasoning-run-queue/): a queued job leaves `queued` only with a slot. It
 * asks for one (`enqueue`, again every SLOT_RECHECK_MS while it waits), the queue grants it later
 * (`runSlotGranted`), and every terminal state writes `release_slot` due work (JobHost.commit),
 * which gives the slot back. Each side stores what it learnt before it acts.
 */
import { AppError } from '../../shared/http/errors'
import { resolvePlan } from '../../shared/plans'
import { errorFields, log } from '../../shared/worker/log'
import { type EnqueueReply, runQueueName, type SlotAnswer } from '../reasoning-run-queue/run-queue.protocol'
import { isTerminal } from './job.schemas'
import { jobObjectName } from './job-calls'
import type { JobHost } from './job-host'
import type { JobRow } from './reasoning-job.store'

/**
 * How often a job waiting for a run slot asks its queue again (the queue tells it when a slot is
 * free; this re-drives a lost enqueue or a queue that lost track of it).
 */
const SLOT_RECHECK_MS = 60_000

export class RunSlot {
  constructor(private readonly host: JobHost) {}

  private queue(job: JobRow) {
    const queues = this.host.workerEnv.REASONING_RUN_QUEUE
    return queues.get(queues.idFromName(runQueueName(job.tenant_id, job.test_mode ? 'test' : 'live')))
  }

  /**
   * A queued job asks its workspace's run queue for a slot (idempotent: a repeat answers where it
   * stands). The next ask is due before the call, so a lost call or answer is asked again.
   */
  async request(): Promise<void> {
    const { store } = this.host
    const job = store.job()
    if (job?.status !== 'queued') return
    store.schedule('advance', this.host.now() + SLOT_RECHECK_MS)
    const { plan } = resolvePlan(this.host.workerEnv, job.meter_json.identity.planId)
    const reply: EnqueueReply = await this.queue(job).enqueue({
      jobId: job.job_id,
      holder: jobObjectName(job.tenant_id, job.job_id),
      slots: plan.reasoningConcurrency,
    })
    // Cancelled while the call was out: its release is due, nothing to start.
    if (store.job()?.status !== 'queued') return
    const at = this.host.now()
    if (reply.state === 'waiting') {
      // A grant that overtook this answer stands.
      if (store.runSlot() !== 'admitted') store.setRunSlot('waiting', at)
      return
    }
    // `released` cannot happen to a queued job; starting is what keeps it from waiting forever.
    store.setRunSlot('admitted', at)
    store.schedule('advance', at)
  }

  /**
   * The queue's call: a slot is this job's (or the watchdog asks whether it still uses it). A queued
   * job starts at once; a finished or unknown one answers 'finished', which frees the slot.
   */
  async granted(jobId: string): Promise<SlotAnswer> {
    const { store } = this.host
    const job = store.job()
    if (!job || job.job_id !== jobId || isTerminal(job.status) || store.runSlot() === 'released') {
      return 'finished'
    }
    if (store.runSlot() !== 'admitted') {
      const now = this.host.now()
      store.setRunSlot('admitted', now)
      if (job.status === 'queued') store.schedule('advance', now)
      await this.host.armAlarm()
    }
    return 'running'
  }

  /** release_slot: the slot (or the place in line) goes back to the queue, once acknowledged. */
  async release(): Promise<void> {
    const { store } = this.host
    const job = store.job()
    if (!job || !isTerminal(job.status) || store.runSlot() === 'released') {
      store.unschedule('release_slot')
      return
    }
    await this.queue(job).release(job.job_id)
    store.setRunSlot('released', this.host.now())
    store.unschedule('release_slot')
  }

  /** The job's place among its workspace's waiting jobs, or null once it has a slot. */
  async position(job: JobRow): Promise<number | null> {
    if (job.status !== 'queued' || this.host.store.runSlot() !== 'waiting') return null
    try {
      return await this.queue(job).position(job.job_id)
    } catch (err) {
      throw new AppError(
        503,
        'run_queue_unavailable',
        "The job's place in the run queue cannot be read right now. Retry in a few seconds.",
        {
          headers: { 'retry-after': '2' },
          internalMessage: `ReasoningRunQueue.position failed: ${String(err)}`,
        },
      )
    }
  }
}

/** The queue could not be reached; the due work that re-drives the step is already stored. */
export function logRunQueueTrouble(step: 'enqueue' | 'release', err: unknown): void {
  log('error', 'reasoning_run_queue_unreachable', { step, ...errorFields(err) })
}
