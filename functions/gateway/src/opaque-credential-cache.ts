/**
 * What the two opaque bearer credentials share at the gateway: API keys (`svc_sk_…`,
 * api-key-auth.ts) and observability tokens (`svc_ot_…`, observability-token-auth.ts). Both are
 * stored as SHA-256 digests, looked up by digest (indexed), compared in constant time; each file
 * keeps only its own query, refusals and identity.
 *
 * - Lookups are cached per isolate for API_KEY_CACHE_TTL_SECONDS (default 30), unknown and revoked
 *   credentials too, so a hot credential costs no database round trip and guessing floods do not
 *   reach the database. The cache is keyed by the presented credential itself: the isolate holds
 *   it in memory for the request anyway, the cache never leaves the isolate, and a hit is a
 *   whole-string match inside a hash table (nothing an attacker can time byte by byte).
 * - Revoking or rotating one through this isolate drops its entries at once (`invalidate`, by the
 *   credential's id); other isolates follow within one TTL.
 * - `last_used_at` is written off the request path (waitUntil), at most once a minute per
 *   credential and isolate.
 * - A lookup that fails is 503 `credential_store_unavailable` with Retry-After: 1.
 */
import { type DatabaseEnv, type Drizzle, openDatabase } from '../../../shared/db/client'
import { AppError } from '../../../shared/http/errors'
import { errorFields, log } from '../../../shared/worker/log'
import type { Identity } from '../../../shared/worker/request-context'

const MAX_ENTRIES = 10_000
const TOUCH_INTERVAL_MS = 60_000

export interface CachedLookup<Refusal extends string> {
  /** Null when the credential was refused (`reason` says why). */
  readonly identity: Identity | null
  readonly reason: Refusal | null
  /** When this entry stops being trusted (ms). */
  readonly expiresAt: number
  /** When the credential itself stops working (ms), or null: never trusted beyond it. */
  readonly credentialExpiresAt: number | null
}

interface Entry<Refusal extends string> extends CachedLookup<Refusal> {
  readonly id: string | null
}

export class CredentialCache<Refusal extends string> {
  private readonly entries = new Map<string, Entry<Refusal>>()
  /** Credential id → the presented values cached for it (one, or two during a rotation race). */
  private readonly byId = new Map<string, Set<string>>()
  private readonly lastTouched = new Map<string, number>()

  /** The live entry for a presented credential, or null (never looked up, or expired). */
  get(presented: string, now: number): CachedLookup<Refusal> | null {
    const entry = this.entries.get(presented)
    return entry && entry.expiresAt > now ? entry : null
  }

  /** Caches a lookup; `id` is the credential's id when the digest matched a stored one. */
  remember(presented: string, lookup: CachedLookup<Refusal>, id: string | null): void {
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.forget(oldest)
    }
    this.entries.set(presented, { ...lookup, id })
    if (id) {
      const presentedValues = this.byId.get(id) ?? new Set<string>()
      presentedValues.add(presented)
      this.byId.set(id, presentedValues)
    }
  }

  /** Forgets a credential (revoked or rotated through this isolate): its next use is looked up again. */
  invalidate(id: string): void {
    for (const presented of this.byId.get(id) ?? []) this.entries.delete(presented)
    this.byId.delete(id)
  }

  /** Whether `last_used_at` of credential `id` is due a write now; if so, counts it as written. */
  touchDue(id: string, now: number): boolean {
    if (now - (this.lastTouched.get(id) ?? 0) < TOUCH_INTERVAL_MS) return false
    this.lastTouched.set(id, now)
    return true
  }

  private forget(presented: string): void {
    const entry = this.entries.get(presented)
    this.entries.delete(presented)
    if (!entry?.id) return
    const presentedValues = this.byId.get(entry.id)
    presentedValues?.delete(presented)
    if (presentedValues?.size === 0) this.byId.delete(entry.id)
  }
}

/** Writes `last_used_at` after the response (failures are only logged as `event`). */
export function touchLastUsed(
  env: DatabaseEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  event: string,
  write: (db: Drizzle) => Promise<unknown>,
): void {
  ctx.waitUntil(
    (async () => {
      const database = openDatabase(env, { max: 1 })
      try {
        await write(database.db)
      } catch (err) {
        log('warn', event, errorFields(err))
      } finally {
        await database.close()
      }
    })(),
  )
}

/** Runs a credential lookup on a connection of its own; a failure is 503 with Retry-After: 1. */
export async function lookUpCredential<T>(
  env: DatabaseEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  what: string,
  query: (db: Drizzle) => Promise<T>,
): Promise<T> {
  const database = openDatabase(env, { max: 1 })
  try {
    return await query(database.db)
  } catch (err) {
    throw new AppError(
      503,
      'credential_store_unavailable',
      'Credentials cannot be verified right now; retry shortly.',
      { internalMessage: `${what} lookup failed: ${String(err)}`, headers: { 'retry-after': '1' } },
    )
  } finally {
    ctx.waitUntil(database.close())
  }
}
