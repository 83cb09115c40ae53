/**
 * What a job's stored state looks like from outside: the public record (job.schemas.ts, spec 000's
 * "Reasoning job") built from the job row, its candidates and verdicts, and its usage added up. The
 * owner's detail carries the decrypted prompt, candidates and result; the Postgres index and lists
 * carry none of it. The place in the run queue is not stored here (job-run-slot.ts adds it).
 */
import { CREDIT_UNITS_PER_CENT, usageCostUnits } from '../../shared/metering'
import { type ReasoningJob as ReasoningJobRecord, SCORING_METHOD_OF } from './job.schemas'
import type { JobContent } from './job-content'
import { iso, type JobHost } from './job-host'
import type { CandidateRow, JobRow } from './reasoning-job.store'

/** Tokens of every model call of a job, added up. */
export interface JobUsage {
  promptTokens: number
  completionTokens: number
  totalTokens: number
  cachedTokens: number
  reasoningTokens: number
}

function credits(units: number): number {
  return Math.round((units / CREDIT_UNITS_PER_CENT) * 1e4) / 1e4
}

function candidateView(c: CandidateRow & { content: string | null }): Record<string, unknown> {
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

export class JobViews {
  constructor(
    private readonly host: Pick<JobHost, 'store'>,
    private readonly content: JobContent,
  ) {}

  /** Every model call's usage added up. */
  usage(): JobUsage {
    const { store } = this.host
    const rows = [
      ...store.candidates().map((c) => c.usage_json),
      ...store.verdicts().map((v) => v.usage_json),
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

  /** The public record; `withContent`: decrypted prompt, candidates and result (detail only). */
  async view(job: JobRow, withContent: boolean): Promise<ReasoningJobRecord> {
    const { store } = this.host
    const erased = job.erased_at !== null
    const candidates: (CandidateRow & { content: string | null })[] = !withContent
      ? []
      : erased
        ? store.candidates().map((c) => ({ ...c, content: null }))
        : await this.content.openCandidates(job)
    const usage = this.usage()
    const prompt = withContent && !erased ? await this.content.prompt(job) : null
    const selected =
      job.selected_index === null ? undefined : candidates.find((c) => c.idx === job.selected_index)
    return {
      id: job.job_id,
      status: job.status,
      model: job.model,
      scoring_method: SCORING_METHOD_OF[job.model],
      requested_real: job.requested_real,
      ...(prompt === null ? {} : { prompt }),
      ...(withContent && candidates.length > 0 ? { candidates: candidates.map(candidateView) } : {}),
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
        model_calls: store.candidates().length + store.verdicts().length,
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
}
