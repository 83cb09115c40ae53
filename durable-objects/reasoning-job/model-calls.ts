/**
 * The model calls of a job, through the same provider layer as chat (shared/providers: the
 * configured upstreams with failover and retries for live keys, the deterministic simulated model
 * for test keys): one call per candidate (logprobs asked for when the scoring uses them), one per
 * judge comparison (a JSON verdict against a rubric).
 *
 * Failures come back classified: `transient` (every provider failed or was busy: 429, 502, 503,
 * 504; the job retries the step with backoff) or `permanent` (the request was refused, the
 * configuration is wrong: the job fails with the error).
 */
import { z } from 'zod'
import type { ModelAlias } from '../../shared/catalog/model-aliases'
import { AppError, toAppError } from '../../shared/http/errors'
import {
  type ChatCompletion,
  createChatCompletion,
  type NormalizedUsage,
  type ProviderChatRequest,
  type ProviderEnv,
  providerRegistryFromEnv,
} from '../../shared/providers'
import { CANDIDATE_MAX_TOKENS, JUDGE_MAX_TOKENS } from './job-settings'
import type { JudgeVerdict } from './scoring'

export interface ModelCallContext {
  readonly alias: ModelAlias
  readonly testMode: boolean
  readonly env: ProviderEnv
  readonly requestId: string
}

export interface CallFailure {
  readonly kind: 'transient' | 'permanent'
  readonly code: string
  readonly message: string
}

export type CallResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly failure: CallFailure }

export interface CandidateOutput {
  readonly text: string
  readonly logprobs: number[] | null
  readonly finishReason: string | null
  readonly usage: NormalizedUsage
  readonly provider: string
}

export interface VerdictOutput {
  readonly verdict: JudgeVerdict
  /** False when the judge's answer was not a valid verdict (counted as a tie). */
  readonly valid: boolean
  readonly usage: NormalizedUsage
  readonly provider: string
}

const CANDIDATE_SYSTEM_PROMPT =
  'You are a careful reasoner. Think the problem through and give one complete, self-contained answer.'

export const JUDGE_RUBRIC = [
  'You are an impartial judge comparing two answers to the same request.',
  'Judge only correctness first, then completeness, then clarity.',
  'Do not prefer an answer because it is longer, because of its position (A or B), or because of its style.',
  'Answer "tie" when neither is better.',
].join(' ')

const VERDICT_SCHEMA = {
  type: 'object',
  properties: {
    verdict: { type: 'string', enum: ['A', 'B', 'tie'] },
    reason: { type: 'string' },
  },
  required: ['verdict', 'reason'],
  additionalProperties: false,
} as const

const VerdictSchema = z.object({ verdict: z.enum(['A', 'B', 'tie']) }).loose()

const LogprobsSchema = z
  .object({ content: z.array(z.object({ logprob: z.number() }).loose()).nullish() })
  .loose()
  .nullish()

function classify(err: unknown): CallFailure {
  const e = toAppError(err)
  const transient = e.status === 429 || e.status === 502 || e.status === 503 || e.status === 504
  // A missing or invalid provider configuration is a 503 too, but retrying cannot fix it.
  const configuration = e.code === 'provider_not_configured' || e.code === 'provider_config_invalid'
  return {
    kind: transient && !configuration ? 'transient' : 'permanent',
    code: e.code,
    message: e.message,
  }
}

async function complete(
  context: ModelCallContext,
  request: ProviderChatRequest,
): Promise<{ completion: ChatCompletion; usage: NormalizedUsage; provider: string }> {
  const result = await createChatCompletion({
    request,
    alias: context.alias,
    mode: context.testMode ? 'test' : 'live',
    registry: context.testMode ? null : providerRegistryFromEnv(context.env),
    env: context.env,
    requestId: context.requestId,
  })
  if (result.kind !== 'json')
    throw new AppError(502, 'upstream_invalid', 'the provider answered with a stream')
  return { completion: result.completion, usage: result.usage, provider: result.target.providerId }
}

export async function generateCandidate(
  context: ModelCallContext,
  prompt: string,
  index: number,
  withLogprobs: boolean,
): Promise<CallResult<CandidateOutput>> {
  try {
    const { completion, usage, provider } = await complete(context, {
      model: context.alias,
      messages: [
        { role: 'system', content: CANDIDATE_SYSTEM_PROMPT },
        { role: 'user', content: prompt },
      ],
      max_tokens: CANDIDATE_MAX_TOKENS,
      temperature: 0.8,
      // A different seed per candidate: samples, not copies (the simulated model's replies and
      // seeded upstreams depend on it).
      seed: index,
      ...(withLogprobs ? { logprobs: true } : {}),
    })
    const choice = completion.choices[0]
    const text = choice?.message.content ?? ''
    if (text.trim() === '') {
      return {
        ok: false,
        failure: { kind: 'transient', code: 'empty_candidate', message: 'the model answered with no text' },
      }
    }
    const logprobs = LogprobsSchema.safeParse((choice as Record<string, unknown> | undefined)?.logprobs)
    const tokens = logprobs.success ? (logprobs.data?.content ?? null) : null
    return {
      ok: true,
      value: {
        text,
        logprobs: tokens && tokens.length > 0 ? tokens.map((t) => t.logprob) : null,
        finishReason: choice?.finish_reason ?? null,
        usage,
        provider,
      },
    }
  } catch (err) {
    return { ok: false, failure: classify(err) }
  }
}

export async function judgePair(
  context: ModelCallContext,
  prompt: string,
  answerA: string,
  answerB: string,
): Promise<CallResult<VerdictOutput>> {
  try {
    const { completion, usage, provider } = await complete(context, {
      model: context.alias,
      messages: [
        { role: 'system', content: JUDGE_RUBRIC },
        {
          role: 'user',
          content: `Request:\n${prompt}\n\n[Answer A]\n${answerA}\n\n[Answer B]\n${answerB}\n\nWhich answer is better? Reply with JSON: {"verdict": "A" | "B" | "tie", "reason": "..."}.`,
        },
      ],
      max_tokens: JUDGE_MAX_TOKENS,
      temperature: 0,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'verdict', schema: VERDICT_SCHEMA, strict: true },
      },
    })
    const text = completion.choices[0]?.message.content ?? ''
    let parsed: z.infer<typeof VerdictSchema> | null = null
    try {
      const candidate = VerdictSchema.safeParse(JSON.parse(text))
      parsed = candidate.success ? candidate.data : null
    } catch {
      parsed = null
    }
    return {
      ok: true,
      value: { verdict: parsed?.verdict ?? 'tie', valid: parsed !== null, usage, provider },
    }
  } catch (err) {
    return { ok: false, failure: classify(err) }
  }
}
