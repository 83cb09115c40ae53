/**
 * ReasoningRunQueue: one Durable Object per workspace and mode (run-queue.protocol.ts), the run
 * queue of its reasoning jobs (docs/reasoning-jobs.md, "The run queue"): at most `slots` jobs
 * (the plan's `reasoningConcurrency`) execute at once; the others wait, first come first served.
 *
 * Why an object of its own, not the job objects or Postgres: a slot is a decision about several
 * jobs at once (who is next, how many run), which needs one writer; the per-job objects each see
 * only themselves, and Postgres rows with a guarded claim would put a database round trip and a
 * poll into every start, and leave the jobs to find out on their own that a slot is free. The
 * tenant's RateLimiter is one writer per tenant and mode too, but it belongs to metering (another
 * worker) and sits on every metered request's path. This object is small, strongly consistent and
 * has an alarm to re-drive what a crash cut short.
 *
 * - Store first, then call: a promotion and the contact it implies commit together; the alarm then
 *   tells each promoted job (`runSlotGranted`). A crash between the two leaves the contact due, so
 *   the alarm tells it after the restart. A job that answers 'finished' (it ended meanwhile, or no
 *   longer exists) frees its slot.
 * - The watchdog: a running job is asked again every CHECK_MS whether it still uses its slot; the
 *   job's own release (its due work) normally comes first, this covers a release that never can.
 * - Idempotent: enqueue of a queued job answers its state; release of a released (or unknown) job
 *   changes nothing but leaves a tombstone.
 */
import { DurableObject } from 'cloudflare:workers'
import { errorFields, log } from '../../shared/worker/log'
import type { EnqueueCall, EnqueueReply, RunQueuePort, RunSlotHolder, SlotAnswer } from './run-queue.protocol'
import { type EntryRow, RunQueueStore } from './run-queue.store'

/** How often a running job is asked whether it still uses its slot (the watchdog). */
export const CHECK_MS = 5 * 60_000
/** How soon a job that could not be told about its slot is tried again. */
export const RETRY_CONTACT_MS = 5_000
/** How long a released job's tombstone is kept. */
export const TOMBSTONE_MS = 24 * 60 * 60_000

export interface RunQueueEnv {
  /** The ReasoningJob objects of the same worker (the queue tells them when a slot is theirs). */
  readonly REASONING_JOB: DurableObjectNamespace<RunSlotHolder & Rpc.DurableObjectBranded>
}

export class ReasoningRunQueue extends DurableObject<RunQueueEnv> implements RunQueuePort {
  readonly store: RunQueueStore

  constructor(ctx: DurableObjectState, env: RunQueueEnv) {
    super(ctx, env)
    this.store = new RunQueueStore(ctx.storage.sql)
    void ctx.blockConcurrencyWhile(async () => {
      this.store.migrate()
      // Self-heal: a promotion whose job was not told yet gets its alarm.
      await this.armAlarm()
    })
  }

  now(): number {
    return Date.now()
  }

  async enqueue(call: EnqueueCall): Promise<EnqueueReply> {
    const now = this.now()
    const entry = this.store.entry(call.jobId)
    if (entry?.state === 'released') return { state: 'released' }
    if (!entry) this.store.addWaiting(call.jobId, call.holder, now)
    this.store.setSlots(call.slots)
    const promoted = this.store.promote(now)
    // The caller learns its own slot from this answer: only the watchdog calls it back.
    if (promoted.includes(call.jobId)) this.store.setContact(call.jobId, now + CHECK_MS)
    await this.armAlarm()
    const position = this.store.position(call.jobId)
    return position === null ? { state: 'running' } : { state: 'waiting', position }
  }

  async release(jobId: string): Promise<void> {
    const now = this.now()
    const entry = this.store.entry(jobId)
    if (entry?.state === 'released') return
    if (entry) this.store.markReleased(jobId, now)
    else this.store.addReleased(jobId, now)
    this.store.promote(now)
    await this.armAlarm()
  }

  async position(jobId: string): Promise<number | null> {
    return this.store.position(jobId)
  }

  async positions(): Promise<Record<string, number>> {
    return this.store.positions()
  }

  override async alarm(): Promise<void> {
    // A job that answers 'finished' frees a slot, which may promote the next: run until none is due.
    for (let round = 0; round < 16; round++) {
      const now = this.now()
      const due = this.store.dueContacts(now)
      if (due.length === 0) break
      // The next contact is stored before the calls: a crash mid-call leaves it due.
      for (const entry of due) this.store.setContact(entry.job_id, now + RETRY_CONTACT_MS)
      const answers = await Promise.allSettled(due.map((entry) => this.tell(entry)))
      const after = this.now()
      answers.forEach((answer, i) => {
        const entry = due[i]!
        // Released meanwhile (the job's own release came first): nothing left to do.
        if (this.store.entry(entry.job_id)?.state !== 'running') return
        if (answer.status === 'rejected') {
          log('error', 'reasoning_run_slot_contact_failed', {
            job_id: entry.job_id,
            ...errorFields(answer.reason),
          })
          return
        }
        if (answer.value === 'running') this.store.setContact(entry.job_id, after + CHECK_MS)
        else {
          this.store.markReleased(entry.job_id, after)
          this.store.promote(after)
        }
      })
    }
    this.store.pruneReleased(this.now() - TOMBSTONE_MS)
    await this.armAlarm()
  }

  private tell(entry: EntryRow): Promise<SlotAnswer> {
    const jobs = this.env.REASONING_JOB
    return jobs.get(jobs.idFromName(entry.holder)).runSlotGranted(entry.job_id)
  }

  /** One alarm: the earliest contact due, or the earliest tombstone to forget. */
  private async armAlarm(): Promise<void> {
    const next = this.store.nextWakeAt(TOMBSTONE_MS)
    const current = await this.ctx.storage.getAlarm()
    if (next === null) {
      if (current !== null) await this.ctx.storage.deleteAlarm()
      return
    }
    if (current !== next) await this.ctx.storage.setAlarm(next)
  }
}
