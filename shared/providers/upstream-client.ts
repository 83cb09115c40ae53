/**
 * Sends a chat completion to the targets of a model alias, with failover, retries and a
 * circuit breaker per target. Rules (also in docs/providers.md):
 *
 * - Targets are tried in configured order. Connect errors, timeouts, 408/409/429/5xx, invalid
 *   upstream responses, and 401/403/404 (a wrong key or model name is our configuration, not
 *   the client's fault) move on to the next target.
 * - 400/413/422 are the client's request: answered as the client's error at once, no failover.
 * - After a full pass, up to `retry.maxRounds - 1` more passes run over the targets whose
 *   failure was transient, after exponential backoff with jitter, never sooner than the
 *   upstream's Retry-After; a Retry-After beyond `retry.maxRetryAfterMs` drops that target.
 * - A target whose breaker is open is skipped without a request.
 * - `timeoutMs` covers connecting, the response head and, for JSON, the whole body; for a
 *   stream it covers the first bytes. Once the first stream bytes are in hand the attempt has
 *   succeeded: from then on there is no failover (they go to the client).
 * - The client's AbortSignal aborts the upstream request at any point, also mid-stream.
 *
 * No target configured → 503 naming the missing configuration; every target failed → 502
 * listing each target and how it failed (never keys or headers).
 */
import type { ModelAlias } from '../catalog/model-aliases'
import { AppError } from '../http/errors'
import type { UpstreamSse } from './chat-chunks'
import { type ChatCompletion, type ProviderChatRequest, WireErrorBodySchema } from './chat-wire'
import { type BreakerBoard, type CircuitBreaker, isolateBreakers } from './circuit-breaker'
import {
  type BreakerSettings,
  type OpenAiCompatibleProvider,
  type ProviderTarget,
  providerNotConfigured,
  type RetrySettings,
} from './provider-config'
import { delayBeforeRound, parseRetryAfter, sleep } from './retry-policy'
import { simulateChatCompletion } from './simulated-model'
import { readChatCompletion } from './wire-check'
import { isWorkersAiBinding, runWorkersAi } from './workers-ai'

export interface UpstreamDeps {
  readonly fetch: typeof fetch
  readonly now: () => number
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>
  readonly random: () => number
  readonly breakers: BreakerBoard
}

export function defaultUpstreamDeps(overrides: Partial<UpstreamDeps> = {}): UpstreamDeps {
  return {
    fetch: (input, init) => fetch(input, init),
    now: () => Date.now(),
    sleep,
    random: Math.random,
    breakers: isolateBreakers,
    ...overrides,
  }
}

/** Secrets (API keys named by `apiKeySecret`) and bindings (Workers AI) of the worker. */
export type ProviderEnv = Readonly<Record<string, unknown>>

export type AttemptOutcome =
  | 'ok'
  | 'client_error'
  | 'rate_limited'
  | 'server_error'
  | 'timeout'
  | 'network_error'
  | 'invalid_response'
  | 'auth_error'
  | 'not_found'
  | 'rejected'
  | 'circuit_open'
  | 'not_configured'

export interface UpstreamAttempt {
  readonly providerId: string
  readonly upstreamModel: string
  readonly round: number
  readonly outcome: AttemptOutcome
  readonly status: number | null
  readonly detail: string
  readonly retryAfterMs: number | null
  readonly durationMs: number
}

export interface UpstreamCall {
  readonly alias: ModelAlias
  readonly request: ProviderChatRequest
  readonly targets: readonly ProviderTarget[]
  readonly env: ProviderEnv
  readonly retry: RetrySettings
  readonly breaker: BreakerSettings
  readonly signal?: AbortSignal
  readonly requestId?: string
}

interface SuccessBase {
  readonly target: ProviderTarget
  readonly attempts: readonly UpstreamAttempt[]
  readonly breaker: CircuitBreaker
}

export type UpstreamSuccess =
  | (SuccessBase & { readonly kind: 'json'; readonly completion: ChatCompletion })
  | (SuccessBase & {
      readonly kind: 'stream'
      /** Upstream SSE bytes: the body's reader and the first bytes already read from it. */
      readonly body: UpstreamSse
      /** Aborts the upstream request. */
      readonly abort: () => void
    })

const RETRIABLE: ReadonlySet<AttemptOutcome> = new Set([
  'rate_limited',
  'server_error',
  'timeout',
  'network_error',
  'invalid_response',
])

