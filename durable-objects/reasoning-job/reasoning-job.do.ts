/**
 * ReasoningJob: one Durable Object per reasoning job (named by tenant and job id), the durable
 * home of the job's state machine (docs/reasoning-jobs.md):
 *
 *   queued → generating_candidates → scoring → selecting → completed | classical_fallback
 *                      └──────────────┴──────────┴──→ failed            queued → cancelled
 *   managed_qpu, byopa_managed:          selecting → awaiting_qpu → completed | classical_fallback
 *
 * This class is the object's RPC surface and the arbitration of its one alarm; what the job does is
 * in capability modules behind a host (job-host.ts), as AgentRun does with its turn loop:
 *
 * | module            | capability                                                                   |
 * |-------------------|------------------------------------------------------------------------------|
 * | job-steps.ts      | the state machine's steps: candidates, scoring, selection, retries            |
 * | job-run-slot.ts   | the run slot of the workspace's run queue: ask, be granted, give back         |
 * | job-qpu.ts        | the QPU attempt on real hardware and the QPU port's callbacks                 |
 * | job-metering.ts   | the quote reserved at creation and settled once at the end                    |
 * | job-receipts.ts   | the signed inference receipt, logged in the tenant's audit log                |
 * | job-view.ts       | the public record and usage; job-index.ts writes it to the Postgres index     |
 * | job-content.ts    | the content sealed at rest, opened for the steps and the owner                |
 *
 * - Append state first, then act: every transition is written to SQLite together with the due
 *   work it implies (one implicit transaction), then the object acts (calls models, writes the
 *   Postgres index, settles metering). A crash at any point leaves the due work in storage; the
 *   alarm runs it again, and every step is idempotent: a candidate or a verdict is stored once
 *   (its slot), a step only runs for the slots still empty, metering settles once per reservation.
 * - One alarm drives the due-work table, re-armed to the earliest row. A step that fails
 *   transiently (providers down or busy) is retried with exponential backoff (`attempt_count`,
 *   `max_attempts`, `next_attempt_at`); a permanent failure, or the last attempt, ends the job
 *   `failed` with `error {code, message}`. A step that throws is tried again RETRY_CRASHED_STEP_MS
 *   later; side work (index, settles, receipt, release) is due again before it runs, so a crash
 *   mid-way retries it.
 * - Credits: the job's quote is reserved with the tenant's RateLimiter before the job exists
 *   (refusals are the create request's 402/403/429), committed with the usage when it completes,
 *   released when it fails or is cancelled. The settle is due work written with the terminal state.
 */
import { DurableObject } from 'cloudflare:workers'
import { AppError } from '../../shared/http/errors'
import { estimateCostUnits } from '../../shared/metering'
import { resolvePlan } from '../../shared/plans'
import { errorFields, log, refused } from '../../shared/worker/log'
import { isTestMode, principalId } from '../../shared/worker/request-context'
import type { RunSlotHolder, SlotAnswer } from '../reasoning-run-queue/run-queue.protocol'
import { isTerminal, type ReasoningJob as ReasoningJobRecord } from './job.schemas'
import {
  type CreateJobCall,
  canManageJobs,
  type JobCaller,
  type JobReply,
  jobNotFound,
  type ReceiptReply,
  visibleTo,
} from './job-calls'
import { JobContent, sealNewPrompt } from './job-content'
import { type JobHost, RETRY_SIDE_WORK_MS } from './job-host'
import { indexRetryDelay, syncJobRecord } from './job-index'
import { quotedTokens, reserveJobQuote, settleJobUsage } from './job-metering'
import { JobQpu } from './job-qpu'
import { JobReceipts } from './job-receipts'
import { logRunQueueTrouble, RunSlot } from './job-run-slot'
import { CANDIDATES_PER_MODEL, reasoningSettingsFromEnv } from './job-settings'
import { JobSteps } from './job-steps'
import { JobViews } from './job-view'
import { QpuStore } from './qpu.store'
import { qpuSettingsFromEnv } from './qpu-settings'
import type { QpuClaim, QpuJobPort, QpuOutcome } from './quantum/qpu-queue'
import type { ReasoningJobEnv } from './reasoning-job.context'
import { type DueWorkKind, type JobChange, type JobRow, JobStore } from './reasoning-job.store'

