/**
 * The steps of a job's state machine (docs/reasoning-jobs.md, "States"), one per `advance` of the
 * object's alarm, each from the stored state:
 *
 *   queued (with a run slot) → generating_candidates → scoring → selecting → completed | classical_fallback
 *                                                                          → awaiting_qpu (real hardware)
 *
 * Steps are idempotent: a step asks only for the candidate slots (or judge comparisons) still
 * empty and stores each answer as it arrives, so a crash mid-step redoes only what was not stored.
 * A round that leaves slots empty is retried with backoff, or fails the job (stepFailed).
 */
import { sha256Hex } from '../../shared/crypto/digests'
import { isTerminal, SCORING_METHOD_OF } from './job.schemas'
import { candidateName, type JobContent } from './job-content'
import type { JobHost } from './job-host'
import { candidateScores, finishSelection, recordSelectionEvidence } from './job-selection'
import { retryDelayMs } from './job-settings'
import { type CallFailure, generateCandidate, judgePair, type ModelCallContext } from './model-calls'
import { selectForSimulationCloud } from './quantum-selection'
import { type JobRow, toUsage } from './reasoning-job.store'
import { comparisonKey, hiveScores, judgeComparisons, swarmScores } from './scoring'
import { classicalSelector } from './selector'

/** The other capabilities a step hands a job to. */
export interface StepHandoffs {
  /** A queued job without a run slot asks its workspace's queue for one (job-run-slot.ts). */
  requestRunSlot(): Promise<void>
  /** managed_qpu, byopa_managed: the selection goes to real hardware (job-qpu.ts). */
  selectOnHardware(job: JobRow): Promise<void>
}

export class JobSteps {
  constructor(
    private readonly host: JobHost,
    private readonly content: JobContent,
    private readonly handoffs: StepHandoffs,
  ) {}

  /** One step of the state machine, from the stored state. */
  async advance(): Promise<void> {
    const { store } = this.host
    const job = store.job()
    if (!job || isTerminal(job.status)) {
      store.unschedule('advance')
      return
    }
    switch (job.status) {
      case 'queued':
        // Only with a run slot of the workspace's queue; without one, ask for it (and wait).
        if (store.runSlot() !== 'admitted') return this.handoffs.requestRunSlot()
        this.host.commit({ status: 'generating_candidates', outcome_state: 'in_progress' }, this.host.now())
        store.schedule('advance', this.host.now())
        return
      case 'generating_candidates':
        return this.generate(job)
      case 'scoring':
        return this.score(job)
      case 'selecting':
        return this.select(job)
      case 'awaiting_qpu':
        // The queue consumer and the QPU due work move it on from here.
        store.unschedule('advance')
        return
    }
  }

  private modelContext(job: JobRow): ModelCallContext {
    return { alias: job.model, testMode: job.test_mode, env: this.host.workerEnv, requestId: job.request_id }
  }

  /** generating_candidates: one model call per empty candidate slot, in parallel. */
  private async generate(job: JobRow): Promise<void> {
    const { store } = this.host
    const have = new Set(store.candidates().map((c) => c.idx))
    const missing = Array.from({ length: job.candidate_count }, (_, i) => i).filter((i) => !have.has(i))
    const prompt = await this.content.prompt(job)
    const cipher = await this.content.cipher(job)
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
        store.addCandidate({
          idx,
          text: sealed,
          digest,
          logprobs,
          finish_reason: finishReason,
          provider,
          usage: toUsage(usage),
          created_at: this.host.now(),
        })
      }),
    )
    if (failures.length > 0) return this.stepFailed(job, failures)
    this.host.commit({ status: 'scoring', attempt_count: 0, next_attempt_at: null }, this.host.now())
    store.schedule('advance', this.host.now())
  }

  /** scoring: hive_logprob from the stored logprobs; swarm_judge with a judge call per comparison. */
  private async score(job: JobRow): Promise<void> {
    const { store } = this.host
    const candidates = await this.content.openCandidates(job)
    if (SCORING_METHOD_OF[job.model] === 'hive_logprob') {
      const scores = hiveScores(candidates.map((c) => ({ text: c.content, logprobs: c.logprobs_json })))
      for (const [i, score] of scores.entries()) store.setEvidence(candidates[i]!.idx, { ...score })
    } else {
      const judged = new Set(store.verdicts().map((v) => v.comparison))
      const missing = judgeComparisons(candidates.length).filter((c) => !judged.has(comparisonKey(c)))
      const prompt = await this.content.prompt(job)
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
          store.addVerdict({
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
      const verdicts = new Map(store.verdicts().map((v) => [v.comparison, v.verdict] as const))
      const scores = swarmScores(candidates.length, verdicts)
      for (const [i, score] of scores.entries()) store.setEvidence(candidates[i]!.idx, { ...score })
    }
    this.host.commit({ status: 'selecting', attempt_count: 0, next_attempt_at: null }, this.host.now())
    store.schedule('advance', this.host.now())
  }

  /**
   * selecting: simulation_cloud runs the quantum selector on the product's simulator
   * (quantum-selection.ts: QAOA, seeded shots; an invalid outcome or the simulator's bounds fall back
   * to the classical argmax); managed_qpu and byopa_managed reserve the real_qpu allowance and send
   * the same circuit to the provider through the QPU queue (job-qpu.ts). The classical argmax is
   * always recorded beside the answer (`classical_choice` on its candidate), and each candidate's
   * share of the shots (`quantum_frequency`) is kept as selection evidence.
   */
  private async select(job: JobRow): Promise<void> {
    if (job.product !== 'simulation_cloud') return this.handoffs.selectOnHardware(job)
    const candidates = this.host.store.candidates()
    const scores = candidateScores(candidates)
    const classical = classicalSelector.select(scores)
    const quantum = selectForSimulationCloud(scores, job.job_id, classical)
    recordSelectionEvidence(this.host, candidates, quantum.classicalIndex, quantum.frequencies)
    finishSelection(
      this.host,
      {
        status: quantum.fallbackReason ? 'classical_fallback' : 'completed',
        fallback_reason: quantum.fallbackReason,
        selected_index: quantum.index,
        selector_backend: quantum.backend,
        selector_confidence: quantum.confidence,
      },
      this.host.now(),
    )
  }

  /** A round of calls left slots empty: retry with backoff, or fail the job. */
  private stepFailed(job: JobRow, failures: readonly CallFailure[]): void {
    const { store } = this.host
    const now = this.host.now()
    const permanent = failures.find((f) => f.kind === 'permanent')
    const attempt = job.attempt_count + 1
    const failure = permanent ?? failures[0]!
    if (permanent || attempt >= job.max_attempts) {
      const message = permanent
        ? failure.message
        : `${failure.message} (gave up after ${attempt} attempts of the ${job.status.replaceAll('_', ' ')} step)`
      this.host.commit(
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
      store.unschedule('advance')
      store.schedule('meter_settle', now)
      return
    }
    const next = now + retryDelayMs(attempt, this.host.settings)
    this.host.commit({ attempt_count: attempt, next_attempt_at: next }, now)
    store.schedule('advance', next)
  }
}
