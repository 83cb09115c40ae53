/**
 * Open client registration (RFC 7591, as MCP clients expect it) throttled per client address:
 * OAUTH_REGISTRATIONS_PER_ADDRESS registrations per OAUTH_REGISTRATION_WINDOW_SECONDS (default 10
 * per hour), then 429 with Retry-After until the window ends. An MCP host registers once per
 * installation, so the limit only stops floods (200 clients in 3.5 s were all stored before).
 *
 * The counter is a row of `login_throttle` (key `registration:<address>`; its `failures` column
 * counts registrations here), bumped in one atomic upsert that also starts a new window when the
 * old one ended: no read-then-write race lets concurrent requests pass the limit. Every attempt
 * counts, refused or not. The address is read as for logins (login-throttle.ts `clientAddress`).
 */
import { sql } from 'drizzle-orm'
import type { Drizzle } from '../../../../shared/db/client'
import { loginThrottle } from '../../../../shared/db/schema'
import type { AuthSettings } from '../auth.context'
import { OAuthError } from './oauth-error'

export const registrationThrottleKey = (address: string) => `registration:${address}`

/** Counts one registration from `address`; 429 `registration_throttled` beyond the limit. */
export async function countRegistration(
  db: Drizzle,
  address: string,
  settings: Pick<AuthSettings, 'registrationsPerAddress' | 'registrationWindowSeconds'>,
  now = new Date(),
): Promise<void> {
  const windowMs = settings.registrationWindowSeconds * 1000
  const ended = sql`${loginThrottle.windowStartedAt} <= ${new Date(now.getTime() - windowMs).toISOString()}::timestamptz`
  const [row] = await db
    .insert(loginThrottle)
    .values({ key: registrationThrottleKey(address), failures: 1, windowStartedAt: now })
    .onConflictDoUpdate({
      target: loginThrottle.key,
      set: {
        failures: sql`case when ${ended} then 1 else ${loginThrottle.failures} + 1 end`,
        windowStartedAt: sql`case when ${ended} then ${now.toISOString()}::timestamptz else ${loginThrottle.windowStartedAt} end`,
      },
    })
    .returning({ count: loginThrottle.failures, windowStartedAt: loginThrottle.windowStartedAt })
  if (!row || row.count <= settings.registrationsPerAddress) return
  const seconds = Math.max(1, Math.ceil((row.windowStartedAt.getTime() + windowMs - now.getTime()) / 1000))
  throw new OAuthError(
    429,
    'registration_throttled',
    `Too many client registrations from this address (at most ${settings.registrationsPerAddress} per ${settings.registrationWindowSeconds} s); try again in ${seconds} s, or reuse the client_id you registered.`,
    { 'retry-after': String(seconds) },
  )
}