/** A step that threw (a bug, storage trouble) is not retried in a tight loop. */
const RETRY_CRASHED_STEP_MS = 5_000

export class ReasoningJob extends DurableObject<ReasoningJobEnv> implements QpuJobPort, RunSlotHolder {
  readonly store: JobStore
  readonly qpu: QpuStore
  /**
   * What the capabilities see of the object. An object of its own, not the class's public members:
   * every public member of a Durable Object is reachable over RPC, and the env holds secrets.
   */
  private readonly host: JobHost
  private readonly content: JobContent
  private readonly views: JobViews
  private readonly runSlot: RunSlot
  private readonly hardware: JobQpu
  private readonly steps: JobSteps
  private readonly receipts: JobReceipts
  /** The create in progress (its reservation is being asked for): a second create awaits it. */
  private creating: Promise<JobReply> | null = null

  constructor(ctx: DurableObjectState, env: ReasoningJobEnv) {
    super(ctx, env)
    this.store = new JobStore(ctx.storage.sql)
    this.qpu = new QpuStore(ctx.storage.sql)
    this.host = {
      store: this.store,
      qpu: this.qpu,
      // Read on every use: tests (and nothing else) change the env object the worker shares.
      workerEnv: env,
      get settings() {
        return reasoningSettingsFromEnv(env)
      },
      get qpuSettings() {
        return qpuSettingsFromEnv(env)
      },
      now: () => this.now(),
      commit: (change, now) => this.commit(change, now),
      armAlarm: () => this.armAlarm(),
    }
    this.content = new JobContent(this.host)
    this.views = new JobViews(this.host, this.content)
    this.runSlot = new RunSlot(this.host)
    this.hardware = new JobQpu(this.host)
    this.steps = new JobSteps(this.host, this.content, {
      requestRunSlot: () => this.runSlot.request(),
      selectOnHardware: (job) => this.hardware.selectOnHardware(job),
    })
    this.receipts = new JobReceipts(this.host, this.content, this.views)
    void ctx.blockConcurrencyWhile(async () => {
      this.store.migrate()
      this.qpu.migrate()
      // Self-heal: whatever is due (a step cut off by a restart) gets its alarm.
      await this.armAlarm()
    })
  }

  // --- the host (job-host.ts) -------------------------------------------------------------------

  private now(): number {
    return Date.now()
  }

  /** A state change, and the index write it implies (due now); a job that ends frees its run slot. */
  private commit(change: JobChange, now: number): void {
    this.store.update(change, now)
    this.store.schedule('record_sync', now)
    if (change.status && isTerminal(change.status)) this.store.schedule('release_slot', now)
  }

  /** One alarm for the whole due-work table, at its earliest row (or none). */
  private async armAlarm(): Promise<void> {
    const next = this.store.nextDueAt()
    const current = await this.ctx.storage.getAlarm()
    if (next === null) {
      if (current !== null) await this.ctx.storage.deleteAlarm()
      return
    }
    if (current !== next) await this.ctx.storage.setAlarm(next)
  }

  // --- RPC --------------------------------------------------------------------------------------

  /**
   * Creates the job, or answers the one this object already holds (a repeated or concurrent
   * create of the same job id: the reasoning worker only sends the same request for one id).
   */
  async create(call: CreateJobCall): Promise<JobReply> {
    const existing = this.store.job()
    if (existing) {
      if (!visibleTo(existing, call.identity)) return refused(jobNotFound())
      try {
        return { ok: true, job: await this.answer(existing) }
      } catch (err) {
        return refused(err)
      }
    }
    this.creating ??= this.createNew(call).finally(() => {
      this.creating = null
    })
    return this.creating
  }