const DEFAULT_EFFORT_MAP: Readonly<Record<string, string | null>> = {
  xhigh: 'high',
  max: 'high',
  ultracode: 'high',
}

/** The body sent upstream: the client's request with the upstream model name, usage always requested on streams. */
export function upstreamRequestBody(
  request: ProviderChatRequest,
  target: ProviderTarget,
): Record<string, unknown> {
  const body: Record<string, unknown> = { ...request, model: target.upstreamModel }
  if (request.stream) body.stream_options = { ...(request.stream_options ?? {}), include_usage: true }
  else delete body.stream_options
  if (target.provider.kind === 'openai-compatible' && request.reasoning_effort !== undefined) {
    const map = target.provider.reasoningEffort ?? DEFAULT_EFFORT_MAP
    const mapped = map[request.reasoning_effort]
    if (mapped === null) delete body.reasoning_effort
    else if (mapped !== undefined) body.reasoning_effort = mapped
  }
  return body
}

export function clientClosedError(): AppError {
  return new AppError(
    499,
    'client_closed_request',
    'The client closed the request before the model answered.',
  )
}

type AttemptFailure = {
  readonly ok: false
  readonly outcome: Exclude<AttemptOutcome, 'ok'>
  readonly status: number | null
  readonly detail: string
  readonly retryAfterMs: number | null
  readonly clientError?: AppError
}

type AttemptSuccess =
  | { readonly ok: true; readonly kind: 'json'; readonly completion: ChatCompletion }
  | {
      readonly ok: true
      readonly kind: 'stream'
      readonly body: UpstreamSse
      readonly abort: () => void
    }

const failure = (
  outcome: AttemptFailure['outcome'],
  detail: string,
  status: number | null = null,
  retryAfterMs: number | null = null,
): AttemptFailure => ({ ok: false, outcome, status, detail, retryAfterMs })

/** Why a target cannot be used at all (missing secret or binding), or null. */
function missingConfiguration(target: ProviderTarget, env: ProviderEnv): string | null {
  const provider = target.provider
  if (provider.kind === 'openai-compatible' && provider.apiKeySecret) {
    const key = env[provider.apiKeySecret]
    if (typeof key !== 'string' || key.length === 0) return `secret ${provider.apiKeySecret} is not set`
  }
  if (provider.kind === 'workers-ai' && !isWorkersAiBinding(env[provider.binding])) {
    return `Workers AI binding ${provider.binding} is not bound`
  }
  return null
}

async function readErrorBody(
  response: Response,
): Promise<{ message: string | null; code: string | null; param: string | null }> {
  try {
    const text = (await response.text()).slice(0, 8192)
    const parsed = WireErrorBodySchema.safeParse(JSON.parse(text))
    if (!parsed.success) return { message: null, code: null, param: null }
    const error = parsed.data.error
    return {
      message: error.message ?? null,
      code: error.code === undefined || error.code === null ? null : String(error.code),
      param: error.param ?? null,
    }
  } catch {
    return { message: null, code: null, param: null }
  }
}

function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason)
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
}

