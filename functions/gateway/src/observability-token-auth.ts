/**
 * Observability-token authentication (`svc_ot_…`, shared/auth/observability-tokens.ts): looked up
 * by SHA-256 (indexed), compared in constant time, refused when revoked. Results are cached per
 * isolate for API_KEY_CACHE_TTL_SECONDS like API keys (unknown and revoked tokens too, so guessing
 * floods do not reach the database); rotating or revoking a token drops its entries in the isolate
 * that forwarded the change at once. The gateway accepts these tokens on the OTLP ingestion routes
 * only (gateway.app.ts). `last_used_at` is written off the request path, at most once a minute.
 */
import { eq } from 'drizzle-orm'
import { digestsEqual } from '../../../shared/auth/api-keys'
import { hashObservabilityToken } from '../../../shared/auth/observability-tokens'
import { isObservabilityToken } from '../../../shared/auth/opaque-credentials'
import { openDatabase } from '../../../shared/db/client'
import { observabilityTokens, tenants } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { Identity } from '../../../shared/worker/request-context'
import type { GatewayEnv } from './gateway.context'

interface CacheEntry {
  identity: Identity | null
  tokenId: string | null
  reason: 'unknown' | 'revoked' | null
  expiresAt: number
}

const MAX_ENTRIES = 10_000
const TOUCH_INTERVAL_MS = 60_000
const cache = new Map<string, CacheEntry>()
const lastTouched = new Map<string, number>()

function ttlMs(env: GatewayEnv): number {
  const seconds = Number(env.API_KEY_CACHE_TTL_SECONDS ?? '30')
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 30_000
}

/** Drops every cached entry of a token id (rotated or revoked through this isolate). */
export function invalidateObservabilityToken(tokenId: string): void {
  for (const [key, entry] of cache) if (entry.tokenId === tokenId) cache.delete(key)
}

function remember(key: string, entry: CacheEntry): void {
  if (cache.size >= MAX_ENTRIES) {
    const oldest = cache.keys().next().value
    if (oldest !== undefined) cache.delete(oldest)
  }
  cache.set(key, entry)
}

function refuse(reason: 'unknown' | 'revoked'): never {
  throw reason === 'revoked'
    ? new AppError(
        401,
        'revoked_observability_token',
        'This observability token has been revoked. Create or rotate one at /platform/v1/observability-tokens.',
      )
    : new AppError(
        401,
        'invalid_observability_token',
        'The observability token is not valid. Check that you copied the whole token.',
      )
}

function touch(
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  tokenId: string,
  now: number,
): void {
  if (now - (lastTouched.get(tokenId) ?? 0) < TOUCH_INTERVAL_MS) return
  lastTouched.set(tokenId, now)
  ctx.waitUntil(
    (async () => {
      const database = openDatabase(env, { max: 1 })
      try {
        await database.db
          .update(observabilityTokens)
          .set({ lastUsedAt: new Date(now) })
          .where(eq(observabilityTokens.id, tokenId))
      } catch (err) {
        console.error(
          JSON.stringify({ level: 'warn', event: 'observability_token_touch_failed', detail: String(err) }),
        )
      } finally {
        await database.close()
      }
    })(),
  )
}

export async function authenticateObservabilityToken(
  token: string,
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
): Promise<Identity> {
  if (!isObservabilityToken(token)) refuse('unknown')
  const now = Date.now()
  const hit = cache.get(token)
  if (hit && hit.expiresAt > now) {
    if (!hit.identity) refuse(hit.reason ?? 'unknown')
    if (hit.tokenId) touch(env, ctx, hit.tokenId, now)
    return hit.identity
  }
  const hash = hashObservabilityToken(token)
  const database = openDatabase(env, { max: 1 })
  let row:
    | { id: string; tenantId: string; tokenHash: string; revokedAt: Date | null; planId: string }
    | undefined
  try {
    ;[row] = await database.db
      .select({
        id: observabilityTokens.id,
        tenantId: observabilityTokens.tenantId,
        tokenHash: observabilityTokens.tokenHash,
        revokedAt: observabilityTokens.revokedAt,
        planId: tenants.planId,
      })
      .from(observabilityTokens)
      .innerJoin(tenants, eq(tenants.id, observabilityTokens.tenantId))
      .where(eq(observabilityTokens.tokenHash, hash))
      .limit(1)
  } catch (err) {
    throw new AppError(
      503,
      'credential_store_unavailable',
      'Credentials cannot be verified right now; retry shortly.',
      {
        internalMessage: `observability token lookup failed: ${String(err)}`,
        headers: { 'retry-after': '1' },
      },
    )
  } finally {
    ctx.waitUntil(database.close())
  }
  const expiresAt = now + ttlMs(env)
  if (!row || !digestsEqual(row.tokenHash, hash)) {
    remember(token, { identity: null, tokenId: null, reason: 'unknown', expiresAt })
    refuse('unknown')
  }
  if (row.revokedAt) {
    remember(token, { identity: null, tokenId: row.id, reason: 'revoked', expiresAt })
    refuse('revoked')
  }
  const identity: Identity = {
    tenantId: row.tenantId,
    principal: { kind: 'observability_token', tokenId: row.id, subject: `observability-token:${row.id}` },
    role: 'member',
    planId: row.planId,
    scopes: ['telemetry:write'],
  }
  remember(token, { identity, tokenId: row.id, reason: null, expiresAt })
  touch(env, ctx, row.id, now)
  return identity
}
