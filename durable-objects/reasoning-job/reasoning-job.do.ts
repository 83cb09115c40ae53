/**
 * ReasoningJob: one Durable Object per reasoning job (named by tenant and job id), the durable
 * home of the job's state machine (docs/reasoning-jobs.md):
 *
 *   queued → generating_candidates → scoring → selecting → completed | classical_fallback
 *                      └──────────────┴──────────┴──→ failed            queued → cancelled
 *   managed_qpu, byopa_managed:          selecting → awaiting_qpu → completed | classical_fallback
 *
 * - Append state first, then act: every transition is written to SQLite together with the due
 *   work it implies (one implicit transaction), then the object acts (calls models, writes the
 *   Postgres index, settles metering). A crash at any point leaves the due work in storage; the
 *   alarm runs it again, and every step is idempotent: a candidate or a verdict is stored once
 *   (its slot), a step only runs for the slots still empty, metering settles once per reservation.
 * - One alarm drives the due-work table (`advance`, `record_sync`, `meter_settle`), re-armed to
 *   the earliest row. A step that fails transiently (providers down or busy) is retried with
 *   exponential backoff (`attempt_count`, `max_attempts`, `next_attempt_at`); a permanent failure,
 *   or the last attempt, ends the job `failed` with `error {code, message}`.
 * - Real hardware (docs/quantum-selector.md): `selecting` reserves one real_qpu request and stores
 *   the QPU attempt (qpu.store.ts) → `awaiting_qpu`; due work sends the attempt's message to the QPU
 *   queue (`qpu_dispatch`, then a re-drive watchdog), the queue consumer drives the attempt through
 *   this object's QPU port (`qpu*` RPC methods), an unknown outcome is looked up at the provider
 *   (`qpu_reconcile`), and the reservation is committed or released once (`qpu_settle`).
 * - Credits: the job's quote is reserved with the tenant's RateLimiter before the job exists
 *   (refusals are the create request's 402/403/429), committed with the usage when it completes,
 *   released when it fails or is cancelled. The settle is due work written with the terminal state.
 * - The run slot (docs/reasoning-jobs.md, "The run queue"): a queued job leaves `queued` only with a
 *   slot of its workspace's ReasoningRunQueue. `advance` of a queued job asks for one (`enqueue`,
 *   again every SLOT_RECHECK_MS while it waits); the queue grants it later with `runSlotGranted`.
 *   Every terminal state writes `release_slot` due work with it, which gives the slot back.
 */
import { DurableObject } from 'cloudflare:workers'
import { toBase64 } from '../../shared/audit/checkpoint'
import { sha256Hex } from '../../shared/crypto/digests'
import { AppError, toAppError } from '../../shared/http/errors'
import {
  CREDIT_UNITS_PER_CENT,
  estimateCostUnits,
  type MeterGrant,
  meteringUnavailable,
  openMeter,
  outcomeStatus,
  usageCostUnits,
} from '../../shared/metering'
import { actionRequiredError, checkFeatureAccess, resolvePlan } from '../../shared/plans'
import { countTextTokens } from '../../shared/providers/tokenizer'
import { openQpuProvider } from '../../shared/quantum/providers/ionq-v03'
import { managedAccount, openQpuAccount } from '../../shared/quantum/providers/provider-accounts'
import type { QpuClaim, QpuJobPort, QpuOutcome, QpuQueueMessage } from '../../shared/quantum/qpu-queue'
import { type Identity, isTestMode, type Mode, principalId } from '../../shared/worker/request-context'
import { appendAuditEvent } from '../audit-log/audit-client'
import { indexRetryDelayMs, writeIndex } from '../postgres-index'
import {
  type EnqueueReply,
  type RunSlotHolder,
  runQueueName,
  type SlotAnswer,
} from '../reasoning-run-queue/run-queue.protocol'
import {
  type ContentCipher,
  contentCipher,
  contentKeyring,
  newWrappedDataKey,
  rewrapDataKey,
  wrappingKid,
} from './content-crypto'
import {
  type InferenceReceiptResponse,
  RECEIPT_SIGNING_ALGORITHM,
  RECEIPT_TYPE,
  type ReceiptStatement,
  receiptDigest,
  receiptPayload,
  signReceipt,
} from './inference-receipt'
import {
  isTerminal,
  type JobCreateRequest,
  type ReasoningJob as ReasoningJobRecord,
  SCORING_METHOD_OF,
} from './job.schemas'
import { writeJobIndex } from './job-index'
import {
  CANDIDATE_MAX_TOKENS,
  CANDIDATES_PER_MODEL,
  JUDGE_MAX_TOKENS,
  type ReasoningSettings,
  reasoningSettingsFromEnv,
  retryDelayMs,
} from './job-settings'
import { type CallFailure, generateCandidate, judgePair, type ModelCallContext } from './model-calls'
import { QpuStore } from './qpu.store'
import {
  claim as claimAttempt,
  finished as finishedAttempt,
  isSettled as isAttemptSettled,
  newAttempt,
  nextReconcileAt,
  outcomeUnknown as outcomeUnknownAttempt,
  type QpuAttempt,
  reconcileFound,
  reconcileMiss,
  release as releaseAttempt,
  submitted as submittedAttempt,
  unreachable as unreachableAttempt,
} from './qpu-attempt'
import { type QpuSettings, qpuSettingsFromEnv } from './qpu-settings'
import {
  buildSelectionCircuit,
  candidateFrequencies,
  DEFAULT_SHOTS,
  drawShots,
  frequenciesToCounts,
  readSelection,
  selectForSimulationCloud,
} from './quantum-selection'
import type { ReasoningJobEnv } from './reasoning-job.context'
import {
  type CandidateRow,
  type DueWorkKind,
  type JobChange,
  type JobRow,
  JobStore,
  toUsage,
} from './reasoning-job.store'
import { comparisonKey, hiveScores, judgeComparisons, swarmScores } from './scoring'
import { classicalSelector } from './selector'

/** How soon a failed index write or an unacknowledged settle is tried again. */
const RETRY_SIDE_WORK_MS = 5_000
/** A step that threw (a bug, storage trouble) is not retried in a tight loop. */
const RETRY_CRASHED_STEP_MS = 5_000
/** Tokens of the fixed prompt text around the user's prompt (system prompt, judge rubric). */
const PROMPT_OVERHEAD_TOKENS = 64
/**
 * How often a job waiting for a run slot asks its queue again (the queue tells it when a slot is
 * free; this re-drives a lost enqueue or a queue that lost track of it).
 */
const SLOT_RECHECK_MS = 60_000
/** A job has one QPU attempt: the queue's retries and the reconciler all work on it. */
const QPU_ATTEMPT_ID = 'attempt-1'
/** A paid tool's settle carries no tokens. */
const NO_TOKENS = {
  promptTokens: 0,
  completionTokens: 0,
  totalTokens: 0,
  cachedTokens: 0,
  reasoningTokens: 0,
}
/** Plan refusals of the real_qpu reservation that mean the allowance (or what pays beyond it) is spent. */
const ALLOWANCE_REFUSALS = new Set([
  'tier_allowance_exhausted',
  'insufficient_credits',
  'overage_cap_reached',
])

