/**
 * API key authentication. Keys are looked up by their SHA-256 (indexed) and compared in
 * constant time; revoked keys are refused. Results are cached per isolate for a short TTL
 * (API_KEY_CACHE_TTL_SECONDS, default 30) so a hot key costs no database round trip; unknown
 * and revoked keys are cached too, so guessing floods do not reach the database. The cache is
 * keyed by the presented key itself, so a hot key costs no hash either: the isolate holds the key
 * in memory for the request anyway, the cache never leaves the isolate, and a hit is a whole-string
 * match inside a hash table (nothing an attacker can time byte by byte). A revocation
 * therefore takes effect everywhere within one TTL, and at once in the isolate that forwarded it
 * (`invalidateApiKey`, which finds the cached entries of a key id). A key with an expiry (one
 * being rotated out, or made to expire) is refused from that instant on: an entry is never
 * trusted beyond it. `last_used_at` is written off the request path, at most once a minute per
 * key and isolate.
 */
import { eq } from 'drizzle-orm'
import { apiKeyMode, digestsEqual, hashApiKey } from '../../../shared/auth/api-keys'
import { openDatabase } from '../../../shared/db/client'
import { apiKeys, tenants } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { Identity } from '../../../shared/worker/request-context'
import { type GatewayEnv, gatewaySettings } from './gateway.context'

type Refusal = 'unknown' | 'revoked' | 'expired'

interface CacheEntry {
  identity: Identity | null
  reason: Refusal | null
  expiresAt: number
  /** When the key itself stops working (ms), or null. */
  keyExpiresAt: number | null
}

const MAX_ENTRIES = 10_000
const TOUCH_INTERVAL_MS = 60_000
const cache = new Map<string, CacheEntry>()
const lastTouched = new Map<string, number>()
/** Key id → the presented keys cached for it (one, or two during a race), for invalidation. */
const cachedById = new Map<string, Set<string>>()

export function clearApiKeyCache(): void {
  cache.clear()
  lastTouched.clear()
  cachedById.clear()
}

/** Forgets a key (just revoked or rotated through this isolate): its next use is looked up again. */
export function invalidateApiKey(keyId: string): void {
  for (const key of cachedById.get(keyId) ?? []) cache.delete(key)
  cachedById.delete(keyId)
}

function ttlMs(env: GatewayEnv): number {
  return gatewaySettings(env).API_KEY_CACHE_TTL_SECONDS * 1000
}

function remember(key: string, entry: CacheEntry, keyId: string | null): void {
  if (cache.size >= MAX_ENTRIES) {
    const oldest = cache.keys().next().value
    if (oldest !== undefined) {
      const evicted = cache.get(oldest)
      cache.delete(oldest)
      if (evicted?.identity?.principal.kind === 'api_key') cachedById.delete(evicted.identity.principal.keyId)
    }
  }
  cache.set(key, entry)
  if (keyId) {
    const keys = cachedById.get(keyId) ?? new Set<string>()
    keys.add(key)
    cachedById.set(keyId, keys)
  }
}

function refuse(reason: Refusal): never {
  switch (reason) {
    case 'revoked':
      throw new AppError(
        401,
        'revoked_api_key',
        'This API key has been revoked. Create a new key in your workspace console.',
      )
    case 'expired':
      throw new AppError(
        401,
        'expired_api_key',
        'This API key has expired (or its rotation grace period ended). Use its replacement or create a new key.',
      )
    case 'unknown':
      throw new AppError(
        401,
        'invalid_api_key',
        'The API key is not valid. Check that you copied the whole key.',
      )
  }
}

function touch(env: GatewayEnv, ctx: Pick<ExecutionContext, 'waitUntil'>, keyId: string, now: number): void {
  const last = lastTouched.get(keyId) ?? 0
  if (now - last < TOUCH_INTERVAL_MS) return
  lastTouched.set(keyId, now)
  ctx.waitUntil(
    (async () => {
      const database = openDatabase(env, { max: 1 })
      try {
        await database.db
          .update(apiKeys)
          .set({ lastUsedAt: new Date(now) })
          .where(eq(apiKeys.id, keyId))
      } catch (err) {
        console.error(JSON.stringify({ level: 'warn', event: 'api_key_touch_failed', detail: String(err) }))
      } finally {
        await database.close()
      }
    })(),
  )
}

export async function authenticateApiKey(
  key: string,
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
): Promise<Identity> {
  const mode = apiKeyMode(key)
  if (!mode) refuse('unknown')
  const now = Date.now()
  const hit = cache.get(key)
  if (hit && hit.expiresAt > now) {
    if (!hit.identity) refuse(hit.reason ?? 'unknown')
    if (hit.keyExpiresAt !== null && hit.keyExpiresAt <= now) refuse('expired')
    if (hit.identity.principal.kind === 'api_key') touch(env, ctx, hit.identity.principal.keyId, now)
    return hit.identity
  }

  const hash = await hashApiKey(key)
  const database = openDatabase(env, { max: 1 })
  let row:
    | {
        id: string
        tenantId: string
        mode: 'live' | 'test'
        role: 'owner' | 'admin' | 'member'
        scopes: string[]
        keyHash: string
        revokedAt: Date | null
        expiresAt: Date | null
        planId: string
      }
    | undefined
  try {
    ;[row] = await database.db
      .select({
        id: apiKeys.id,
        tenantId: apiKeys.tenantId,
        mode: apiKeys.mode,
        role: apiKeys.role,
        scopes: apiKeys.scopes,
        keyHash: apiKeys.keyHash,
        revokedAt: apiKeys.revokedAt,
        expiresAt: apiKeys.expiresAt,
        planId: tenants.planId,
      })
      .from(apiKeys)
      .innerJoin(tenants, eq(tenants.id, apiKeys.tenantId))
      .where(eq(apiKeys.keyHash, hash))
      .limit(1)
  } catch (err) {
    throw new AppError(
      503,
      'credential_store_unavailable',
      'Credentials cannot be verified right now; retry shortly.',
      {
        internalMessage: `api key lookup failed: ${String(err)}`,
        headers: { 'retry-after': '1' },
      },
    )
  } finally {
    ctx.waitUntil(database.close())
  }

  const expiresAt = now + ttlMs(env)
  if (!row || !digestsEqual(row.keyHash, hash) || row.mode !== mode) {
    remember(key, { identity: null, reason: 'unknown', expiresAt, keyExpiresAt: null }, null)
    refuse('unknown')
  }
  if (row.revokedAt) {
    remember(key, { identity: null, reason: 'revoked', expiresAt, keyExpiresAt: null }, row.id)
    refuse('revoked')
  }
  const keyExpiresAt = row.expiresAt?.getTime() ?? null
  if (keyExpiresAt !== null && keyExpiresAt <= now) {
    remember(key, { identity: null, reason: 'expired', expiresAt, keyExpiresAt }, row.id)
    refuse('expired')
  }
  const identity: Identity = {
    tenantId: row.tenantId,
    principal: { kind: 'api_key', keyId: row.id, mode: row.mode },
    role: row.role,
    planId: row.planId,
    scopes: row.scopes,
  }
  remember(key, { identity, reason: null, expiresAt, keyExpiresAt }, row.id)
  touch(env, ctx, row.id, now)
  return identity
}
