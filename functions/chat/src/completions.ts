/**
 * POST /svc/chat/completions. The request path, in order (each step can refuse):
 *
 *   1. validate the body (400 naming the field and the rule)              chat.schemas.ts
 *   2. plan entitlements: model access, features, context size counted with
 *      the tokenizer (403 action-required)                                  shared/plans
 *   3. live keys: a provider is configured for the alias (503 naming it)    shared/providers
 *   4. rate and allowance: one RPC to the tenant's RateLimiter object,
 *      reserving prompt + output-budget tokens (429/402 action-required)   shared/metering
 *   5. the model: live keys → the configured upstreams (failover, retries,
 *      breaker); test keys → the built-in simulated model, never upstream
 *   6. the answer: JSON, or SSE relayed chunk by chunk
 *   7. the usage is stored before the client is told the request ended: a JSON answer
 *      leaves once the RateLimiter has the ledger row; a stream's last event
 *      (`[DONE]` or the error event) waits for it too, and while it runs the stream
 *      checkpoints what it has delivered, so a crash mid-stream bills that much
 *
 * Every response carries x-ratelimit-* headers (index.ts adds them to refusals that happen
 * before step 4).
 */
import type { OpenAPIHono } from '@hono/zod-openapi'
import { createRoute } from '@hono/zod-openapi'
import { z } from 'zod'
import { actionRequiredResponse, errorResponse } from '../../../shared/http/error-body'
import { type AppError, toAppError } from '../../../shared/http/errors'
import { type MeterGrant, openMeter } from '../../../shared/metering/metering-client'
import {
  CLIENT_CLOSED_REQUEST,
  outcomeStatus,
  type WorkOutcome,
} from '../../../shared/metering/request-status'
import { checkChatEntitlements } from '../../../shared/plans/entitlements'
import { resolvePlan } from '../../../shared/plans/plan-catalog'
import { actionRequiredError, type UpgradeDecision } from '../../../shared/plans/upgrade-decision'
import type { StreamOutcome, StreamStatus } from '../../../shared/providers/chat-chunks'
import { type ChatMode, createChatCompletion } from '../../../shared/providers/chat-completions'
import {
  type ChatCompletion,
  type NormalizedUsage,
  requestedMaxTokens,
} from '../../../shared/providers/chat-wire'
import { requireProvider } from '../../../shared/providers/provider-config'
import { countPromptTokens } from '../../../shared/providers/tokenizer'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import {
  type Identity,
  isTestMode,
  type RequestContext,
  requireIdentity,
} from '../../../shared/worker/request-context'
import { type ChatEnv, providerEnv } from './chat.context'
import {
  ChatCompletionRequestSchema,
  ChatCompletionResponseSchema,
  parseChatCompletionRequest,
} from './chat.schemas'

export const CHAT_COMPLETIONS_PATH = '/svc/chat/completions'

/**
 * Output tokens reserved against tokens/min when the request sets no max_tokens /
 * max_completion_tokens (per choice). The reservation becomes the real usage when the request
 * ends, so this only bounds how many such requests can be in flight at once.
 */
export const DEFAULT_OUTPUT_TOKEN_ESTIMATE = 1024

/** A running stream reports its usage so far this often when it has grown... */
export const STREAM_CHECKPOINT_MS = 2_000
/** ...and at least this often while it is open (the RateLimiter bills a stream silent for a minute as it stands). */
export const STREAM_CHECKPOINT_KEEPALIVE_MS = 20_000

/**
 * Checkpoints a running stream: once at once (the prompt is paid for as soon as the upstream
 * answers), then whenever the usage grew in the last STREAM_CHECKPOINT_MS, and at least every
 * STREAM_CHECKPOINT_KEEPALIVE_MS. Returns the function that stops it.
 */
function checkpointStream(send: (usage: NormalizedUsage) => Promise<void>, progress: () => NormalizedUsage) {
  let timer: ReturnType<typeof setTimeout> | null = null
  let lastTotal = -1
  let lastSentAt = 0
  const tick = () => {
    const usage = progress()
    const now = Date.now()
    if (usage.totalTokens !== lastTotal || now - lastSentAt >= STREAM_CHECKPOINT_KEEPALIVE_MS) {
      lastTotal = usage.totalTokens
      lastSentAt = now
      void send(usage)
    }
    timer = setTimeout(tick, STREAM_CHECKPOINT_MS)
  }
  tick()
  return () => {
    if (timer !== null) clearTimeout(timer)
    timer = null
  }
}

