/**
 * API key authentication (`svc_sk_live_…` / `svc_sk_test_…`). Keys are looked up by their SHA-256
 * and compared in constant time; revoked keys are refused; results are cached per isolate, revocation
 * and rotation through this isolate take effect at once, `last_used_at` is written off the request
 * path (opaque-credential-cache.ts, shared with observability tokens). A key with an expiry (one
 * being rotated out, or made to expire) is refused from that instant on: a cache entry is never
 * trusted beyond it. The key's own limits (shared/auth/key-limits.ts) travel in its identity; a
 * change to them through this isolate takes effect on its next request (afterAdminChange).
 */
import { eq } from 'drizzle-orm'
import { apiKeyMode, digestsEqual, hashApiKey } from '../../../shared/auth/api-keys'
import { keyLimitsOf } from '../../../shared/auth/key-limits'
import { apiKeys, tenants } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { Identity } from '../../../shared/worker/request-context'
import { type GatewayEnv, gatewaySettings } from './gateway.context'
import { CredentialCache, lookUpCredential, touchLastUsed } from './opaque-credential-cache'

type Refusal = 'unknown' | 'revoked' | 'expired'

const cache = new CredentialCache<Refusal>()

/** Forgets a key (just revoked or rotated through this isolate): its next use is looked up again. */
export function invalidateApiKey(keyId: string): void {
  cache.invalidate(keyId)
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
  if (!cache.touchDue(keyId, now)) return
  touchLastUsed(env, ctx, 'api_key_touch_failed', (db) =>
    db
      .update(apiKeys)
      .set({ lastUsedAt: new Date(now) })
      .where(eq(apiKeys.id, keyId)),
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
  const hit = cache.get(key, now)
  if (hit) {
    if (!hit.identity) refuse(hit.reason ?? 'unknown')
    if (hit.credentialExpiresAt !== null && hit.credentialExpiresAt <= now) refuse('expired')
    if (hit.identity.principal.kind === 'api_key') touch(env, ctx, hit.identity.principal.keyId, now)
    return hit.identity
  }

  const hash = await hashApiKey(key)
  const [row] = await lookUpCredential(env, ctx, 'api key', (db) =>
    db
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
        allowedModels: apiKeys.allowedModels,
        spendLimitUsd: apiKeys.spendLimitUsd,
        spendPeriod: apiKeys.spendPeriod,
        requestsPerMinute: apiKeys.requestsPerMinute,
        tokensPerMinute: apiKeys.tokensPerMinute,
      })
      .from(apiKeys)
      .innerJoin(tenants, eq(tenants.id, apiKeys.tenantId))
      .where(eq(apiKeys.keyHash, hash))
      .limit(1),
  )

  const expiresAt = now + gatewaySettings(env).API_KEY_CACHE_TTL_SECONDS * 1000
  if (!row || !digestsEqual(row.keyHash, hash) || row.mode !== mode) {
    cache.remember(key, { identity: null, reason: 'unknown', expiresAt, credentialExpiresAt: null }, null)
    refuse('unknown')
  }
  if (row.revokedAt) {
    cache.remember(key, { identity: null, reason: 'revoked', expiresAt, credentialExpiresAt: null }, row.id)
    refuse('revoked')
  }
  const keyExpiresAt = row.expiresAt?.getTime() ?? null
  if (keyExpiresAt !== null && keyExpiresAt <= now) {
    cache.remember(
      key,
      { identity: null, reason: 'expired', expiresAt, credentialExpiresAt: keyExpiresAt },
      row.id,
    )
    refuse('expired')
  }
  const limits = keyLimitsOf(row)
  const identity: Identity = {
    tenantId: row.tenantId,
    mode: row.mode,
    principal: { kind: 'api_key', keyId: row.id, mode: row.mode, ...(limits ? { limits } : {}) },
    role: row.role,
    planId: row.planId,
    scopes: row.scopes,
  }
  cache.remember(key, { identity, reason: null, expiresAt, credentialExpiresAt: keyExpiresAt }, row.id)
  touch(env, ctx, row.id, now)
  return identity
}
