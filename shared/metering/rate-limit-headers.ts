/**
 * OpenAI's rate-limit headers, sent on every chat completion response:
 *   x-ratelimit-limit-requests / -tokens      the plan's per-minute limits
 *   x-ratelimit-remaining-requests / -tokens  what is left in the current one-minute window
 *   x-ratelimit-reset-requests / -tokens      when the oldest counted request (or its tokens)
 *                                             leaves the window, i.e. when `remaining` next grows
 * Durations use OpenAI's format: "250ms", "1.5s", "59s", "1m0s".
 */
import type { RateLimitSnapshot } from './metering.schemas'

export function formatResetDuration(ms: number): string {
  const rounded = Math.max(0, Math.ceil(ms))
  if (rounded < 1000) return `${rounded}ms`
  if (rounded < 60_000) return `${Number((rounded / 1000).toFixed(3))}s`
  const minutes = Math.floor(rounded / 60_000)
  const seconds = Number(((rounded % 60_000) / 1000).toFixed(3))
  return `${minutes}m${seconds}s`
}

export function rateLimitHeaders(snapshot: RateLimitSnapshot): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': String(snapshot.limitRequests),
    'x-ratelimit-remaining-requests': String(snapshot.remainingRequests),
    'x-ratelimit-reset-requests': formatResetDuration(snapshot.resetRequestsMs),
    'x-ratelimit-limit-tokens': String(snapshot.limitTokens),
    'x-ratelimit-remaining-tokens': String(snapshot.remainingTokens),
    'x-ratelimit-reset-tokens': formatResetDuration(snapshot.resetTokensMs),
  }
}
