/**
 * Observability-token authentication (`svc_ot_…`, shared/auth/observability-tokens.ts): looked up
 * by SHA-256 and compared in constant time, refused when revoked, cached per isolate with
 * invalidation on rotate and revoke, `last_used_at` written off the request path — the same
 * handling as API keys (opaque-credential-cache.ts). The gateway accepts these tokens on the OTLP
 * ingestion routes only (gateway.app.ts, checkCredentialKind).
 */
import { eq } from 'drizzle-orm'
import { digestsEqual } from '../../../shared/auth/api-keys'
import { hashObservabilityToken } from '../../../shared/auth/observability-tokens'
import { isObservabilityToken } from '../../../shared/auth/opaque-credentials'
import { observabilityTokens, tenants } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { Identity } from '../../../shared/worker/request-context'
import { type GatewayEnv, gatewaySettings } from './gateway.context'
import { CredentialCache, lookUpCredential, touchLastUsed } from './opaque-credential-cache'

type Refusal = 'unknown' | 'revoked'

const cache = new CredentialCache<Refusal>()

/** Drops every cached entry of a token id (rotated or revoked through this isolate). */
export function invalidateObservabilityToken(tokenId: string): void {
  cache.invalidate(tokenId)
}

function refuse(reason: Refusal): never {
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
  if (!cache.touchDue(tokenId, now)) return
  touchLastUsed(env, ctx, 'observability_token_touch_failed', (db) =>
    db
      .update(observabilityTokens)
      .set({ lastUsedAt: new Date(now) })
      .where(eq(observabilityTokens.id, tokenId)),
  )
}

export async function authenticateObservabilityToken(
  token: string,
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
): Promise<Identity> {
  if (!isObservabilityToken(token)) refuse('unknown')
  const now = Date.now()
  const hit = cache.get(token, now)
  if (hit) {
    if (!hit.identity) refuse(hit.reason ?? 'unknown')
    if (hit.identity.principal.kind === 'observability_token')
      touch(env, ctx, hit.identity.principal.tokenId, now)
    return hit.identity
  }
  const hash = hashObservabilityToken(token)
  const [row] = await lookUpCredential(env, ctx, 'observability token', (db) =>
    db
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
      .limit(1),
  )
  const expiresAt = now + gatewaySettings(env).API_KEY_CACHE_TTL_SECONDS * 1000
  if (!row || !digestsEqual(row.tokenHash, hash)) {
    cache.remember(token, { identity: null, reason: 'unknown', expiresAt, credentialExpiresAt: null }, null)
    refuse('unknown')
  }
  if (row.revokedAt) {
    cache.remember(token, { identity: null, reason: 'revoked', expiresAt, credentialExpiresAt: null }, row.id)
    refuse('revoked')
  }
  const identity: Identity = {
    tenantId: row.tenantId,
    // Telemetry is the workspace's own, not a test or live resource: tokens act live.
    mode: 'live',
    principal: { kind: 'observability_token', tokenId: row.id, subject: `observability-token:${row.id}` },
    role: 'member',
    planId: row.planId,
    scopes: ['telemetry:write'],
  }
  cache.remember(token, { identity, reason: null, expiresAt, credentialExpiresAt: null }, row.id)
  touch(env, ctx, row.id, now)
  return identity
}
