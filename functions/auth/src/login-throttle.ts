/**
 * Failed-credential throttling in `login_throttle`. Each attempt counts on three keys:
 *
 * - the account from this address (`account-address:<email> <ip>`, service tokens
 *   `client-address:<id> <ip>`): 5 failures lock that address out of that account. A stranger who
 *   guesses wrong locks their own address, not the owner, who still signs in from theirs;
 * - the account from everywhere (`account:<email>`, `client:<id>`): a much higher backstop (100)
 *   against guesses spread over many addresses, which then does lock the account for everyone;
 * - the address over all accounts (`address:<ip>`): 20 failures lock the address (password spraying).
 *
 * Failures are counted in a window (AUTH_LOGIN_WINDOW_SECONDS); reaching a key's limit locks it for
 * AUTH_LOGIN_LOCKOUT_SECONDS. While any key of an attempt is locked the attempt is answered 429
 * with Retry-After, before the password is looked at, so a correct password during a lockout
 * reveals nothing. Unknown accounts are counted like known ones (no enumeration through lockouts).
 * A success clears the account-from-this-address counter only: never the address counter (an
 * attacker who owns one account must not reset the count of the address they guess from), nor the
 * backstop (the owner signing in must not hand a distributed guesser a fresh allowance).
 *
 * Client address: `CF-Connecting-IP` (set by Cloudflare's edge, which overwrites any client value),
 * else the first `X-Forwarded-For` entry (local runs, other proxies), else `unknown`.
 */
import { inArray, sql } from 'drizzle-orm'
import type { Drizzle } from '../../../shared/db/client'
import { loginThrottle } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { AuthSettings } from './auth.context'

/** What a key counts failures of (the 429 says which one locked). */
type ThrottleScope = 'account_address' | 'account' | 'address'

export interface ThrottleKey {
  key: string
  limit: number
  scope: ThrottleScope
}

export function clientAddress(request: Request): string {
  const cf = request.headers.get('cf-connecting-ip')?.trim()
  if (cf) return cf.toLowerCase()
  const forwarded = request.headers.get('x-forwarded-for')?.split(',')[0]?.trim()
  return forwarded ? forwarded.toLowerCase() : 'unknown'
}

/** The keys of one attempt on `account` (`account:<email>` or `client:<id>`) from `address`. */
function throttleKeys(
  kind: 'account' | 'client',
  account: string,
  address: string,
  settings: AuthSettings,
): ThrottleKey[] {
  return [
    {
      key: `${kind}-address:${account} ${address}`,
      limit: settings.maxFailuresPerAccountAddress,
      scope: 'account_address',
    },
    { key: `${kind}:${account}`, limit: settings.maxFailuresPerAccount, scope: 'account' },
    { key: `address:${address}`, limit: settings.maxFailuresPerAddress, scope: 'address' },
  ]
}

export function loginThrottleKeys(email: string, address: string, settings: AuthSettings): ThrottleKey[] {
  return throttleKeys('account', email.trim().toLowerCase(), address, settings)
}

export function clientThrottleKeys(clientId: string, address: string, settings: AuthSettings): ThrottleKey[] {
  return throttleKeys('client', clientId.toLowerCase(), address, settings)
}

const LOCKED_MESSAGES: Record<ThrottleScope, string> = {
  account_address: 'Too many failed sign-ins to this account from your address',
  account: 'Too many failed sign-ins to this account from many addresses; it is locked for everyone',
  address: 'Too many failed sign-ins from your address',
}

/** Seconds until the latest lock among the rows ends, or 0 when none is locked. */
export function lockedForSeconds(rows: readonly { lockedUntil: Date | null }[], now: Date): number {
  const until = Math.max(0, ...rows.map((r) => r.lockedUntil?.getTime() ?? 0))
  return until > now.getTime() ? Math.ceil((until - now.getTime()) / 1000) : 0
}

/**
 * 429 `login_throttled` when any key is locked, saying which (the message) and until when
 * (Retry-After); otherwise the keys that have a counter (so a success clears only a counter that
 * exists, and the common case costs one query).
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
    // The lock that ends last is the one the person waits for.
    const last = rows.reduce((a, b) =>
      (b.lockedUntil?.getTime() ?? 0) > (a.lockedUntil?.getTime() ?? 0) ? b : a,
    )
    const scope = keys.find((k) => k.key === last.key)?.scope ?? 'address'
    throw new AppError(429, 'login_throttled', `${LOCKED_MESSAGES[scope]}; try again in ${seconds} s.`, {
      headers: { 'retry-after': String(seconds) },
    })
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

/** A success clears the count of the account from this address (neither the backstop nor the address's). */
export async function clearAccount(db: Drizzle, keys: readonly ThrottleKey[]): Promise<void> {
  const key = keys.find((k) => k.scope === 'account_address')
  if (key) await db.delete(loginThrottle).where(sql`${loginThrottle.key} = ${key.key}`)
}