async function openResponse(
  target: ProviderTarget,
  call: UpstreamCall,
  body: Record<string, unknown>,
  signal: AbortSignal,
  deps: UpstreamDeps,
): Promise<Response> {
  const provider = target.provider
  switch (provider.kind) {
    case 'openai-compatible':
      return deps.fetch(`${provider.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: openAiHeaders(provider, call),
        body: JSON.stringify(body),
        signal,
      })
    case 'workers-ai': {
      const binding = call.env[provider.binding]
      if (!isWorkersAiBinding(binding)) throw new Error(`binding ${provider.binding} is not bound`)
      const request = body as ProviderChatRequest
      return Promise.race([
        runWorkersAi(binding, target.upstreamModel, request, deps.now),
        rejectOnAbort(signal),
      ])
    }
    case 'simulated':
      return simulateChatCompletion(body as ProviderChatRequest, { alias: call.alias, now: deps.now })
  }
}

/** A plain object (names lower-cased): the runtime converts it faster than a Headers object. */
function openAiHeaders(provider: OpenAiCompatibleProvider, call: UpstreamCall): Record<string, string> {
  const headers: Record<string, string> = {}
  if (provider.headers)
    for (const [name, value] of Object.entries(provider.headers)) headers[name.toLowerCase()] = value
  headers['content-type'] = 'application/json'
  headers.accept = call.request.stream ? 'text/event-stream' : 'application/json'
  if (provider.apiKeySecret) headers.authorization = `Bearer ${String(call.env[provider.apiKeySecret])}`
  if (call.requestId) headers['x-client-request-id'] = call.requestId
  return headers
}

async function attemptTarget(
  target: ProviderTarget,
  call: UpstreamCall,
  deps: UpstreamDeps,
): Promise<AttemptSuccess | AttemptFailure> {
  const controller = new AbortController()
  const onClientAbort = () => controller.abort(call.signal?.reason)
  call.signal?.addEventListener('abort', onClientAbort, { once: true })
  let timedOut = false
  const timeoutMs = target.provider.timeoutMs
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort(new Error(`timed out after ${timeoutMs} ms`))
  }, timeoutMs)
  const detach = () => {
    clearTimeout(timer)
    call.signal?.removeEventListener('abort', onClientAbort)
  }
  const thrown = (err: unknown): AttemptFailure => {
    if (call.signal?.aborted) throw clientClosedError()
    if (timedOut) return failure('timeout', `timed out after ${timeoutMs} ms`)
    return failure('network_error', `connection failed (${err instanceof Error ? err.name : 'error'})`)
  }

  let handedOver = false
  try {
    let response: Response
    try {
      response = await openResponse(
        target,
        call,
        upstreamRequestBody(call.request, target),
        controller.signal,
        deps,
      )
    } catch (err) {
      return thrown(err)
    }
    const status = response.status
    if (status >= 200 && status < 300) {
      if (!call.request.stream) {
        let text: string
        try {
          text = await response.text()
        } catch (err) {
          return thrown(err)
        }
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          return failure('invalid_response', 'answered with a body that is not JSON', status)
        }
        const completion = readChatCompletion(json)
        if (!completion)
          return failure('invalid_response', 'answered with a body that is not a chat.completion', status)
        return { ok: true, kind: 'json', completion }
      }
      const contentType = response.headers.get('content-type') ?? ''
      if (!contentType.includes('text/event-stream') || !response.body) {
        await response.body?.cancel().catch(() => {})
        return failure(
          'invalid_response',
          `answered a stream request with ${contentType || 'no content type'}`,
          status,
        )
      }
      const reader = response.body.getReader()
      let first: ReadableStreamReadResult<Uint8Array>
      try {
        first = await reader.read()
      } catch (err) {
        return thrown(err)
      }
      if (first.done) return failure('invalid_response', 'closed the stream before sending anything', status)
      handedOver = true
      clearTimeout(timer)
      return {
        ok: true,
        kind: 'stream',
        body: { reader, first: first.value },
        abort: () => controller.abort(),
      }
    }

    const retryAfterMs = parseRetryAfter(response.headers, deps.now())
    if (status === 429) {
      await response.body?.cancel().catch(() => {})
      const after = retryAfterMs === null ? '' : ` (Retry-After ${Math.ceil(retryAfterMs / 1000)} s)`
      return failure('rate_limited', `rate limited, HTTP 429${after}`, status, retryAfterMs)
    }
    if (status >= 500 || status === 408 || status === 409) {
      await response.body?.cancel().catch(() => {})
      return failure('server_error', `HTTP ${status}`, status, retryAfterMs)
    }
    if (status === 401 || status === 403) {
      await response.body?.cancel().catch(() => {})
      return failure('auth_error', `refused our credentials, HTTP ${status}`, status)
    }
    if (status === 404) {
      await response.body?.cancel().catch(() => {})
      return failure('not_found', `does not know model ${target.upstreamModel}, HTTP 404`, status)
    }
    if (status === 400 || status === 413 || status === 422) {
      const upstream = await readErrorBody(response)
      const message = (upstream.message ?? 'The model provider rejected the request.').replaceAll(
        target.upstreamModel,
        call.alias,
      )
      return {
        ...failure('client_error', `rejected the request, HTTP ${status}`, status),
        clientError: new AppError(status, upstream.code ?? 'upstream_rejected_request', message, {
          param: upstream.param,
          internalMessage: `provider ${target.provider.id} (${target.upstreamModel}) answered ${status}`,
        }),
      }
    }
    await response.body?.cancel().catch(() => {})
    return failure('rejected', `HTTP ${status}`, status)
  } finally {
    if (!handedOver) detach()
    else clearTimeout(timer)
  }
}

function summarize(attempts: readonly UpstreamAttempt[]): string {
  const byTarget = new Map<string, { detail: string; count: number }>()
  for (const a of attempts) {
    const entry = byTarget.get(a.providerId)
    byTarget.set(a.providerId, { detail: a.detail, count: (entry?.count ?? 0) + 1 })
  }
  return [...byTarget.entries()]
    .map(([id, { detail, count }]) => `${id}: ${detail}${count > 1 ? ` (${count} attempts)` : ''}`)
    .join('; ')
}

/** Sends the request to the first target that answers; throws AppError as described above. */
export async function sendChatCompletion(
  call: UpstreamCall,
  deps: UpstreamDeps = defaultUpstreamDeps(),
): Promise<UpstreamSuccess> {
  if (call.targets.length === 0) {
    throw providerNotConfigured(call.alias)
  }
  const attempts: UpstreamAttempt[] = []
  let candidates: readonly ProviderTarget[] = call.targets
  for (let round = 0; round < call.retry.maxRounds && candidates.length > 0; round++) {
    if (round > 0) {
      const lastRound = attempts.filter((a) => a.round === round - 1 && RETRIABLE.has(a.outcome))
      const delay = delayBeforeRound(
        round,
        lastRound.map((a) => a.retryAfterMs),
        call.retry,
        deps.random,
      )
      try {
        await deps.sleep(delay, call.signal)
      } catch {
        throw clientClosedError()
      }
    }
    const retryNext: ProviderTarget[] = []
    for (const target of candidates) {
      if (call.signal?.aborted) throw clientClosedError()
      const record = (
        result: AttemptFailure | { outcome: 'ok'; status: number | null; detail: string },
        started: number,
      ) => {
        const retryAfterMs = 'retryAfterMs' in result ? result.retryAfterMs : null
        attempts.push({
          providerId: target.provider.id,
          upstreamModel: target.upstreamModel,
          round,
          outcome: result.outcome,
          status: result.status,
          detail: result.detail,
          retryAfterMs,
          durationMs: deps.now() - started,
        })
      }
      const missing = missingConfiguration(target, call.env)
      if (missing) {
        record(failure('not_configured', `not configured: ${missing}`), deps.now())
        continue
      }
      const breaker = deps.breakers.get(target.key, call.breaker)
      const started = deps.now()
      if (!breaker.tryAcquire(started)) {
        const wait = Math.ceil(breaker.retryInMs(started) / 1000)
        record(
          failure(
            'circuit_open',
            `skipped, circuit open after repeated failures (next probe in ${wait} s)`,
            null,
            breaker.retryInMs(started),
          ),
          started,
        )
        continue
      }
      let result: AttemptSuccess | AttemptFailure
      try {
        result = await attemptTarget(target, call, deps)
      } catch (err) {
        breaker.release()
        throw err
      }
      if (result.ok) {
        breaker.recordSuccess()
        record({ outcome: 'ok', status: 200, detail: 'ok' }, started)
        return { ...result, target, attempts, breaker }
      }
      record(result, started)
      if (result.clientError) {
        breaker.recordSuccess()
        throw result.clientError
      }
      breaker.recordFailure(deps.now())
      const waitTooLong = result.retryAfterMs !== null && result.retryAfterMs > call.retry.maxRetryAfterMs
      if (RETRIABLE.has(result.outcome) && !waitTooLong) retryNext.push(target)
    }
    candidates = retryNext
  }

  if (attempts.every((a) => a.outcome === 'not_configured')) {
    throw providerNotConfigured(call.alias, summarize(attempts))
  }
  const waits = attempts.map((a) => a.retryAfterMs).filter((ms): ms is number => ms !== null)
  const headers: Record<string, string> = {}
  if (waits.length > 0)
    headers['retry-after'] = String(Math.min(60, Math.max(1, Math.ceil(Math.min(...waits) / 1000))))
  throw new AppError(
    502,
    'upstream_unavailable',
    `Every model provider for ${call.alias} failed: ${summarize(attempts)}. Retry the request later.`,
    { headers, internalMessage: JSON.stringify(attempts) },
  )
}
