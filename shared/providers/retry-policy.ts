/**
 * Backoff between retry rounds: exponential with "equal jitter" (half fixed, half random), never
 * shorter than the upstream's Retry-After, and a Retry-After above the cap means "do not retry
 * this target in this request" (the caller fails over or gives up instead of waiting).
 */
import type { RetrySettings } from './provider-config'

/**
 * Reads `retry-after-ms` (OpenAI's extension) or `Retry-After` (delta-seconds, possibly
 * fractional, or an HTTP date). Returns milliseconds, or null when absent or unreadable.
 */
export function parseRetryAfter(headers: Headers, now: number): number | null {
  const ms = headers.get('retry-after-ms')
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms))
  const value = headers.get('retry-after')?.trim()
  if (!value) return null
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000)
  const date = Date.parse(value)
  if (Number.isNaN(date)) return null
  return Math.max(0, date - now)
}

/** Delay before retry round `round` (1 = first retry). */
export function backoffDelay(round: number, settings: RetrySettings, random: () => number): number {
  const exponential = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** Math.max(0, round - 1))
  return Math.round(exponential / 2 + (random() * exponential) / 2)
}

/** The wait before the next round: backoff, raised to the shortest acceptable Retry-After. */
export function delayBeforeRound(
  round: number,
  retryAfterMs: readonly (number | null)[],
  settings: RetrySettings,
  random: () => number,
): number {
  const backoff = backoffDelay(round, settings, random)
  const honoured = retryAfterMs.filter((ms): ms is number => ms !== null && ms <= settings.maxRetryAfterMs)
  return honoured.length === 0 ? backoff : Math.max(backoff, Math.min(...honoured))
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason)
      return
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