  async get(caller: JobCaller): Promise<JobReply> {
    const job = this.store.job()
    if (!job || !visibleTo(job, caller)) return refused(jobNotFound())
    try {
      return { ok: true, job: await this.answer(job) }
    } catch (err) {
      return refused(err)
    }
  }

  /**
   * DELETE: a queued job is cancelled (its reservation released); a finished job has its content
   * erased (metadata, digests and scores kept); a started job is left alone (409).
   */
  async remove(caller: JobCaller): Promise<JobReply> {
    try {
      const job = this.store.job()
      if (!job || !visibleTo(job, caller)) throw jobNotFound()
      if (job.principal !== caller.principal && !canManageJobs(caller.role)) {
        throw new AppError(
          403,
          'job_management_denied',
          'Only the member who created this job, or a workspace owner or admin, can cancel or erase it.',
        )
      }
      const now = this.now()
      const cancelled = job.status === 'queued'
      if (cancelled) {
        this.commit({ status: 'cancelled', completed_at: now, next_attempt_at: null }, now)
        this.store.unschedule('advance')
        this.store.schedule('meter_settle', now)
      } else if (isTerminal(job.status)) {
        if (job.erased_at === null) {
          this.content.erase()
          this.commit({ erased_at: now }, now)
        }
      } else {
        throw new AppError(
          409,
          'job_started',
          `The job is ${job.status.replaceAll('_', ' ')}: execution has started, so it can no longer be cancelled safely. Wait until it ends, then DELETE it again to erase its content.`,
        )
      }
      await this.armAlarm()
      // The place in line is given back before the answer, so the jobs behind it have moved up when
      // the client looks; if the queue cannot be reached, the due release_slot gives it back later.
      if (cancelled) await this.runSlot.release().catch((err) => logRunQueueTrouble('release', err))
      const after = this.store.job()
      if (!after) throw new Error('the job row vanished')
      return { ok: true, job: await this.answer(after) }
    } catch (err) {
      return refused(err)
    }
  }

  /** GET .../receipt: the signed receipt and where it is logged; 404 until it is issued. */
  async receipt(caller: JobCaller, jwksUrl: string): Promise<ReceiptReply> {
    return this.receipts.read(caller, jwksUrl)
  }

  /** Re-arms the alarm (a nudge; the due work decides what runs). */
  async wake(): Promise<void> {
    await this.armAlarm()
  }

  /** The run queue's call (run-queue.protocol.ts): a slot is this job's, or is it still used? */
  async runSlotGranted(jobId: string): Promise<SlotAnswer> {
    return this.runSlot.granted(jobId)
  }

  // --- the QPU port (durable-objects/reasoning-job/quantum/qpu-queue.ts): what the queue consumer calls ------------------

  async qpuClaim(attemptId: string): Promise<QpuClaim> {
    return this.hardware.claim(attemptId)
  }

  async qpuSubmitted(
    attemptId: string,
    _token: string,
    providerJobId: string,
    adopted: boolean,
  ): Promise<void> {
    await this.hardware.submitted(attemptId, providerJobId, adopted)
  }

  async qpuRelease(attemptId: string, token: string): Promise<void> {
    await this.hardware.released(attemptId, token)
  }

  async qpuOutcomeUnknown(attemptId: string, _token: string, detail: string): Promise<void> {
    await this.hardware.outcomeUnknown(attemptId, detail)
  }

  async qpuFinished(attemptId: string, _token: string, outcome: QpuOutcome): Promise<void> {
    await this.hardware.finished(attemptId, outcome)
  }

  async qpuUnreachable(attemptId: string, detail: string): Promise<void> {
    await this.hardware.unreachable(attemptId, detail)
  }

  // --- creation ---------------------------------------------------------------------------------

