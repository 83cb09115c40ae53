/**
 * A job's credits (docs/reasoning-jobs.md, "Credits and usage"): its worst case is quoted and
 * reserved with the tenant's RateLimiter before the job exists (the create request's 402/403/429
 * are that reservation's refusals), and settled once when the job ends: the tokens all its model
 * calls used committed for a completed job, the reservation released for a failed or cancelled one.
 * The real_qpu reservation of a hardware attempt is the QPU attempt's own (job-qpu.ts).
 */
import { AppError } from '../../shared/http/errors'
import { type MeterGrant, meteringUnavailable, openMeter, outcomeStatus } from '../../shared/metering'
import type { PlanCatalog } from '../../shared/plans'
import { countTextTokens } from '../../shared/providers/tokenizer'
import type { Identity } from '../../shared/worker/request-context'
import { isTerminal, type JobCreateRequest, SCORING_METHOD_OF } from './job.schemas'
import type { JobHost } from './job-host'
import { CANDIDATE_MAX_TOKENS, CANDIDATES_PER_MODEL, JUDGE_MAX_TOKENS } from './job-settings'
import type { JobViews } from './job-view'
import type { ReasoningJobEnv } from './reasoning-job.context'

/** Tokens of the fixed prompt text around the user's prompt (system prompt, judge rubric). */
const PROMPT_OVERHEAD_TOKENS = 64

/** Tokens a job may use at most: the quote reserved at creation. */
export function quotedTokens(model: JobCreateRequest['model'], prompt: string): number {
  const n = CANDIDATES_PER_MODEL[model]
  const promptTokens = countTextTokens(prompt) + PROMPT_OVERHEAD_TOKENS
  const candidates = n * (promptTokens + CANDIDATE_MAX_TOKENS)
  const comparisons = SCORING_METHOD_OF[model] === 'swarm_judge' ? n * (n - 1) : 0
  const judging = comparisons * (promptTokens + 2 * CANDIDATE_MAX_TOKENS + JUDGE_MAX_TOKENS)
  return candidates + judging
}

/** Reserves the job's quote (request id `reasoning-job:<id>`); a refusal is the create's answer. */
export async function reserveJobQuote(
  env: Pick<ReasoningJobEnv, 'RATE_LIMITER'>,
  identity: Identity,
  job: { jobId: string; model: JobCreateRequest['model']; tokens: number },
  catalog: PlanCatalog,
): Promise<MeterGrant> {
  const meter = openMeter(env.RATE_LIMITER, identity, 'reasoning.jobs', { leases: false })
  try {
    return await meter.acquire(
      { requestId: `reasoning-job:${job.jobId}`, model: job.model, estimatedTokens: job.tokens },
      catalog,
    )
  } catch (err) {
    throw err instanceof AppError
      ? err
      : meteringUnavailable(err instanceof Error ? err.message : String(err))
  }
}

/** meter_settle: commits the usage of a finished job with the RateLimiter, or releases the reservation. */
export async function settleJobUsage(host: JobHost, views: JobViews): Promise<void> {
  const { store } = host
  const job = store.job()
  if (!job || job.settled || !isTerminal(job.status)) {
    store.unschedule('meter_settle')
    return
  }
  const { identity, grant } = job.meter_json
  const succeeded = job.status === 'completed' || job.status === 'classical_fallback'
  const usage = views.usage()
  const delivered = await openMeter(host.workerEnv.RATE_LIMITER, identity, 'reasoning.jobs', {
    leases: false,
  }).settle(grant, {
    usage: succeeded && usage.totalTokens > 0 ? usage : null,
    estimated: false,
    provider: job.test_mode ? 'svc-test-mode' : (store.candidates()[0]?.provider ?? 'none'),
    // A completed job's row says 200 (its create call answered 202 before the outcome was
    // known); a failed or cancelled job is released and shows why on its own resource.
    status: succeeded ? outcomeStatus('completed') : null,
    endedAt: job.completed_at ?? job.updated_at,
  })
  if (!delivered) return
  store.markSettled()
  store.unschedule('meter_settle')
}