/** Live keys need a configured upstream for the alias; checked before anything is reserved. */

function paramFor(decision: UpgradeDecision): string | null {
  switch (decision.reason) {
    case 'model_access_required':
      return 'model'
    case 'feature_required':
      return 'reasoning_effort'
    case 'context_limit_reached':
      return 'messages'
    default:
      return null
  }
}

const RATE_LIMIT_HEADER = 'x-ratelimit-limit-requests'

/** How a stream's end reads in the request log (shared/metering/request-status.ts). */
const STREAM_OUTCOMES: Record<StreamStatus, WorkOutcome> = {
  completed: 'completed',
  upstream_error: 'failed',
  upstream_cut: 'failed',
  client_cancelled: 'cancelled',
}

/** The tenant's current x-ratelimit-* counters, for answers the limiter did not decide. */
function currentLimits(env: ChatEnv, identity: Identity): Promise<Record<string, string>> {
  return openMeter(env.RATE_LIMITER, identity, 'chat.completions').headers()
}

function withHeaders(err: unknown, headers: Record<string, string>): AppError {
  const error = toAppError(err)
  for (const [name, value] of Object.entries(headers)) {
    if (!(name in error.headers)) error.headers[name] = value
  }
  return error
}

/** What a chat completion needs: the parsed JSON body and the request as the gateway handed it over. */
export interface ChatCompletionCall {
  readonly body: unknown
  readonly context: RequestContext
  readonly env: ChatEnv
  readonly executionCtx: Pick<ExecutionContext, 'waitUntil'>
  /** Aborts the upstream request when the client goes away (when the runtime reports it). */
  readonly signal?: AbortSignal
}

/** The answer, with the x-ratelimit-* headers every response carries. */
export type ChatCompletionAnswer =
  | { readonly kind: 'json'; readonly completion: ChatCompletion; readonly headers: Record<string, string> }
  | {
      readonly kind: 'stream'
      readonly stream: ReadableStream<Uint8Array>
      readonly headers: Record<string, string>
    }

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
}

/**
 * The request path of a chat completion (steps 1–7 above), shared by the Hono route and the
 * chat worker's RPC fast path. Throws the AppError to render (with rate-limit headers once
 * the limiter was consulted).
 */
export async function completeChat(call: ChatCompletionCall): Promise<ChatCompletionAnswer> {
  const { requestId } = call.context
  const identity = requireIdentity(call.context)
  const { env, executionCtx } = call
  const parsed = parseChatCompletionRequest(call.body)
  // A key with a spend limit reserves each request's worst case: without an output budget of its
  // own, the request gets the one reserved for it, so its cost cannot exceed the reservation.
  const spendLimited = identity.principal.kind === 'api_key' && !!identity.principal.limits?.spendLimit
  const request =
    spendLimited && requestedMaxTokens(parsed) === null
      ? { ...parsed, max_completion_tokens: DEFAULT_OUTPUT_TOKEN_ESTIMATE }
      : parsed
  const { plan, catalog } = resolvePlan(env, identity.planId)
  const mode: ChatMode = isTestMode(identity) ? 'test' : 'live'

  const promptTokens = countPromptTokens(request.messages, request.tools)
  const maxOutput = requestedMaxTokens(request)
  const decision = checkChatEntitlements(
    plan,
    {
      model: request.model,
      reasoning_effort: request.reasoning_effort,
      promptTokens,
      maxOutputTokens: maxOutput,
    },
    { catalog },
  )
  if (decision) throw actionRequiredError(decision, { param: paramFor(decision), catalog })
  const registry = mode === 'live' ? requireProvider(env, request.model).registry : null

  const meter = openMeter(env.RATE_LIMITER, identity, 'chat.completions')
  const grant: MeterGrant = await meter.acquire(
    {
      requestId,
      model: request.model,
      estimatedTokens: promptTokens + (maxOutput ?? DEFAULT_OUTPUT_TOKEN_ESTIMATE) * (request.n ?? 1),
    },
    catalog,
  )

  // The usage of a stream is recorded once, by whichever comes first: the relay about to send
  // the last event, or the stream ending otherwise (the client went away).
  let streamSettle: Promise<boolean> | null = null
  let stopCheckpoints = () => {}
  const settleStream = (outcome: StreamOutcome, provider: string): Promise<boolean> => {
    stopCheckpoints()
    streamSettle ??= meter.settle(grant, {
      usage: outcome.usage,
      estimated: outcome.usageSource === 'estimated',
      provider,
      status: outcomeStatus(STREAM_OUTCOMES[outcome.status]),
    })
    return streamSettle
  }

  let result: Awaited<ReturnType<typeof createChatCompletion>>
  try {
    result = await createChatCompletion({
      request,
      alias: request.model,
      mode,
      registry,
      env: providerEnv(env),
      ...(call.signal ? { signal: call.signal } : {}),
      requestId,
      beforeStreamEnd: (outcome, target) => settleStream(outcome, target.providerId),
    })
  } catch (err) {
    const error = withHeaders(err, grant.headers)
    // Admitted, then failed before any output: logged with the status the client gets, zero charge.
    const status = call.signal?.aborted ? CLIENT_CLOSED_REQUEST : error.status
    executionCtx.waitUntil(meter.settle(grant, { usage: null, estimated: false, provider: 'none', status }))
    throw error
  }

  if (result.kind === 'json') {
    await meter.settle(grant, {
      usage: result.usage,
      estimated: result.usageSource === 'estimated',
      provider: result.target.providerId,
      status: 200,
    })
    return { kind: 'json', completion: result.completion, headers: grant.headers }
  }

  const provider = result.target.providerId
  if (streamSettle === null) {
    stopCheckpoints = checkpointStream(
      (usage) => meter.checkpoint(grant, { usage, estimated: true, provider }),
      result.progress,
    )
  }
  executionCtx.waitUntil(result.outcome.then((outcome) => settleStream(outcome, provider)))
  return { kind: 'stream', stream: result.stream, headers: grant.headers }
}