/** The object of a job: named by tenant and job id, so another tenant's id reaches an empty object. */
export function jobObjectName(tenantId: string, jobId: string): string {
  return `${tenantId}/${jobId}`
}

/**
 * Who asks: the job's tenant and mode must match (another mode's job is as absent as another
 * tenant's); the principal and role decide who may delete.
 */
export interface JobCaller {
  tenantId: string
  mode: Mode
  principal: string
  role: 'owner' | 'admin' | 'member'
}

export interface CreateJobCall {
  jobId: string
  identity: Identity
  request: JobCreateRequest
  /** The x-request-id of the request that created the job. */
  requestId: string
}

/** Errors cross RPC as data (an AppError's class does not survive serialisation). */
export interface JobErrorData {
  status: number
  code: string
  message: string
  param: string | null
  headers: Record<string, string>
  extraBody: Record<string, unknown> | null
}

export type ReceiptReply =
  | { ok: true; receipt: InferenceReceiptResponse }
  | { ok: false; error: JobErrorData }

export type JobReply = { ok: true; job: ReasoningJobRecord } | { ok: false; error: JobErrorData }

export function errorData(err: unknown): JobErrorData {
  const e = toAppError(err)
  if (e.status >= 500) {
    console.error(JSON.stringify({ level: 'error', code: e.code, detail: e.internalMessage ?? e.message }))
  }
  return {
    status: e.status,
    code: e.code,
    message: e.message,
    param: e.param,
    headers: e.headers,
    extraBody: e.extraBody ?? null,
  }
}

export function jobNotFound(): AppError {
  return new AppError(
    404,
    'job_not_found',
    'No reasoning job with this id exists in your workspace. Check the id (it is the `id` of the job the create request returned).',
    { param: 'jobId' },
  )
}

/** Whether the job is in the caller's tenant and mode: anything else is a job that does not exist. */
function visibleTo(job: JobRow, caller: Pick<JobCaller, 'tenantId' | 'mode'>): boolean {
  return job.tenant_id === caller.tenantId && job.test_mode === (caller.mode === 'test')
}

/** Whether a caller may cancel or erase another member's job: owners and admins. */
export function canManageJobs(role: JobCaller['role']): boolean {
  return role === 'owner' || role === 'admin'
}

/** Tokens a job may use at most: the quote reserved at creation. */
export function quotedTokens(model: JobCreateRequest['model'], prompt: string): number {
  const n = CANDIDATES_PER_MODEL[model]
  const promptTokens = countTextTokens(prompt) + PROMPT_OVERHEAD_TOKENS
  const candidates = n * (promptTokens + CANDIDATE_MAX_TOKENS)
  const comparisons = SCORING_METHOD_OF[model] === 'swarm_judge' ? n * (n - 1) : 0
  const judging = comparisons * (promptTokens + 2 * CANDIDATE_MAX_TOKENS + JUDGE_MAX_TOKENS)
  return candidates + judging
}

/** The content name of a candidate's text (bound into its ciphertext's associated data). */
function candidateName(idx: number): string {
  return `candidate:${idx}`
}

function iso(ms: number): string {
  return new Date(ms).toISOString()
}

function credits(units: number): number {
  return Math.round((units / CREDIT_UNITS_PER_CENT) * 1e4) / 1e4
}

export class ReasoningJob extends DurableObject<ReasoningJobEnv> implements QpuJobPort, RunSlotHolder {
  readonly store: JobStore
  readonly qpu: QpuStore
  /** The create in progress (its reservation is being asked for): a second create awaits it. */
  private creating: Promise<JobReply> | null = null
  /** The opened data key, per keyring (cleared by erasure and rotation). */
  private cipherCache: { wrapped: string; cipher: ContentCipher } | null = null

  constructor(ctx: DurableObjectState, env: ReasoningJobEnv) {
    super(ctx, env)
    this.store = new JobStore(ctx.storage.sql)
    this.qpu = new QpuStore(ctx.storage.sql)
    void ctx.blockConcurrencyWhile(async () => {
      this.store.migrate()
      this.qpu.migrate()
      // Self-heal: whatever is due (a step cut off by a restart) gets its alarm.
      await this.armAlarm()
    })
  }

  get settings(): ReasoningSettings {
    return reasoningSettingsFromEnv(this.env)
  }

  get qpuSettings(): QpuSettings {
    return qpuSettingsFromEnv(this.env)
  }

  now(): number {
    return Date.now()
  }

  // --- RPC --------------------------------------------------------------------------------------

  /**
   * Creates the job, or answers the one this object already holds (a repeated or concurrent
   * create of the same job id: the reasoning worker only sends the same request for one id).
   */
  async create(call: CreateJobCall): Promise<JobReply> {
    const existing = this.store.job()
    if (existing) {
      if (!visibleTo(existing, call.identity)) return { ok: false, error: errorData(jobNotFound()) }
      try {
        return { ok: true, job: await this.answer(existing) }
      } catch (err) {
        return { ok: false, error: errorData(err) }
      }
    }
    this.creating ??= this.createNew(call).finally(() => {
      this.creating = null
    })
    return this.creating
  }

  async get(caller: JobCaller): Promise<JobReply> {
    const job = this.store.job()
    if (!job || !visibleTo(job, caller)) return { ok: false, error: errorData(jobNotFound()) }
    try {
      return { ok: true, job: await this.answer(job) }
    } catch (err) {
      return { ok: false, error: errorData(err) }
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
          this.store.eraseContent()
          this.cipherCache = null
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
      if (cancelled) await this.releaseRunSlot().catch((err) => this.logSlotTrouble('release', err))
      const after = this.store.job()
      if (!after) throw new Error('the job row vanished')
      return { ok: true, job: await this.answer(after) }
    } catch (err) {
      return { ok: false, error: errorData(err) }
    }
  }

  /** Re-arms the alarm (a nudge; the due work decides what runs). */
  async wake(): Promise<void> {
    await this.armAlarm()
  }

  // --- creation ---------------------------------------------------------------------------------

