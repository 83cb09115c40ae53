/**
 * Checking user passwords and service-account secrets against their Argon2id hashes, with the same
 * cost whether or not the account exists: an unknown account is checked against a fixed dummy hash
 * made with the current parameters, so response time does not reveal which emails or client ids
 * exist.
 *
 * Service-account secrets: a successful check is remembered per isolate for five minutes, keyed by
 * the stored hash and the SHA-256 of the presented secret, so a service that fetches tokens often
 * pays the ~0.3 s Argon2id once, not on every exchange. Rotating the secret changes the stored
 * hash and therefore misses the cache; revocation is checked on every exchange.
 */
import { hashApiKey } from '../../../shared/auth/api-keys'
import { verifyPassword } from '../../../shared/crypto'

/** Argon2id (m=19456, t=2, p=1) of a random string nobody knows; verified when the account is unknown. */
export const DUMMY_PASSWORD_HASH =
  '$argon2id$v=19$m=19456,t=2,p=1$/3eG3iMoU22gmW2Li4zQ/g$V+Lz2mleNHHRvqOW5npTg2vIrm11JIi+8BjJxZ3hrLY'

/** Verifies `presented` against `stored`, or against the dummy hash (and fails) when there is no account. */
export async function verifyAgainst(stored: string | null | undefined, presented: string): Promise<boolean> {
  const ok = await verifyPassword(presented, stored ?? DUMMY_PASSWORD_HASH)
  return ok && typeof stored === 'string'
}

const VERIFIED_TTL_MS = 5 * 60_000
const MAX_VERIFIED = 1000
const verified = new Map<string, number>()

export async function verifyServiceSecret(
  stored: string | null | undefined,
  presented: string,
): Promise<boolean> {
  if (typeof stored !== 'string') return verifyAgainst(null, presented)
  const key = `${stored}\n${await hashApiKey(presented)}`
  const now = Date.now()
  const hit = verified.get(key)
  if (hit !== undefined && hit > now) return true
  const ok = await verifyAgainst(stored, presented)
  if (ok) {
    if (verified.size >= MAX_VERIFIED) verified.delete(verified.keys().next().value!)
    verified.set(key, now + VERIFIED_TTL_MS)
  }
  return ok
}
