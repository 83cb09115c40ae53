/**
 * Failed-credential throttling in `login_throttle`: one counter per account (`account:<email>`,
 * `client:<service account id>`) and one per client address (`address:<ip>`). Failures are counted
 * in a window (AUTH_LOGIN_WINDOW_SECONDS); reaching the limit locks the key for
 * AUTH_LOGIN_LOCKOUT_SECONDS. While any key of an attempt is locked the attempt is answered 429
 * with Retry-After, before the password is looked at, so a correct password during a lockout
 * reveals nothing. Unknown accounts are counted like known ones (no enumeration through lockouts).
 * A success clears the account counter, never the address counter (an attacker who owns one
 * account must not be able to reset the count of the address they guess from).
 *
 * Client address: `CF-Connecting-IP` (set by Cloudflare's edge, which overwrites any client value),
 * else the first `X-Forwarded-For` entry (local runs, other proxies), else `unknown`.
 */
import { inArray, sql } from 'drizzle-orm'
import type { Drizzle } from '../../../shared/db/client'
import { loginThrottle } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { AuthSettings } from './auth.context'

export interface ThrottleKey {
  key: string
  limit: number
}

export function clientAddress(request: Request): string {
  const cf = request.headers.get('cf-connecting-ip')?.trim()
  if (cf) return cf.toLowerCase()
  const forwarded = request.headers.get('x-forwarded-for')?.split(',')[0]?.trim()
  return forwarded ? forwarded.toLowerCase() : 'unknown'
}

export function loginThrottleKeys(email: string, address: string, settings: AuthSettings): ThrottleKey[] {
  return [
    { key: `account:${email.trim().toLowerCase()}`, limit: settings.maxFailuresPerAccount },
    { key: `address:${address}`, limit: settings.maxFailuresPerAddress },
  ]
}

export function clientThrottleKeys(clientId: string, address: string, settings: AuthSettings): ThrottleKey[] {
  return [
    { key: `client:${clientId.toLowerCase()}`, limit: settings.maxFailuresPerAccount },
    { key: `address:${address}`, limit: settings.maxFailuresPerAddress },
  ]
}

/** Seconds until the latest lock among the rows ends, or 0 when none is locked. */
export function lockedForSeconds(rows: readonly { lockedUntil: Date | null }[], now: Date): number {
  const until = Math.max(0, ...rows.map((r) => r.lockedUntil?.getTime() ?? 0))
  return until > now.getTime() ? Math.ceil((until - now.getTime()) / 1000) : 0
}

/**
 * 429 `login_throttled` when any key is locked; otherwise the keys that have a counter (so a
 * success clears only a counter that exists, and the common case costs one query).
 */
export async function assertNotThrottled(
  db: Drizzle,
  keys: readonly ThrottleKey[],
  now = new Date(),
): Promise<Set<string>> {
  const rows = await db
    .select({ key: loginThrottle.key, lockedUntil: loginThrottle.lockedUntil })
    .from(loginThrottle)
    .where(
      inArray(
        loginThrottle.key,
        keys.map((k) => k.key),
      ),
    )
  const seconds = lockedForSeconds(rows, now)
  if (seconds > 0) {
    throw new AppError(
      429,
      'login_throttled',
      `Too many failed attempts for this account or from this address; try again in ${seconds} s.`,
      { headers: { 'retry-after': String(seconds) } },
    )
  }
  return new Set(rows.map((r) => r.key))
}

/** Counts one failure on every key (atomically per key), locking keys that reach their limit. */
export async function recordFailure(
  db: Drizzle,
  keys: readonly ThrottleKey[],
  settings: AuthSettings,
  now = new Date(),
): Promise<void> {
  const windowStart = new Date(now.getTime() - settings.windowSeconds * 1000)
  const lockUntil = new Date(now.getTime() + settings.lockoutSeconds * 1000)
  for (const { key, limit } of keys) {
    const fresh = sql`${loginThrottle.windowStartedAt} < ${windowStart.toISOString()}::timestamptz`
    await db
      .insert(loginThrottle)
      .values({ key, failures: 1, windowStartedAt: now, lockedUntil: limit <= 1 ? lockUntil : null })
      .onConflictDoUpdate({
        target: loginThrottle.key,
        set: {
          failures: sql`case when ${fresh} then 1 else ${loginThrottle.failures} + 1 end`,
          windowStartedAt: sql`case when ${fresh} then ${now.toISOString()}::timestamptz else ${loginThrottle.windowStartedAt} end`,
          lockedUntil: sql`case when (case when ${fresh} then 1 else ${loginThrottle.failures} + 1 end) >= ${limit} then ${lockUntil.toISOString()}::timestamptz else ${loginThrottle.lockedUntil} end`,
        },
      })
  }
}

/** A success clears the account's counter (not the address's). */
export async function clearAccount(db: Drizzle, key: ThrottleKey): Promise<void> {
  await db.delete(loginThrottle).where(sql`${loginThrottle.key} = ${key.key}`)
}