  private async createNew(call: CreateJobCall): Promise<JobReply> {
    try {
      const { identity, request, jobId } = call
      const settings = this.settings
      const { catalog } = resolvePlan(this.env, identity.planId)
      const tokens = quotedTokens(request.model, request.prompt)
      // The content is sealed before anything is reserved: no keys, no job (503, nothing held).
      const ring = await contentKeyring(this.env.CONTENT_KEKS)
      const place = { tenantId: identity.tenantId, jobId }
      const wrappedKey = await newWrappedDataKey(ring, place)
      const sealedPrompt = await (await contentCipher(ring, place, wrappedKey)).seal('prompt', request.prompt)
      const meter = openMeter(this.env.RATE_LIMITER, identity, 'reasoning.jobs', { leases: false })
      let grant: Awaited<ReturnType<typeof meter.acquire>>
      try {
        grant = await meter.acquire(
          { requestId: `reasoning-job:${jobId}`, model: request.model, estimatedTokens: tokens },
          catalog,
        )
      } catch (err) {
        throw err instanceof AppError
          ? err
          : meteringUnavailable(err instanceof Error ? err.message : String(err))
      }
      const now = this.now()
      const requestedReal = request.product !== 'simulation_cloud'
      this.store.createJob({
        jobId,
        tenantId: identity.tenantId,
        principal: principalId(identity),
        model: request.model,
        product: request.product,
        requestedReal,
        testMode: isTestMode(identity),
        workspaceId: request.workspace_id ?? null,
        providerConnectionId: request.provider_connection_id ?? null,
        requestId: call.requestId,
        candidateCount: CANDIDATES_PER_MODEL[request.model],
        maxAttempts: settings.maxAttempts,
        // Real hardware is asked for at selection time (selectOnHardware), when the scores exist.
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
      await this.syncRecord()
      // Its place in the run queue too (the answer shows it); if the queue cannot be reached, the
      // due `advance` asks again.
      await this.requestRunSlot().catch((err) => this.logSlotTrouble('enqueue', err))
      await this.armAlarm()
      const job = this.store.job()
      if (!job) throw new Error('the job was not stored')
      return { ok: true, job: await this.answer(job) }
    } catch (err) {
      return { ok: false, error: errorData(err) }
    }
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
        console.error(
          JSON.stringify({
            level: 'error',
            event: 'reasoning_step_crashed',
            kind: due.kind,
            detail: String(err),
          }),
        )
        this.store.schedule(due.kind, this.now() + RETRY_CRASHED_STEP_MS)
      }
    }
    await this.armAlarm()
  }

  private async run(kind: DueWorkKind): Promise<void> {
    switch (kind) {
      case 'record_sync':
        this.store.schedule('record_sync', this.now() + this.indexRetryDelay())
        await this.syncRecord()
        return
      case 'meter_settle':
        this.store.schedule('meter_settle', this.now() + RETRY_SIDE_WORK_MS)
        await this.settle()
        return
      case 'issue_receipt':
        this.store.schedule('issue_receipt', this.now() + RETRY_SIDE_WORK_MS)
        await this.issueReceipt()
        return
      case 'advance':
        await this.advance()
        return
      case 'qpu_dispatch':
        await this.dispatchQpu()
        return
      case 'qpu_reconcile':
        await this.reconcileQpu()
        return
      case 'qpu_settle':
        this.store.schedule('qpu_settle', this.now() + RETRY_SIDE_WORK_MS)
        await this.settleQpu()
        return
      case 'release_slot':
        this.store.schedule('release_slot', this.now() + RETRY_SIDE_WORK_MS)
        await this.releaseRunSlot()
        return
    }
  }

  /** One step of the state machine, from the stored state. */
  private async advance(): Promise<void> {
    const job = this.store.job()
    if (!job || isTerminal(job.status)) {
      this.store.unschedule('advance')
      return
    }
    switch (job.status) {
      case 'queued':
        // Only with a run slot of the workspace's queue; without one, ask for it (and wait).
        if (this.store.runSlot() !== 'admitted') return this.requestRunSlot()
        this.commit({ status: 'generating_candidates', outcome_state: 'in_progress' }, this.now())
        this.store.schedule('advance', this.now())
        return
      case 'generating_candidates':
        return this.generate(job)
      case 'scoring':
        return this.score(job)
      case 'selecting':
        return this.select(job)
      case 'awaiting_qpu':
        // The queue consumer and the QPU due work move it on from here.
        this.store.unschedule('advance')
        return
    }
  }

  private modelContext(job: JobRow): ModelCallContext {
    return { alias: job.model, testMode: job.test_mode, env: this.env, requestId: job.request_id }
  }

  /**
   * The job's content cipher: its data key unwrapped with CONTENT_KEKS. A data key wrapped under a
   * KEK that is no longer the first is re-wrapped under the first (rotation), before it is used.
   */
  private async cipher(job: JobRow): Promise<ContentCipher> {
    const ring = await contentKeyring(this.env.CONTENT_KEKS)
    let wrapped = this.store.dataKey()
    if (wrapped === null) throw new Error('the job has no data key (erased)')
    const place = { tenantId: job.tenant_id, jobId: job.job_id }
    if (wrappingKid(wrapped) !== ring.firstKid) {
      const rewrapped = await rewrapDataKey(ring, place, wrapped)
      // Only if nothing replaced or erased it meanwhile (the read is the compare).
      if (this.store.dataKey() !== wrapped) return this.cipher(job)
      this.store.setDataKey(rewrapped)
      wrapped = rewrapped
    }
    if (this.cipherCache?.wrapped !== wrapped) {
      this.cipherCache = { wrapped, cipher: await contentCipher(ring, place, wrapped) }
    }
    return this.cipherCache.cipher
  }

  private async prompt(job: JobRow): Promise<string> {
    const prompt = this.store.content('prompt')
    if (prompt === null) throw new Error('the job has no prompt')
    return (await this.cipher(job)).open('prompt', prompt)
  }

  /** The stored candidates with their texts opened. */
  private async openCandidates(job: JobRow): Promise<(CandidateRow & { content: string })[]> {
    const rows = this.store.candidates()
    if (rows.length === 0) return []
    const cipher = await this.cipher(job)
    return Promise.all(
      rows.map(async (c) => ({ ...c, content: await cipher.open(candidateName(c.idx), c.text) })),
    )
  }

  /** generating_candidates: one model call per empty candidate slot, in parallel. */
  private async generate(job: JobRow): Promise<void> {
    const have = new Set(this.store.candidates().map((c) => c.idx))
    const missing = Array.from({ length: job.candidate_count }, (_, i) => i).filter((i) => !have.has(i))
    const prompt = await this.prompt(job)
    const cipher = await this.cipher(job)
    const context = this.modelContext(job)
    const withLogprobs = SCORING_METHOD_OF[job.model] === 'hive_logprob'
    const failures: CallFailure[] = []
    // Each candidate is stored as soon as it arrives: a crash mid-step redoes only the missing ones.
    await Promise.all(
      missing.map(async (idx) => {
        const result = await generateCandidate(context, prompt, idx, withLogprobs)
        if (!result.ok) {
          failures.push(result.failure)
          return
        }
        const { text, logprobs, finishReason, usage, provider } = result.value
        const digest = `sha256:${sha256Hex(text)}`
        const sealed = await cipher.seal(candidateName(idx), text)
        this.store.addCandidate({
          idx,
          text: sealed,
          digest,
          logprobs,
          finish_reason: finishReason,
          provider,
          usage: toUsage(usage),
          created_at: this.now(),
        })
      }),
    )
    if (failures.length > 0) return this.stepFailed(job, failures)
    this.commit({ status: 'scoring', attempt_count: 0, next_attempt_at: null }, this.now())
    this.store.schedule('advance', this.now())
  }

