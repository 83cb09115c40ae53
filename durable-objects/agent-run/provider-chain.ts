/**
 * What the outbound provider chains have in common (web search, speech-to-text): providers are
 * tried in the configured order until one answers; each call runs under a deadline that also
 * aborts it (reading the body included) and follows the caller's own abort; every failure is
 * classified with a detail safe to show to clients (never a key, never an upstream body); and a
 * chain whose providers all failed answers 502 with the list.
 */
import { AppError } from '../../shared/http/errors'

export type FetchFn = (input: string, init: RequestInit) => Promise<Response>

export type ProviderFailureKind = 'http_status' | 'timeout' | 'network' | 'malformed' | 'binding_error'

/** How one provider failed. Each chain throws its own subclass, narrowing the kinds it uses. */
export class ProviderError<K extends ProviderFailureKind = ProviderFailureKind> extends Error {
  constructor(
    readonly provider: string,
    readonly kind: K,
    /** Safe to show to clients: never a key, never the upstream body. */
    readonly detail: string,
    readonly status?: number,
  ) {
    super(`${provider}: ${detail}`)
    this.name = 'ProviderError'
  }
}

/** Makes the chain's own error for a provider's failure. */
export type ProviderFailure = (
  provider: string,
  kind: 'http_status' | 'timeout' | 'network' | 'malformed',
  detail: string,
  status?: number,
) => ProviderError

/**
 * Runs `call` with a signal that aborts when `timeoutMs` passes (and rejects with `timeout`) or
 * when `outer` aborts (with its reason).
 */
export async function withDeadline<T>(
  call: (signal: AbortSignal) => Promise<T>,
  timeoutMs: number,
  timeout: Error,
  outer?: AbortSignal,
): Promise<T> {
  const controller = new AbortController()
  const onOuterAbort = () => controller.abort(outer?.reason)
  outer?.addEventListener('abort', onOuterAbort, { once: true })
  let timer: ReturnType<typeof setTimeout> | undefined
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(timeout)
      reject(timeout)
    }, timeoutMs)
  })
  try {
    return await Promise.race([call(controller.signal), timedOut])
  } finally {
    if (timer !== undefined) clearTimeout(timer)
    outer?.removeEventListener('abort', onOuterAbort)
  }
}

export interface ChainOptions {
  /** The caller's signal: once it aborts, its reason is thrown and no further provider is tried. */
  signal?: AbortSignal
  /** Per provider, reading the answer included. */
  timeoutMs: number
  failure: ProviderFailure
  /** The 502's error code, e.g. `search_providers_failed`. */
  code: string
  /** What the providers are, for the 502's message: "every configured <what> failed: …". */
  what: string
}

/**
 * Tries each provider in order under its deadline and returns the first answer with the provider
 * that gave it. A failure that is not a ProviderError counts as a network failure. When every
 * provider failed: AppError 502 `code`, the message listing each provider and how it failed, and
 * the same as `failures` in the body.
 */
export async function firstAnswer<P extends { readonly name: string }, T>(
  providers: readonly P[],
  call: (provider: P, signal: AbortSignal) => Promise<T>,
  options: ChainOptions,
): Promise<{ provider: P; answer: T }> {
  const { signal, timeoutMs, failure } = options
  const failures: ProviderError[] = []
  for (const provider of providers) {
    if (signal?.aborted) throw signal.reason
    try {
      const timeout = failure(provider.name, 'timeout', `timed out after ${timeoutMs} ms`)
      const answer = await withDeadline((deadline) => call(provider, deadline), timeoutMs, timeout, signal)
      return { provider, answer }
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      failures.push(
        err instanceof ProviderError
          ? err
          : failure(
              provider.name,
              'network',
              `failed (${err instanceof Error ? err.name : 'unknown error'})`,
            ),
      )
    }
  }
  const list = failures.map((f) => `${f.provider}: ${f.detail}`).join('; ')
  throw new AppError(502, options.code, `every configured ${options.what} failed: ${list}`, {
    internalMessage: list,
    extraBody: {
      failures: failures.map((f) => ({
        provider: f.provider,
        kind: f.kind,
        detail: f.detail,
        status: f.status ?? null,
      })),
    },
  })
}

/**
 * Sends a provider request and returns its decoded JSON body. Every failure is classified:
 * `network` (no answer, or the connection lost while reading it), `http_status` (with a hint for
 * a refused credential or a rate limit), `malformed` (not JSON). When `signal` aborted, its reason
 * is thrown instead (the deadline's timeout, or the caller going away).
 */
export async function fetchProviderJson(
  provider: string,
  fetchFn: FetchFn,
  url: string,
  init: RequestInit & { signal: AbortSignal },
  failure: ProviderFailure,
): Promise<unknown> {
  const { signal } = init
  let res: Response
  try {
    res = await fetchFn(url, init)
  } catch (err) {
    if (signal.aborted) throw signal.reason
    throw failure(provider, 'network', `network error (${err instanceof Error ? err.name : 'unknown'})`)
  }
  if (!res.ok) {
    await res.body?.cancel()
    const hint =
      res.status === 401 || res.status === 403
        ? ' (credential rejected)'
        : res.status === 429
          ? ' (rate limited)'
          : ''
    throw failure(provider, 'http_status', `HTTP ${res.status}${hint}`, res.status)
  }
  let text: string
  try {
    text = await res.text()
  } catch (err) {
    if (signal.aborted) throw signal.reason
    throw failure(
      provider,
      'network',
      `connection lost while reading the body (${err instanceof Error ? err.name : 'unknown'})`,
    )
  }
  try {
    return JSON.parse(text)
  } catch {
    throw failure(provider, 'malformed', 'malformed response body (not JSON)')
  }
}
