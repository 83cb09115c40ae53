/**
 * A job's run on real quantum hardware (docs/quantum-selector.md): `selecting` of a managed_qpu or
 * byopa_managed job reserves one real_qpu request and stores the job's one QPU attempt
 * (qpu-attempt.ts, qpu.store.ts) → `awaiting_qpu`; due work sends the attempt's message to the QPU
 * queue (`qpu_dispatch`, then a re-drive watchdog); the queue consumer drives the attempt through the
 * object's QPU port, whose callbacks land here; an unknown outcome is looked up at the provider
 * (`qpu_reconcile`); the reservation is committed or released once (`qpu_settle`). Whatever keeps
 * the QPU from answering ends the job with the classical argmax and says why.
 */
import { AppError } from '../../shared/http/errors'
import { type MeterGrant, openMeter, outcomeStatus } from '../../shared/metering'
import { actionRequiredError, checkFeatureAccess, resolvePlan } from '../../shared/plans'
import { isTerminal } from './job.schemas'
import { type JobHost, RETRY_SIDE_WORK_MS } from './job-host'
import { candidateScores, finishClassical, finishSelection, recordSelectionEvidence } from './job-selection'
import { retryDelayMs } from './job-settings'
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
import { openQpuProvider } from './quantum/providers/ionq-v03'
import { managedAccount, openQpuAccount } from './quantum/providers/provider-accounts'
import type { QpuClaim, QpuOutcome, QpuQueueMessage } from './quantum/qpu-queue'
import {
  buildSelectionCircuit,
  candidateFrequencies,
  DEFAULT_SHOTS,
  drawShots,
  frequenciesToCounts,
  readSelection,
} from './quantum-selection'
import type { JobRow } from './reasoning-job.store'
import { classicalSelector } from './selector'

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

export class JobQpu {
  constructor(private readonly host: JobHost) {}

  private get store() {
    return this.host.store
  }

  /** The job's QPU attempt and its reservation (qpu.store.ts). */
  private get attempts() {
    return this.host.qpu
  }

  /** Why this job cannot ask for real hardware at all (nothing is reserved), or null. */
  private hardwareUnavailable(job: JobRow): string | null {
    if (job.test_mode) {
      return 'test keys never run on real quantum hardware (test mode is never billed); use a live key'
    }
    if (job.product === 'managed_qpu' && !managedAccount(this.host.workerEnv)) {
      return 'no managed QPU provider account is configured on this deployment (QPU_IONQ_BASE_URL, QPU_IONQ_API_KEY)'
    }
    if (job.product === 'byopa_managed' && !job.provider_connection_id) {
      return 'a byopa_managed job needs the provider_connection_id of one of your provider connections'
    }
    if (!this.host.workerEnv.QPU_QUEUE) return 'the QPU queue (QPU_QUEUE) is not bound on this deployment'
    return null
  }