  /** scoring: hive_logprob from the stored logprobs; swarm_judge with a judge call per comparison. */
  private async score(job: JobRow): Promise<void> {
    const candidates = await this.openCandidates(job)
    if (SCORING_METHOD_OF[job.model] === 'hive_logprob') {
      const scores = hiveScores(candidates.map((c) => ({ text: c.content, logprobs: c.logprobs_json })))
      for (const [i, score] of scores.entries()) this.store.setEvidence(candidates[i]!.idx, { ...score })
    } else {
      const judged = new Set(this.store.verdicts().map((v) => v.comparison))
      const missing = judgeComparisons(candidates.length).filter((c) => !judged.has(comparisonKey(c)))
      const prompt = await this.prompt(job)
      const context = this.modelContext(job)
      const failures: CallFailure[] = []
      await Promise.all(
        missing.map(async (c) => {
          const result = await judgePair(
            context,
            prompt,
            candidates[c.first]!.content,
            candidates[c.second]!.content,
          )
          if (!result.ok) {
            failures.push(result.failure)
            return
          }
          this.store.addVerdict({
            comparison: comparisonKey(c),
            first: c.first,
            second: c.second,
            verdict: result.value.verdict,
            valid: result.value.valid,
            provider: result.value.provider,
            usage: toUsage(result.value.usage),
          })
        }),
      )
      if (failures.length > 0) return this.stepFailed(job, failures)
      const verdicts = new Map(this.store.verdicts().map((v) => [v.comparison, v.verdict] as const))
      const scores = swarmScores(candidates.length, verdicts)
      for (const [i, score] of scores.entries()) this.store.setEvidence(candidates[i]!.idx, { ...score })
    }
    this.commit({ status: 'selecting', attempt_count: 0, next_attempt_at: null }, this.now())
    this.store.schedule('advance', this.now())
  }

  /**
   * selecting: simulation_cloud runs the quantum selector on the product's simulator
   * (quantum-selection.ts: QAOA, seeded shots; an invalid outcome or the simulator's bounds fall back
   * to the classical argmax); managed_qpu and byopa_managed reserve the real_qpu allowance and send
   * the same circuit to the provider through the QPU queue (selectOnHardware). The classical argmax
   * is always recorded beside the answer (`classical_choice` on its candidate), and each candidate's
   * share of the shots (`quantum_frequency`) is kept as selection evidence.
   */
  private async select(job: JobRow): Promise<void> {
    if (job.product !== 'simulation_cloud') return this.selectOnHardware(job)
    const candidates = this.store.candidates()
    const scores = this.scores(candidates)
    const classical = classicalSelector.select(scores)
    const quantum = selectForSimulationCloud(scores, job.job_id, classical)
    this.recordSelectionEvidence(candidates, quantum.classicalIndex, quantum.frequencies)
    this.finishSelection(
      {
        status: quantum.fallbackReason ? 'classical_fallback' : 'completed',
        fallback_reason: quantum.fallbackReason,
        selected_index: quantum.index,
        selector_backend: quantum.backend,
        selector_confidence: quantum.confidence,
      },
      this.now(),
    )
  }

  private scores(candidates: readonly CandidateRow[]): number[] {
    return candidates.map((c) => Number(c.evidence_json?.score ?? 0))
  }

  private recordSelectionEvidence(
    candidates: readonly CandidateRow[],
    classicalIndex: number,
    frequencies: readonly number[],
  ): void {
    for (const [i, c] of candidates.entries()) {
      this.store.setEvidence(c.idx, {
        ...(c.evidence_json ?? {}),
        classical_choice: i === classicalIndex,
        ...(frequencies.length ? { quantum_frequency: frequencies[i] ?? 0 } : {}),
      })
    }
  }

  /** The selection is made: the job ends, its token reservation is settled. */
  private finishSelection(change: JobChange, now: number): void {
    this.commit(
      {
        outcome_state: 'committed',
        ...change,
        attempt_count: 0,
        next_attempt_at: null,
        completed_at: now,
      },
      now,
    )
    this.store.unschedule('advance')
    this.store.schedule('meter_settle', now)
    this.store.schedule('issue_receipt', now)
  }

  /** The classical argmax answers: real hardware was not used (`realRequestStatus` says why). */
  private finishClassical(
    realRequestStatus: JobRow['real_request_status'],
    error: { code: string; message: string } | null,
    change: JobChange = {},
  ): void {
    const candidates = this.store.candidates()
    const classical = classicalSelector.select(this.scores(candidates))
    this.recordSelectionEvidence(candidates, classical.index, [])
    this.finishSelection(
      {
        status: 'classical_fallback',
        fallback_reason: 'selector_unreachable',
        selected_index: classical.index,
        selector_backend: classical.backend,
        selector_confidence: classical.confidence,
        real_request_status: realRequestStatus,
        error,
        ...change,
      },
      this.now(),
    )
  }

  /** A round of calls left slots empty: retry with backoff, or fail the job. */
  private stepFailed(job: JobRow, failures: readonly CallFailure[]): void {
    const now = this.now()
    const permanent = failures.find((f) => f.kind === 'permanent')
    const attempt = job.attempt_count + 1
    const failure = permanent ?? failures[0]!
    if (permanent || attempt >= job.max_attempts) {
      const message = permanent
        ? failure.message
        : `${failure.message} (gave up after ${attempt} attempts of the ${job.status.replaceAll('_', ' ')} step)`
      this.commit(
        {
          status: 'failed',
          error: { code: failure.code, message },
          outcome_state: 'committed',
          attempt_count: attempt,
          next_attempt_at: null,
          completed_at: now,
        },
        now,
      )
      this.store.unschedule('advance')
      this.store.schedule('meter_settle', now)
      return
    }
    const next = now + retryDelayMs(attempt, this.settings)
    this.commit({ attempt_count: attempt, next_attempt_at: next }, now)
    this.store.schedule('advance', next)
  }

  /** A state change, and the index write it implies (due now); a job that ends frees its run slot. */
  private commit(change: JobChange, now: number): void {
    this.store.update(change, now)
    this.store.schedule('record_sync', now)
    if (change.status && isTerminal(change.status)) this.store.schedule('release_slot', now)
  }

  // --- the run slot (durable-objects/reasoning-run-queue/) ----------------------------------------

  private runQueue(job: JobRow) {
    const queues = this.env.REASONING_RUN_QUEUE
    return queues.get(queues.idFromName(runQueueName(job.tenant_id, job.test_mode ? 'test' : 'live')))
  }