export function completionRoutes(app: OpenAPIHono<FamilyEnv<ChatEnv>>): void {
  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'post',
      path: CHAT_COMPLETIONS_PATH,
      tags: ['Chat'],
      summary: 'Create a chat completion (JSON, or server-sent events when stream is true)',
      request: {
        body: { required: true, content: { 'application/json': { schema: ChatCompletionRequestSchema } } },
      },
      responses: {
        200: {
          description:
            'The completion; with stream: true, `text/event-stream` of chat.completion.chunk events ending in `data: [DONE]`',
          content: {
            'application/json': { schema: ChatCompletionResponseSchema },
            'text/event-stream': { schema: z.string() },
          },
        },
        400: errorResponse(
          'invalid_request_body naming the field and the rule; or the model provider rejected the request (its code and message passed through)',
        ),
        402: actionRequiredResponse(
          'insufficient_credits or overage_cap_reached: no funded usage credit left',
        ),
        403: actionRequiredResponse(
          'model_access_required, feature_required or context_limit_reached: the plan does not include the model, capability or context size',
        ),
        413: errorResponse('The model provider refused the request as too large'),
        422: errorResponse('The model provider rejected the request (its code and message passed through)'),
        429: actionRequiredResponse(
          'token_allowance_exhausted or tier_allowance_exhausted (x-should-retry: false), or rate_limited (retry after Retry-After)',
        ),
        502: errorResponse('upstream_unavailable: every configured model provider failed'),
        503: errorResponse(
          'provider_not_configured for the alias (live keys), metering_unavailable, or the plan catalog is invalid',
        ),
      },
    }),
  )

  app.post(CHAT_COMPLETIONS_PATH, async (c) => {
    const context = c.get('request')
    let answer: ChatCompletionAnswer
    try {
      answer = await completeChat({
        body: await c.req.json(),
        context,
        env: c.env,
        executionCtx: c.executionCtx,
        signal: c.req.raw.signal,
      })
    } catch (err) {
      // Every chat answer carries the x-ratelimit-* headers: a refusal made before the limiter was
      // consulted (400, 403, 503) gets the current counters, without counting the refused request.
      // The family's one error handler renders it.
      const error = toAppError(err)
      if (!(RATE_LIMIT_HEADER in error.headers) && context.identity) {
        Object.assign(error.headers, await currentLimits(c.env, context.identity))
      }
      throw error
    }
    if (answer.kind === 'json') return c.json(answer.completion, 200, answer.headers)
    return new Response(answer.stream, { status: 200, headers: { ...SSE_HEADERS, ...answer.headers } })
  })
}