  /**
   * selecting, managed_qpu / byopa_managed: reserve one real_qpu request with the tenant's
   * RateLimiter (the plan's feature and monthly allowance decide), store the attempt with its
   * reservation, and wait for the queue (awaiting_qpu). A refusal ends the job with the classical
   * argmax and says why (quantum_not_enabled, quantum_allowance_exhausted).
   */
  async selectOnHardware(job: JobRow): Promise<void> {
    const unavailable = this.hardwareUnavailable(job)
    if (unavailable) {
      return finishClassical(this.host, 'quantum_not_enabled', {
        code: 'quantum_not_enabled',
        message: unavailable,
      })
    }
    let circuit: ReturnType<typeof buildSelectionCircuit>['circuit']
    try {
      circuit = buildSelectionCircuit(candidateScores(this.store.candidates())).circuit
    } catch (err) {
      return finishClassical(this.host, 'not_requested', {
        code: 'selector_unreachable',
        message: `the selection circuit could not be built: ${err instanceof Error ? err.message : String(err)}`,
      })
    }
    const { identity } = job.meter_json
    const { plan, catalog } = resolvePlan(this.host.workerEnv, identity.planId)
    // The plan is read again here: it may have changed since the job was accepted.
    const feature = checkFeatureAccess(plan, 'real_qpu', { catalog })
    if (feature) {
      const refusal = actionRequiredError(feature, { catalog })
      return finishClassical(this.host, 'quantum_not_enabled', {
        code: refusal.code,
        message: refusal.message,
      })
    }
    let grant: MeterGrant
    try {
      // Not idempotent by request id: a crash before the attempt is stored leaves this reservation
      // to expire in the RateLimiter, and the step reserves again.
      grant = await openMeter(this.host.workerEnv.RATE_LIMITER, identity, 'reasoning.qpu', {
        leases: false,
      }).acquire(
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
        return finishClassical(this.host, 'quantum_not_enabled', { code: err.code, message: err.message })
      }
      if (err instanceof AppError && ALLOWANCE_REFUSALS.has(err.code)) {
        return finishClassical(this.host, 'quantum_allowance_exhausted', {
          code: err.code,
          message: err.message,
        })
      }
      // Metering unreachable, or the tenant's request rate: try the step again with backoff.
      const detail = err instanceof Error ? err.message : String(err)
      const attempt = job.attempt_count + 1
      if (attempt >= job.max_attempts) {
        return finishClassical(this.host, 'not_requested', {
          code: 'metering_unavailable',
          message: `the real_qpu allowance could not be reserved after ${attempt} attempts (${detail})`,
        })
      }
      const next = this.host.now() + retryDelayMs(attempt, this.host.settings)
      this.host.commit({ attempt_count: attempt, next_attempt_at: next }, this.host.now())
      this.store.schedule('advance', next)
      return
    }
    const now = this.host.now()
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
    this.attempts.create(attempt, grant)
    this.host.commit(
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
  async dispatch(): Promise<void> {
    const job = this.store.job()
    const record = this.attempts.record()
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
    const now = this.host.now()
    const { redriveMs } = this.host.qpuSettings
    if (record.lastContactAt > 0 && now - record.lastContactAt < redriveMs) {
      this.store.schedule('qpu_dispatch', record.lastContactAt + redriveMs)
      return
    }
    const queue = this.host.workerEnv.QPU_QUEUE
    if (!queue) {
      await this.apply(record.attempt.attemptId, (a, at) =>
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
    this.attempts.touch(this.host.now())
    this.store.schedule('qpu_dispatch', this.host.now() + redriveMs)
  }

  /**
   * qpu_reconcile: an attempt whose create got no answer. Looks it up at the provider by our
   * metadata: found → adopted (outcome_state reconciled, polled to the end, billed once); not found
   * after the grace period, or the provider unreachable through every lookup → abandoned (nothing
   * ran or is billed, the reservation is released).
   */
  async reconcile(): Promise<void> {
    const job = this.store.job()
    const record = this.attempts.record()
    if (!job || !record || record.attempt.status !== 'outcome_unknown') {
      this.store.unschedule('qpu_reconcile')
      return
    }
    const before = record.attempt
    this.store.schedule('qpu_reconcile', this.host.now() + RETRY_SIDE_WORK_MS)
    const { reconcileGraceMs } = this.host.qpuSettings
    let after: QpuAttempt
    try {
      const account = await openQpuAccount(this.host.workerEnv, job.tenant_id, before.submission.account)
      if (!account) {
        after = unreachableAttempt(
          before,
          this.host.now(),
          'the provider account of this attempt no longer exists',
        )
      } else {
        const found = await openQpuProvider(account).findByMetadata(
          before.submission.metadata,
          before.submission.since - 60_000,
        )
        after = found
          ? reconcileFound(before, found.id)
          : reconcileMiss(before, this.host.now(), 'missing', 'not found', reconcileGraceMs)
      }
    } catch (err) {
      after = reconcileMiss(before, this.host.now(), 'failed', String(err), reconcileGraceMs)
    }
    // A consumer may have resolved the attempt while the lookup ran: its answer stands.
    if (JSON.stringify(this.attempts.record()?.attempt) !== JSON.stringify(before)) return
    this.attempts.saveAttempt(after)
    if (after.status === 'outcome_unknown') {
      this.store.schedule('qpu_reconcile', nextReconcileAt(after, this.host.now()))
      return
    }
    this.store.unschedule('qpu_reconcile')
    await this.attemptChanged(before, after)
  }

  /** qpu_settle: the real_qpu reservation is committed when a QPU ran the job, released otherwise. */
  async settle(): Promise<void> {
    const job = this.store.job()
    const record = this.attempts.record()
    if (!job || !record || record.settled || !isTerminal(job.status)) {
      this.store.unschedule('qpu_settle')
      return
    }
    const executed = job.real_request_status === 'executed'
    const delivered = await openMeter(
      this.host.workerEnv.RATE_LIMITER,
      job.meter_json.identity,
      'reasoning.qpu',
      {
        leases: false,
      },
    ).settle(
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
    this.attempts.markSettled()
    this.store.unschedule('qpu_settle')
  }

  /** Applies an attempt transition (qpu-attempt.ts) and what it implies for the job. */
  private async apply(
    attemptId: string,
    transition: (attempt: QpuAttempt, now: number) => QpuAttempt,
  ): Promise<void> {
    const record = this.attempts.record()
    if (!record || record.attempt.attemptId !== attemptId) return
    const now = this.host.now()
    const after = transition(record.attempt, now)
    this.attempts.touch(now)
    if (after === record.attempt) return
    this.attempts.saveAttempt(after)
    await this.attemptChanged(record.attempt, after)
    await this.host.armAlarm()
  }

  private async attemptChanged(before: QpuAttempt, after: QpuAttempt): Promise<void> {
    if (this.store.job()?.status !== 'awaiting_qpu') return
    const now = this.host.now()
    switch (after.status) {
      case 'outcome_unknown':
        if (before.status === 'outcome_unknown') return
        this.host.commit({ outcome_state: 'outcome_unknown' }, now)
        this.store.unschedule('qpu_dispatch')
        this.store.schedule('qpu_reconcile', nextReconcileAt(after, now))
        return
      case 'submitted':
        if (after.reconciled && !before.reconciled) {
          this.host.commit({ outcome_state: 'reconciled' }, now)
          // Adopted: the next dispatch sends a message at once, which polls the provider job.
          this.attempts.sendSoon()
          this.store.schedule('qpu_dispatch', now)
        }
        return
      case 'finished':
        return this.finishFromQpu(after)
      case 'abandoned':
        finishClassical(
          this.host,
          'released_after_failure',
          { code: 'qpu_unreachable', message: after.detail ?? 'the provider could not be used' },
          { outcome_state: after.unknownSince !== null ? 'reconciled' : 'committed' },
        )
        this.end()
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
      finishClassical(
        this.host,
        'released_after_failure',
        {
          code: 'qpu_job_failed',
          message: `the provider's job${outcome.providerJobId ? ` ${outcome.providerJobId}` : ''} failed (${outcome.code}): ${outcome.message}`,
        },
        { outcome_state: outcomeState },
      )
      this.end()
      return
    }
    const candidates = this.store.candidates()
    const scores = candidateScores(candidates)
    const probabilities = new Map(outcome.probabilities.map(([k, p]) => [k, p] as const))
    const shots = attempt.submission.shots
    const onQpu = outcome.executedOn === 'qpu'
    const counts = onQpu
      ? frequenciesToCounts(probabilities, shots)
      : await drawShots(probabilities, shots, job.job_id)
    const reading = readSelection(counts, candidates.length)
    const classical = classicalSelector.select(scores)
    recordSelectionEvidence(
      this.host,
      candidates,
      classical.index,
      candidateFrequencies(counts, candidates.length),
    )
    finishSelection(
      this.host,
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
      this.host.now(),
    )
    this.end()
  }

  /** The attempt is over: no more messages or lookups, the reservation is settled. */
  private end(): void {
    this.store.unschedule('qpu_dispatch')
    this.store.unschedule('qpu_reconcile')
    this.store.schedule('qpu_settle', this.host.now())
  }

  // --- the QPU port's callbacks (durable-objects/reasoning-job/quantum/qpu-queue.ts): what the queue consumer reports ----

  claim(attemptId: string): QpuClaim {
    const record = this.attempts.record()
    const job = this.store.job()
    if (!record || !job || record.attempt.attemptId !== attemptId || isTerminal(job.status)) {
      return { kind: 'done' }
    }
    const now = this.host.now()
    const result = claimAttempt(record.attempt, now, crypto.randomUUID())
    this.attempts.saveAttempt(result.attempt)
    this.attempts.touch(now)
    return result.claim
  }

  submitted(attemptId: string, providerJobId: string, adopted: boolean): Promise<void> {
    return this.apply(attemptId, (a) => submittedAttempt(a, providerJobId, adopted))
  }

  released(attemptId: string, token: string): Promise<void> {
    return this.apply(attemptId, (a) => releaseAttempt(a, token))
  }

  outcomeUnknown(attemptId: string, detail: string): Promise<void> {
    return this.apply(attemptId, (a, now) => outcomeUnknownAttempt(a, now, detail))
  }

  finished(attemptId: string, outcome: QpuOutcome): Promise<void> {
    return this.apply(attemptId, (a) => finishedAttempt(a, outcome))
  }

  unreachable(attemptId: string, detail: string): Promise<void> {
    return this.apply(attemptId, (a, now) => unreachableAttempt(a, now, detail))
  }
}