  /**
   * A queued job asks its workspace's run queue for a slot (idempotent: a repeat answers where it
   * stands). The next ask is due before the call, so a lost call or answer is asked again.
   */
  private async requestRunSlot(): Promise<void> {
    const job = this.store.job()
    if (job?.status !== 'queued') return
    const now = this.now()
    this.store.schedule('advance', now + SLOT_RECHECK_MS)
    const { plan } = resolvePlan(this.env, job.meter_json.identity.planId)
    const reply: EnqueueReply = await this.runQueue(job).enqueue({
      jobId: job.job_id,
      holder: jobObjectName(job.tenant_id, job.job_id),
      slots: plan.reasoningConcurrency,
    })
    // Cancelled while the call was out: its release is due, nothing to start.
    if (this.store.job()?.status !== 'queued') return
    const at = this.now()
    if (reply.state === 'waiting') {
      // A grant that overtook this answer stands.
      if (this.store.runSlot() !== 'admitted') this.store.setRunSlot('waiting', at)
      return
    }
    // `released` cannot happen to a queued job; starting is what keeps it from waiting forever.
    this.store.setRunSlot('admitted', at)
    this.store.schedule('advance', at)
  }

  /**
   * The queue's call: a slot is this job's (or the watchdog asks whether it still uses it). A queued
   * job starts at once; a finished or unknown one answers 'finished', which frees the slot.
   */
  async runSlotGranted(jobId: string): Promise<SlotAnswer> {
    const job = this.store.job()
    if (!job || job.job_id !== jobId || isTerminal(job.status) || this.store.runSlot() === 'released') {
      return 'finished'
    }
    if (this.store.runSlot() !== 'admitted') {
      const now = this.now()
      this.store.setRunSlot('admitted', now)
      if (job.status === 'queued') this.store.schedule('advance', now)
      await this.armAlarm()
    }
    return 'running'
  }

  /** release_slot: the slot (or the place in line) goes back to the queue, once acknowledged. */
  private async releaseRunSlot(): Promise<void> {
    const job = this.store.job()
    if (!job || !isTerminal(job.status) || this.store.runSlot() === 'released') {
      this.store.unschedule('release_slot')
      return
    }
    await this.runQueue(job).release(job.job_id)
    this.store.setRunSlot('released', this.now())
    this.store.unschedule('release_slot')
  }

  private logSlotTrouble(step: 'enqueue' | 'release', err: unknown): void {
    console.error(
      JSON.stringify({ level: 'error', event: 'reasoning_run_queue_unreachable', step, detail: String(err) }),
    )
  }