  private async createNew(call: CreateJobCall): Promise<JobReply> {
    try {
      const { identity, request, jobId } = call
      const settings = this.host.settings
      const { catalog } = resolvePlan(this.env, identity.planId)
      const tokens = quotedTokens(request.model, request.prompt)
      // The content is sealed before anything is reserved: no keys, no job (503, nothing held).
      const { wrappedKey, sealedPrompt } = await sealNewPrompt(
        this.env.CONTENT_KEKS,
        { tenantId: identity.tenantId, jobId },
        request.prompt,
      )
      const grant = await reserveJobQuote(
        this.env,
        identity,
        { jobId, model: request.model, tokens },
        catalog,
      )
      const now = this.now()
      this.store.createJob({
        jobId,
        tenantId: identity.tenantId,
        principal: principalId(identity),
        model: request.model,
        product: request.product,
        requestedReal: request.product !== 'simulation_cloud',
        testMode: isTestMode(identity),
        workspaceId: request.workspace_id ?? null,
        providerConnectionId: request.provider_connection_id ?? null,
        requestId: call.requestId,
        candidateCount: CANDIDATES_PER_MODEL[request.model],
        maxAttempts: settings.maxAttempts,
        // Real hardware is asked for at selection time (job-qpu.ts), when the scores exist.
        realRequestStatus: 'not_requested',
        quotedUnits: estimateCostUnits(request.model, tokens),
        meter: { identity, grant },
        now,
      })
      this.store.setDataKey(wrappedKey)
      this.store.setContent('prompt', sealedPrompt)
      this.store.schedule('advance', now)
      this.store.schedule('record_sync', now)
      // The index row before the answer, so the job is in the list as soon as the client has its id.
      await syncJobRecord(this.host, this.views)
      // Its place in the run queue too (the answer shows it); if the queue cannot be reached, the
      // due `advance` asks again.
      await this.runSlot.request().catch((err) => logRunQueueTrouble('enqueue', err))
      await this.armAlarm()
      const job = this.store.job()
      if (!job) throw new Error('the job was not stored')
      return { ok: true, job: await this.answer(job) }
    } catch (err) {
      return refused(err)
    }
  }

  /** What the job's caller sees: the record with its content, and its place in line while it waits. */
  private async answer(job: JobRow): Promise<ReasoningJobRecord> {
    const [record, position] = await Promise.all([this.views.view(job, true), this.runSlot.position(job)])
    return position === null ? record : { ...record, queue_position: position }
  }

  // --- the alarm --------------------------------------------------------------------------------

  override async alarm(): Promise<void> {
    // Steps chain (each transition schedules the next at once): run what is due until nothing is.
    for (let round = 0; round < 64; round++) {
      const due = this.store.nextDue(this.now())
      if (!due) break
      try {
        await this.run(due.kind)
      } catch (err) {
        log('error', 'reasoning_step_crashed', { kind: due.kind, ...errorFields(err) })
        this.store.schedule(due.kind, this.now() + RETRY_CRASHED_STEP_MS)
      }
    }
    await this.armAlarm()
  }

  /** Which capability runs a kind of due work; side work is due again before it runs. */
  private async run(kind: DueWorkKind): Promise<void> {
    switch (kind) {
      case 'record_sync':
        this.store.schedule('record_sync', this.now() + indexRetryDelay(this.host))
        return syncJobRecord(this.host, this.views)
      case 'meter_settle':
        this.store.schedule('meter_settle', this.now() + RETRY_SIDE_WORK_MS)
        return settleJobUsage(this.host, this.views)
      case 'issue_receipt':
        this.store.schedule('issue_receipt', this.now() + RETRY_SIDE_WORK_MS)
        return this.receipts.issue()
      case 'advance':
        return this.steps.advance()
      case 'qpu_dispatch':
        return this.hardware.dispatch()
      case 'qpu_reconcile':
        return this.hardware.reconcile()
      case 'qpu_settle':
        this.store.schedule('qpu_settle', this.now() + RETRY_SIDE_WORK_MS)
        return this.hardware.settle()
      case 'release_slot':
        this.store.schedule('release_slot', this.now() + RETRY_SIDE_WORK_MS)
        return this.runSlot.release()
    }
  }
}