  /** The job's place among its workspace's waiting jobs, or null once it has a slot. */
  private async queuePosition(job: JobRow): Promise<number | null> {
    if (job.status !== 'queued' || this.store.runSlot() !== 'waiting') return null
    try {
      return await this.runQueue(job).position(job.job_id)
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

  /** What the job's caller sees: the record with its content, and its place in line while it waits. */
  private async answer(job: JobRow): Promise<ReasoningJobRecord> {
    const [record, position] = await Promise.all([this.view(job, true), this.queuePosition(job)])
    return position === null ? record : { ...record, queue_position: position }
  }

  // --- real hardware (docs/quantum-selector.md) ---------------------------------------------------

  /** Why this job cannot ask for real hardware at all (nothing is reserved), or null. */
  private hardwareUnavailable(job: JobRow): string | null {
    if (job.test_mode) {
      return 'test keys never run on real quantum hardware (test mode is never billed); use a live key'
    }
    if (job.product === 'managed_qpu' && !managedAccount(this.env)) {
      return 'no managed QPU provider account is configured on this deployment (QPU_IONQ_BASE_URL, QPU_IONQ_API_KEY)'
    }
    if (job.product === 'byopa_managed' && !job.provider_connection_id) {
      return 'a byopa_managed job needs the provider_connection_id of one of your provider connections'
    }
    if (!this.env.QPU_QUEUE) return 'the QPU queue (QPU_QUEUE) is not bound on this deployment'
    return null
  }

  /**
   * selecting, managed_qpu / byopa_managed: reserve one real_qpu request with the tenant's
   * RateLimiter (the plan's feature and monthly allowance decide), store the attempt with its
   * reservation, and wait for the queue (awaiting_qpu). A refusal ends the job with the classical
   * argmax and says why (quantum_not_enabled, quantum_allowance_exhausted).
   */
  private async selectOnHardware(job: JobRow): Promise<void> {
    const unavailable = this.hardwareUnavailable(job)
    if (unavailable) {
      return this.finishClassical('quantum_not_enabled', {
        code: 'quantum_not_enabled',
        message: unavailable,
      })
    }
    let circuit: ReturnType<typeof buildSelectionCircuit>['circuit']
    try {
      circuit = buildSelectionCircuit(this.scores(this.store.candidates())).circuit
    } catch (err) {
      return this.finishClassical('not_requested', {
        code: 'selector_unreachable',
        message: `the selection circuit could not be built: ${err instanceof Error ? err.message : String(err)}`,
      })
    }
    const { identity } = job.meter_json
    const { plan, catalog } = resolvePlan(this.env, identity.planId)
    // The plan is read again here: it may have changed since the job was accepted.
    const feature = checkFeatureAccess(plan, 'real_qpu', { catalog })
    if (feature) {
      const refusal = actionRequiredError(feature, { catalog })
      return this.finishClassical('quantum_not_enabled', { code: refusal.code, message: refusal.message })
    }
    let grant: MeterGrant
    try {
      // Not idempotent by request id: a crash before the attempt is stored leaves this reservation
      // to expire in the RateLimiter, and the step reserves again.
      grant = await openMeter(this.env.RATE_LIMITER, identity, 'reasoning.qpu', { leases: false }).acquire(
        {
          requestId: `reasoning-job:${job.job_id}:qpu`,
          model: 'real_qpu',
          estimatedTokens: 0,
          estimatedQuantity: 1,
        },
        catalog,
      )
    } catch (err) {
      if (err instanceof AppError && err.code === 'feature_required') {
        return this.finishClassical('quantum_not_enabled', { code: err.code, message: err.message })
      }
      if (err instanceof AppError && ALLOWANCE_REFUSALS.has(err.code)) {
        return this.finishClassical('quantum_allowance_exhausted', { code: err.code, message: err.message })
      }
      // Metering unreachable, or the tenant's request rate: try the step again with backoff.
      const detail = err instanceof Error ? err.message : String(err)
      const attempt = job.attempt_count + 1
      if (attempt >= job.max_attempts) {
        return this.finishClassical('not_requested', {
          code: 'metering_unavailable',
          message: `the real_qpu allowance could not be reserved after ${attempt} attempts (${detail})`,
        })
      }
      const next = this.now() + retryDelayMs(attempt, this.settings)
      this.commit({ attempt_count: attempt, next_attempt_at: next }, this.now())
      this.store.schedule('advance', next)
      return
    }
    const now = this.now()
    const attempt = newAttempt(QPU_ATTEMPT_ID, {
      name: `svc-reasoning-${job.job_id}`,
      circuit,
      shots: DEFAULT_SHOTS,
      account:
        job.product === 'byopa_managed' && job.provider_connection_id
          ? { kind: 'connection', connection_id: job.provider_connection_id }
          : { kind: 'managed' },
      metadata: { svc_job_id: job.job_id, svc_attempt: QPU_ATTEMPT_ID },
      since: now,
    })
    this.qpu.create(attempt, grant)
    this.commit(
      { status: 'awaiting_qpu', real_request_status: 'reserved', attempt_count: 0, next_attempt_at: null },
      now,
    )
    this.store.unschedule('advance')
    this.store.schedule('qpu_dispatch', now)
  }

  /**
   * qpu_dispatch: sends the attempt's message to the QPU queue, then stays due as a watchdog: when no
   * consumer has asked about the attempt for QPU_REDRIVE_SECONDS (a message lost, the stack
   * restarted), the message is sent again. A duplicate costs nothing: the attempt decides (claim).
   */
  private async dispatchQpu(): Promise<void> {
    const job = this.store.job()
    const record = this.qpu.record()
    if (
      !job ||
      !record ||
      job.status !== 'awaiting_qpu' ||
      isAttemptSettled(record.attempt) ||
      record.attempt.status === 'outcome_unknown'
    ) {
      this.store.unschedule('qpu_dispatch')
      return
    }
    const now = this.now()
    const { redriveMs } = this.qpuSettings
    if (record.lastContactAt > 0 && now - record.lastContactAt < redriveMs) {
      this.store.schedule('qpu_dispatch', record.lastContactAt + redriveMs)
      return
    }
    const queue = this.env.QPU_QUEUE
    if (!queue) {
      await this.applyAttempt(record.attempt.attemptId, (a, at) =>
        unreachableAttempt(a, at, 'the QPU queue (QPU_QUEUE) is not bound on this deployment'),
      )
      return
    }
    this.store.schedule('qpu_dispatch', now + RETRY_SIDE_WORK_MS)
    const message: QpuQueueMessage = {
      v: 1,
      kind: 'submit',
      tenant_id: job.tenant_id,
      job_id: job.job_id,
      attempt_id: record.attempt.attemptId,
    }
    await queue.send(message)
    this.qpu.touch(this.now())
    this.store.schedule('qpu_dispatch', this.now() + redriveMs)
  }

  /**
   * qpu_reconcile: an attempt whose create got no answer. Looks it up at the provider by our
   * metadata: found → adopted (outcome_state reconciled, polled to the end, billed once); not found
   * after the grace period, or the provider unreachable through every lookup → abandoned (nothing
   * ran or is billed, the reservation is released).
   */
  private async reconcileQpu(): Promise<void> {
    const job = this.store.job()
    const record = this.qpu.record()
    if (!job || !record || record.attempt.status !== 'outcome_unknown') {
      this.store.unschedule('qpu_reconcile')
      return
    }
    const before = record.attempt
    this.store.schedule('qpu_reconcile', this.now() + RETRY_SIDE_WORK_MS)
    const { reconcileGraceMs } = this.qpuSettings
    let after: QpuAttempt
    try {
      const account = await openQpuAccount(this.env, job.tenant_id, before.submission.account)
      if (!account) {
        after = unreachableAttempt(
          before,
          this.now(),
          'the provider account of this attempt no longer exists',
        )
      } else {
        const found = await openQpuProvider(account).findByMetadata(
          before.submission.metadata,
          before.submission.since - 60_000,
        )
        after = found
          ? reconcileFound(before, found.id)
          : reconcileMiss(before, this.now(), 'missing', 'not found', reconcileGraceMs)
      }
    } catch (err) {
      after = reconcileMiss(before, this.now(), 'failed', String(err), reconcileGraceMs)
    }
    // A consumer may have resolved the attempt while the lookup ran: its answer stands.
    if (JSON.stringify(this.qpu.record()?.attempt) !== JSON.stringify(before)) return
    this.qpu.saveAttempt(after)
    if (after.status === 'outcome_unknown') {
      this.store.schedule('qpu_reconcile', nextReconcileAt(after, this.now()))
      return
    }
    this.store.unschedule('qpu_reconcile')
    await this.attemptChanged(before, after)
  }

  /** qpu_settle: the real_qpu reservation is committed when a QPU ran the job, released otherwise. */
  private async settleQpu(): Promise<void> {
    const job = this.store.job()
    const record = this.qpu.record()
    if (!job || !record || record.settled || !isTerminal(job.status)) {
      this.store.unschedule('qpu_settle')
      return
    }
    const executed = job.real_request_status === 'executed'
    const delivered = await openMeter(this.env.RATE_LIMITER, job.meter_json.identity, 'reasoning.qpu', {
      leases: false,
    }).settle(
      record.grant,
      executed
        ? {
            usage: NO_TOKENS,
            quantity: 1,
            estimated: false,
            provider: 'ionq',
            status: outcomeStatus('completed'),
          }
        : // Released: the job shows why; its create call succeeded, so no failed request is logged.
          { usage: null, estimated: false, provider: 'none', status: null },
    )
    if (!delivered) return
    this.qpu.markSettled()
    this.store.unschedule('qpu_settle')
  }

  /** Applies an attempt transition (qpu-attempt.ts) and what it implies for the job. */
  private async applyAttempt(
    attemptId: string,
    transition: (attempt: QpuAttempt, now: number) => QpuAttempt,
  ): Promise<void> {
    const record = this.qpu.record()
    if (!record || record.attempt.attemptId !== attemptId) return
    const now = this.now()
    const after = transition(record.attempt, now)
    this.qpu.touch(now)
    if (after === record.attempt) return
    this.qpu.saveAttempt(after)
    await this.attemptChanged(record.attempt, after)
    await this.armAlarm()
  }

  private async attemptChanged(before: QpuAttempt, after: QpuAttempt): Promise<void> {
    if (this.store.job()?.status !== 'awaiting_qpu') return
    const now = this.now()
    switch (after.status) {
      case 'outcome_unknown':
        if (before.status === 'outcome_unknown') return
        this.commit({ outcome_state: 'outcome_unknown' }, now)
        this.store.unschedule('qpu_dispatch')
        this.store.schedule('qpu_reconcile', nextReconcileAt(after, now))
        return
      case 'submitted':
        if (after.reconciled && !before.reconciled) {
          this.commit({ outcome_state: 'reconciled' }, now)
          // Adopted: the next dispatch sends a message at once, which polls the provider job.
          this.qpu.sendSoon()
          this.store.schedule('qpu_dispatch', now)
        }
        return
      case 'finished':
        return this.finishFromQpu(after)
      case 'abandoned':
        this.finishClassical(
          'released_after_failure',
          { code: 'qpu_unreachable', message: after.detail ?? 'the provider could not be used' },
          { outcome_state: after.unknownSince !== null ? 'reconciled' : 'committed' },
        )
        this.endQpu()
        return
      default:
        return
    }
  }

  /**
   * The provider's answer: a QPU's shot frequencies, or a simulator's exact probabilities (then the
   * shots are drawn with the job's seed), read as a selection; the classical argmax and each
   * candidate's share of the shots are recorded beside it.
   */
  private async finishFromQpu(attempt: QpuAttempt): Promise<void> {
    const job = this.store.job()
    const outcome: QpuOutcome | null = attempt.outcome
    if (!job || !outcome) return
    const outcomeState = attempt.unknownSince !== null || attempt.reconciled ? 'reconciled' : 'committed'
    if (outcome.kind === 'failed') {
      this.finishClassical(
        'released_after_failure',
        {
          code: 'qpu_job_failed',
          message: `the provider's job${outcome.providerJobId ? ` ${outcome.providerJobId}` : ''} failed (${outcome.code}): ${outcome.message}`,
        },
        { outcome_state: outcomeState },
      )
      this.endQpu()
      return
    }
    const candidates = this.store.candidates()
    const scores = this.scores(candidates)
    const probabilities = new Map(outcome.probabilities.map(([k, p]) => [k, p] as const))
    const shots = attempt.submission.shots
    const onQpu = outcome.executedOn === 'qpu'
    const counts = onQpu
      ? frequenciesToCounts(probabilities, shots)
      : await drawShots(probabilities, shots, job.job_id)
    const reading = readSelection(counts, candidates.length)
    const classical = classicalSelector.select(scores)
    this.recordSelectionEvidence(candidates, classical.index, candidateFrequencies(counts, candidates.length))
    this.finishSelection(
      {
        ...(reading.valid
          ? {
              status: 'completed',
              fallback_reason: null,
              selected_index: reading.index,
              selector_backend: `qaoa-xy/ionq:${outcome.target}`,
              selector_confidence: reading.confidence,
            }
          : {
              status: 'classical_fallback',
              fallback_reason: 'invalid_selection',
              selected_index: classical.index,
              selector_backend: classical.backend,
              selector_confidence: classical.confidence,
            }),
        real_request_status: onQpu ? 'executed' : 'provider_used_simulator',
        outcome_state: outcomeState,
      },
      this.now(),
    )
    this.endQpu()
  }

  /** The attempt is over: no more messages or lookups, the reservation is settled. */
  private endQpu(): void {
    this.store.unschedule('qpu_dispatch')
    this.store.unschedule('qpu_reconcile')
    this.store.schedule('qpu_settle', this.now())
  }

  // --- the QPU port (shared/quantum/qpu-queue.ts): what the queue consumer calls ------------------

  async qpuClaim(attemptId: string): Promise<QpuClaim> {
    const record = this.qpu.record()
    const job = this.store.job()
    if (!record || !job || record.attempt.attemptId !== attemptId || isTerminal(job.status)) {
      return { kind: 'done' }
    }
    const now = this.now()
    const result = claimAttempt(record.attempt, now, crypto.randomUUID())
    this.qpu.saveAttempt(result.attempt)
    this.qpu.touch(now)
    return result.claim
  }

  async qpuSubmitted(
    attemptId: string,
    _token: string,
    providerJobId: string,
    adopted: boolean,
  ): Promise<void> {
    await this.applyAttempt(attemptId, (a) => submittedAttempt(a, providerJobId, adopted))
  }

  async qpuRelease(attemptId: string, token: string): Promise<void> {
    await this.applyAttempt(attemptId, (a) => releaseAttempt(a, token))
  }

  async qpuOutcomeUnknown(attemptId: string, _token: string, detail: string): Promise<void> {
    await this.applyAttempt(attemptId, (a, now) => outcomeUnknownAttempt(a, now, detail))
  }

  async qpuFinished(attemptId: string, _token: string, outcome: QpuOutcome): Promise<void> {
    await this.applyAttempt(attemptId, (a) => finishedAttempt(a, outcome))
  }

  async qpuUnreachable(attemptId: string, detail: string): Promise<void> {
    await this.applyAttempt(attemptId, (a, now) => unreachableAttempt(a, now, detail))
  }

  // --- side work --------------------------------------------------------------------------------

  /** How long a failed index write waits: it backs off as the row lags behind the job. */
  private indexRetryDelay(): number {
    const job = this.store.job()
    return job ? indexRetryDelayMs(this.now(), job.updated_at) : RETRY_SIDE_WORK_MS
  }

  /** Writes the record to the Postgres index; done (unscheduled) when the stored version is in. */
  private async syncRecord(): Promise<void> {
    const job = this.store.job()
    if (!job) {
      this.store.unschedule('record_sync')
      return
    }
    const record = await this.view(job, false)
    const written = await writeIndex(
      this.env,
      { event: 'reasoning_index_write_failed', ref: { job_id: job.job_id } },
      (db) =>
        writeJobIndex(db, {
          tenantId: job.tenant_id,
          mode: job.test_mode ? 'test' : 'live',
          principal: job.principal,
          product: job.product,
          recordVersion: job.record_version,
          record,
        }),
    )
    if (!written) {
      this.store.schedule('record_sync', this.now() + this.indexRetryDelay())
      return
    }
    if (this.store.job()?.record_version === job.record_version) this.store.unschedule('record_sync')
    else this.store.schedule('record_sync', this.now())
  }

  /** Commits the usage of a finished job with the RateLimiter, or releases the reservation. */
  private async settle(): Promise<void> {
    const job = this.store.job()
    if (!job || job.settled || !isTerminal(job.status)) {
      this.store.unschedule('meter_settle')
      return
    }
    const { identity, grant } = job.meter_json
    const succeeded = job.status === 'completed' || job.status === 'classical_fallback'
    const usage = this.usage()
    const delivered = await openMeter(this.env.RATE_LIMITER, identity, 'reasoning.jobs', {
      leases: false,
    }).settle(grant, {
      usage: succeeded && usage.totalTokens > 0 ? usage : null,
      estimated: false,
      provider: job.test_mode ? 'svc-test-mode' : (this.store.candidates()[0]?.provider ?? 'none'),
      // A completed job's row says 200 (its create call answered 202 before the outcome was
      // known); a failed or cancelled job is released and shows why on its own resource.
      status: succeeded ? outcomeStatus('completed') : null,
      endedAt: job.completed_at ?? job.updated_at,
    })
    if (!delivered) return
    this.store.markSettled()
    this.store.unschedule('meter_settle')
  }

  /**
   * Signs the finished job's inference receipt and records it in the tenant's audit log, in three
   * stored steps (the statement, the envelope, the log entry), so a retry after a crash signs the
   * same statement and appends it once (the log's idempotency key is the receipt id). The job
   * names the receipt only once it is logged.
   */
  private async issueReceipt(): Promise<void> {
    const job = this.store.job()
    if (
      !job ||
      job.receipt_id !== null ||
      !(job.status === 'completed' || job.status === 'classical_fallback')
    ) {
      this.store.unschedule('issue_receipt')
      return
    }
    if (!this.store.receipt()) this.store.createReceipt(await this.receiptStatement(job))
    let receipt = this.store.receipt()!
    if (receipt.envelope_json === null || receipt.kid === null) {
      if (!this.env.AUTH) throw new Error('the AUTH binding is missing: inference receipts cannot be signed')
      const signed = await signReceipt(this.env.AUTH, receiptPayload(receipt.statement_json))
      if (!signed.ok) throw new Error(`signing the inference receipt: ${signed.code}: ${signed.message}`)
      this.store.setReceiptEnvelope(signed.envelope, signed.kid)
      receipt = this.store.receipt()!
    }
    if (receipt.log_json === null) {
      const entry = await appendAuditEvent(
        this.env.AUDIT_LOG,
        job.tenant_id,
        {
          kind: 'inference_receipt.issued',
          receipt_id: receipt.receipt_id,
          receipt_digest: receiptDigest(receiptPayload(receipt.statement_json)),
          subject: `reasoning_job:${job.job_id}`,
          kid: receipt.kid!,
          alg: RECEIPT_SIGNING_ALGORITHM,
          request_id: job.request_id,
        },
        { idempotencyKey: `inference-receipt:${receipt.receipt_id}` },
      )
      this.store.setReceiptLog({ origin: entry.log, index: entry.index, leaf_hash: toBase64(entry.leafHash) })
    }
    const now = this.now()
    this.commit({ receipt_id: receipt.receipt_id }, now)
    this.store.unschedule('issue_receipt')
  }

  /** What the receipt states: the job, what each candidate was (digests) and scored, the choice, usage. */
  private async receiptStatement(job: JobRow): Promise<ReceiptStatement> {
    const usage = this.view(job, false).then((v) => v.usage)
    return {
      _type: RECEIPT_TYPE,
      receipt_id: crypto.randomUUID(),
      issued_at: iso(this.now()),
      job: {
        id: job.job_id,
        tenant_id: job.tenant_id,
        model: job.model,
        product: job.product,
        scoring_method: SCORING_METHOD_OF[job.model],
        status: job.status,
        created_at: iso(job.created_at),
        completed_at: iso(job.completed_at ?? job.updated_at),
      },
      prompt_digest: job.erased_at === null ? `sha256:${sha256Hex(await this.prompt(job))}` : null,
      candidates: this.store.candidates().map((c) => ({
        index: c.idx,
        digest: c.digest,
        provider: c.provider,
        scores: c.evidence_json ?? {},
      })),
      selection: {
        selected_index: job.selected_index ?? 0,
        selector_backend: job.selector_backend ?? 'none',
        selector_confidence: job.selector_confidence ?? 0,
        fallback_reason: job.fallback_reason,
        used_real_qubits: job.real_request_status === 'executed',
        real_request_status: job.real_request_status,
      },
      usage: await usage,
    }
  }

  /** GET .../receipt: the signed receipt and where it is logged; 404 until it is issued. */
  async receipt(caller: JobCaller, jwksUrl: string): Promise<ReceiptReply> {
    const job = this.store.job()
    if (!job || !visibleTo(job, caller)) return { ok: false, error: errorData(jobNotFound()) }
    const receipt = this.store.receipt()
    if (job.receipt_id === null || !receipt?.envelope_json || !receipt.log_json) {
      return {
        ok: false,
        error: errorData(
          new AppError(
            404,
            'receipt_not_issued',
            `This job has no inference receipt ${isTerminal(job.status) ? 'yet' : 'until it completes'}: receipts are issued for completed and classical_fallback jobs, moments after they finish (the job's inference_receipt_id names it then).`,
            { param: 'jobId' },
          ),
        ),
      }
    }
    return {
      ok: true,
      receipt: {
        object: 'inference_receipt',
        receipt_id: receipt.receipt_id,
        envelope: receipt.envelope_json,
        statement: receipt.statement_json,
        jwks_url: jwksUrl,
        audit_log: receipt.log_json,
      },
    }
  }

  // --- views ------------------------------------------------------------------------------------

  /** Every model call's usage added up. */
  private usage() {
    const rows = [
      ...this.store.candidates().map((c) => c.usage_json),
      ...this.store.verdicts().map((v) => v.usage_json),
    ]
    return rows.reduce(
      (sum, u) => ({
        promptTokens: sum.promptTokens + u.promptTokens,
        completionTokens: sum.completionTokens + u.completionTokens,
        totalTokens: sum.totalTokens + u.totalTokens,
        cachedTokens: sum.cachedTokens + u.cachedTokens,
        reasoningTokens: sum.reasoningTokens + u.reasoningTokens,
      }),
      { promptTokens: 0, completionTokens: 0, totalTokens: 0, cachedTokens: 0, reasoningTokens: 0 },
    )
  }

  private candidateView(c: CandidateRow & { content: string | null }): Record<string, unknown> {
    return {
      index: c.idx,
      ...(c.content === null ? {} : { content: c.content }),
      digest: c.digest,
      provider: c.provider,
      finish_reason: c.finish_reason,
      prompt_tokens: c.usage_json.promptTokens,
      completion_tokens: c.usage_json.completionTokens,
      ...(c.evidence_json ?? {}),
    }
  }

  /** The public record; `withContent`: decrypted prompt, candidates and result (detail only). */
  async view(job: JobRow, withContent: boolean): Promise<ReasoningJobRecord> {
    const erased = job.erased_at !== null
    const candidates: (CandidateRow & { content: string | null })[] = !withContent
      ? []
      : erased
        ? this.store.candidates().map((c) => ({ ...c, content: null }))
        : await this.openCandidates(job)
    const usage = this.usage()
    const prompt = withContent && !erased ? await this.prompt(job) : null
    const selected =
      job.selected_index === null ? undefined : candidates.find((c) => c.idx === job.selected_index)
    return {
      id: job.job_id,
      status: job.status,
      model: job.model,
      scoring_method: SCORING_METHOD_OF[job.model],
      requested_real: job.requested_real,
      ...(prompt === null ? {} : { prompt }),
      ...(withContent && candidates.length > 0
        ? { candidates: candidates.map((c) => this.candidateView(c)) }
        : {}),
      ...(job.selected_index === null ? {} : { selected_index: job.selected_index }),
      ...(selected && selected.content !== null ? { result: selected.content } : {}),
      ...(job.selector_backend === null ? {} : { selector_backend: job.selector_backend }),
      ...(job.selector_confidence === null ? {} : { selector_confidence: job.selector_confidence }),
      // Only a job whose attempt a QPU ran (the provider said so) used real qubits.
      used_real_qubits: job.real_request_status === 'executed',
      quoted_credits: credits(job.quoted_units),
      fallback_reason: job.fallback_reason,
      real_request_status: job.real_request_status,
      usage: {
        prompt_tokens: usage.promptTokens,
        completion_tokens: usage.completionTokens,
        total_tokens: usage.totalTokens,
        reasoning_tokens: usage.reasoningTokens,
        model_calls: this.store.candidates().length + this.store.verdicts().length,
        credits: credits(usageCostUnits(job.model, usage)),
      },
      inference_receipt_id: job.receipt_id,
      attempt_count: job.attempt_count,
      max_attempts: job.max_attempts,
      next_attempt_at: job.next_attempt_at === null ? null : iso(job.next_attempt_at),
      outcome_state: job.outcome_state,
      error: job.error_json,
      workspace_id: job.workspace_id,
      created_at: iso(job.created_at),
      updated_at: iso(job.updated_at),
      completed_at: job.completed_at === null ? null : iso(job.completed_at),
    }
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
}
