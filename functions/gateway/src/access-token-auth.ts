/**
 * Access-token (JWT) authentication at the gateway. Tokens are issued by the auth family and signed
 * with ML-DSA (RFC 9964) or EdDSA; the gateway checks, in this order:
 *
 * 1. the JWS (shared/crypto `verifyAccessToken`): shape, `alg` one of ML-DSA-44/65/87 or EdDSA
 *    (never `none`, never HMAC or RSA/ECDSA), `kid` of a published key of that algorithm, the
 *    signature, the claims, `iss`, a lifetime (`exp` - `iat`) no longer than the issuer's
 *    AUTH_ACCESS_TOKEN_TTL_SECONDS, and `exp`/`nbf`/`iat` with JWT_LEEWAY_SECONDS of leeway;
 * 2. `tenant_id` present (every token this product issues is tenant-scoped);
 * 3. the audience against the route (shared/routing FAMILY_TOKEN_AUDIENCES): 403
 *    `token_wrong_audience` for a genuine token meant for another audience;
 * 4. the principal still exists: the user is still a member of the tenant, the service account is
 *    not revoked (cached for API_KEY_CACHE_TTL_SECONDS, like API keys), which also yields the role
 *    and the tenant's plan;
 * 5. for a token issued from a refresh-token family (`sid`: a login session or an OAuth
 *    authorization), the family is not revoked (a refresh token or authorization code used twice,
 *    the membership ended): 401 `token_revoked`. Cached like principals, so a revocation reaches
 *    every isolate within API_KEY_CACHE_TTL_SECONDS, as an API key's does; the token's own 15
 *    minutes no longer matter.
 * The token's algorithm is then checked against the tenant's crypto policy by crypto-enforcement.ts
 * (403 `crypto_policy_violation` in enforce mode), and `tenant_id` against x-svc-tenant by the
 * gateway's tenancy check.
 *
 * Cost: a verified token is cached per isolate by the SHA-256 of the token until it expires, so a
 * hot token costs one SHA-256 and two map lookups instead of an ML-DSA verification (~1.5-3 ms).
 * Refusals are cached for ten seconds, so a flood of one bad token does not cost a verify each.
 */
import { and, eq } from 'drizzle-orm'
import { hashApiKey } from '../../../shared/auth/api-keys'
import { parseSubject, type Subject } from '../../../shared/auth/subjects'
import { AUDIENCES, JWS_ALGORITHMS, type VerificationKey, verifyAccessToken } from '../../../shared/crypto'
import { isResourceAudience } from '../../../shared/crypto/access-token'
import type { JwsAlgorithm } from '../../../shared/crypto/jws-algorithms'
import { openDatabase } from '../../../shared/db/client'
import {
  type MemberRole,
  members,
  refreshTokenFamilies,
  serviceAccounts,
  tenants,
} from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import { UUID } from '../../../shared/http/uuid'
import type { Audience, Identity } from '../../../shared/worker/request-context'
import { type GatewayEnv, gatewaySettings } from './gateway.context'
import { lookUpCredential } from './opaque-credential-cache'
import { resolveTokenKey } from './token-keys'

export interface PrincipalRecord {
  role: MemberRole
  planId: string
  scopes: string[]
}

/** A refresh-token family as the gateway sees it: standing, or revoked (an unknown one is revoked). */
export type SessionState = { revoked: false } | { revoked: true; reason: string | null }

/** What the verifier needs from the outside world (injected in unit tests). */
export interface TokenAuthDeps {
  resolveKey(kid: string): Promise<VerificationKey | undefined>
  /** The principal's role and tenant plan, or null when it no longer exists (or was revoked). */
  lookupPrincipal(tenantId: string, subject: Subject): Promise<PrincipalRecord | null>
  /** The state of the refresh-token family `sessionId` of this tenant and subject. */
  lookupSession(tenantId: string, subject: Subject, sessionId: string): Promise<SessionState>
  issuer: string
  leewaySeconds: number
  /** The issuer's access-token lifetime (AUTH_ACCESS_TOKEN_TTL_SECONDS): no token may declare a longer one. */
  maxLifetimeSeconds: number
  /** How long a principal or session lookup is trusted (API_KEY_CACHE_TTL_SECONDS). */
  principalTtlMs: number
  /** The clock, in ms since the epoch (`Date.now` unless a test moves time). */
  now?: () => number
}

interface VerifiedToken {
  sub: string
  subject: Subject
  audiences: readonly string[]
  tenantId: string
  jti: string
  alg: JwsAlgorithm
  /** The resource an OAuth token is bound to (RFC 8707 audience), if it is one. */
  resource: string | undefined
  /** OAuth tokens: the granted scopes and the client. */
  scopes: string[] | undefined
  clientId: string | undefined
  /** The refresh-token family the token was issued from (`sid`), if any. */
  sessionId: string | undefined
  /** exp + leeway, in ms. */
  validUntil: number
}

type TokenEntry = { token: VerifiedToken } | { refusal: AppError; until: number }

const MAX_TOKENS = 10_000
const MAX_PRINCIPALS = 10_000
const MAX_SESSIONS = 10_000
const REFUSAL_TTL_MS = 10_000
const tokenCache = new Map<string, TokenEntry>()
const principalCache = new Map<string, { record: PrincipalRecord | null; expiresAt: number }>()
const sessionCache = new Map<string, { state: SessionState; expiresAt: number }>()

export function clearAccessTokenCaches(): void {
  tokenCache.clear()
  principalCache.clear()
  sessionCache.clear()
}

/** Forgets a principal (e.g. a service account just revoked through this isolate). */
export function invalidatePrincipal(tenantId: string, sub: string): void {
  principalCache.delete(`${tenantId}\n${sub}`)
}

function remember<K, V>(map: Map<K, V>, max: number, key: K, value: V): void {
  if (map.size >= max) map.delete(map.keys().next().value!)
  map.set(key, value)
}

const unauthorized = (code: string, message: string) =>
  new AppError(401, code, message, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } })

async function verifyFresh(token: string, deps: TokenAuthDeps, now: number): Promise<VerifiedToken> {
  const verified = await verifyAccessToken(token, {
    keys: (kid) => deps.resolveKey(kid),
    // Every algorithm this product signs with; the tenant's policy is applied afterwards, once the
    // tenant is known from the verified claims (403 crypto_policy_violation, not a 401).
    allowedAlgorithms: JWS_ALGORITHMS,
    audience: AUDIENCES,
    acceptResources: true,
    issuer: deps.issuer,
    leewaySeconds: deps.leewaySeconds,
    now: new Date(now),
    maxLifetimeSeconds: deps.maxLifetimeSeconds,
  })
  const { claims } = verified
  if (claims.tenant_id === undefined || !UUID.test(claims.tenant_id)) {
    throw unauthorized(
      'token_claims_invalid',
      'The token has no valid tenant_id claim; tokens for this API are issued per workspace.',
    )
  }
  const subject = parseSubject(claims.sub)
  if (!subject) {
    throw unauthorized(
      'token_claims_invalid',
      `The token subject "${claims.sub}" is not a user or service account.`,
    )
  }
  const audiences = typeof claims.aud === 'string' ? [claims.aud] : claims.aud
  const resource = audiences.find(isResourceAudience)
  if (resource && subject.kind !== 'user') {
    throw unauthorized('token_claims_invalid', 'Resource-bound tokens are issued to people only.')
  }
  if (claims.sid !== undefined && !UUID.test(claims.sid)) {
    throw unauthorized('token_claims_invalid', 'The token has an invalid sid claim.')
  }
  return {
    sub: claims.sub,
    subject,
    audiences,
    tenantId: claims.tenant_id,
    jti: claims.jti,
    alg: verified.header.alg,
    resource,
    scopes: claims.scope?.split(' ').filter(Boolean),
    clientId: claims.client_id,
    sessionId: claims.sid,
    validUntil: (claims.exp + deps.leewaySeconds) * 1000,
  }
}

async function verifiedToken(token: string, deps: TokenAuthDeps): Promise<VerifiedToken> {
  const hash = await hashApiKey(token)
  const now = (deps.now ?? Date.now)()
  const hit = tokenCache.get(hash)
  if (hit) {
    if ('token' in hit) {
      if (now < hit.token.validUntil) return hit.token
      tokenCache.delete(hash)
      throw unauthorized(
        'token_expired',
        `The token expired at ${new Date(hit.token.validUntil - deps.leewaySeconds * 1000).toISOString()}; refresh it.`,
      )
    }
    if (now < hit.until) throw hit.refusal
  }
  try {
    const fresh = await verifyFresh(token, deps, now)
    remember(tokenCache, MAX_TOKENS, hash, { token: fresh })
    return fresh
  } catch (err) {
    // Remember refusals of the token itself (401), not outages (503) or our own faults (500).
    if (err instanceof AppError && err.status === 401) {
      remember(tokenCache, MAX_TOKENS, hash, { refusal: err, until: now + REFUSAL_TTL_MS })
    }
    throw err
  }
}

async function principal(token: VerifiedToken, deps: TokenAuthDeps): Promise<PrincipalRecord> {
  const key = `${token.tenantId}\n${token.sub}`
  const now = (deps.now ?? Date.now)()
  let hit = principalCache.get(key)
  if (!hit || hit.expiresAt <= now) {
    hit = {
      record: await deps.lookupPrincipal(token.tenantId, token.subject),
      expiresAt: now + deps.principalTtlMs,
    }
    remember(principalCache, MAX_PRINCIPALS, key, hit)
  }
  if (!hit.record) {
    throw unauthorized(
      'token_principal_revoked',
      token.subject.kind === 'user'
        ? 'The user this token was issued to is no longer a member of the workspace.'
        : 'The service account this token was issued to has been revoked.',
    )
  }
  return hit.record
}

const REVOCATION_CAUSES: Record<string, string> = {
  reuse_detected: ' because one of its refresh tokens was used twice',
  authorization_code_reused: ' because its authorization code was used twice',
  membership_ended: ' because the user is no longer a member of the workspace',
}

/** 401 `token_revoked` when the refresh-token family the token was issued from has been revoked. */
async function assertSessionStands(token: VerifiedToken, deps: TokenAuthDeps): Promise<void> {
  const sessionId = token.sessionId
  if (sessionId === undefined) return
  const now = (deps.now ?? Date.now)()
  let hit = sessionCache.get(sessionId)
  if (!hit || hit.expiresAt <= now) {
    hit = {
      state: await deps.lookupSession(token.tenantId, token.subject, sessionId),
      expiresAt: now + deps.principalTtlMs,
    }
    remember(sessionCache, MAX_SESSIONS, sessionId, hit)
  }
  if (!hit.state.revoked) return
  const cause = (hit.state.reason && REVOCATION_CAUSES[hit.state.reason]) ?? ''
  throw unauthorized(
    'token_revoked',
    token.resource !== undefined
      ? `The authorization this token was issued from has been revoked${cause}; authorize again.`
      : `The login session this token was issued from has been revoked${cause}; log in again.`,
  )
}

/**
 * Authenticates an access token for a route that accepts `audiences` (null: the path matched no
 * route, so the gateway answers 404 right after and no audience applies) and, when the route is a
 * protected resource of the OAuth authorization server, tokens bound to `resource` (RFC 8707).
 * A token bound to a resource is valid there only: anywhere else it is 401 `invalid_token`
 * (RFC 6750 §3.1), as the MCP authorization spec requires of a token for another audience.
 */
export async function verifyBearerToken(
  token: string,
  audiences: readonly Audience[] | null,
  deps: TokenAuthDeps,
  resource: string | null = null,
): Promise<Identity> {
  const verified = await verifiedToken(token, deps)
  if (verified.resource !== undefined) {
    if (verified.resource !== resource) {
      throw unauthorized(
        'token_wrong_resource',
        `This token was issued for the resource ${verified.resource}; ${resource ? `this endpoint is ${resource}` : 'this endpoint is not that resource'}. Get a token for it from the authorization server.`,
      )
    }
    const record = await principal(verified, deps)
    await assertSessionStands(verified, deps)
    return {
      tenantId: verified.tenantId,
      // Live unless the request chooses test mode (a person may: gateway.app.ts, x-svc-mode).
      mode: 'live',
      principal: {
        kind: 'access_token',
        subject: verified.sub,
        audience: 'platform',
        tokenId: verified.jti,
        algorithm: verified.alg,
        resource: verified.resource,
        ...(verified.clientId ? { clientId: verified.clientId } : {}),
      },
      role: record.role,
      planId: record.planId,
      scopes: verified.scopes ?? [],
    }
  }
  let audience = verified.audiences.find((a): a is Audience => (AUDIENCES as readonly string[]).includes(a))
  if (audiences) {
    audience = audiences.find((a) => verified.audiences.includes(a))
    if (!audience) {
      throw new AppError(
        403,
        'token_wrong_audience',
        audiences.length === 0
          ? 'This endpoint does not accept access tokens.'
          : `This token is for audience ${verified.audiences.map((a) => `"${a}"`).join(', ')}; this endpoint requires ${audiences.map((a) => `"${a}"`).join(' or ')}.`,
      )
    }
  }
  const record = await principal(verified, deps)
  await assertSessionStands(verified, deps)
  return {
    tenantId: verified.tenantId,
    // Service accounts act live; a person may choose test mode per request (gateway.app.ts).
    mode: 'live',
    principal: {
      kind: 'access_token',
      subject: verified.sub,
      audience: audience ?? 'platform',
      tokenId: verified.jti,
      algorithm: verified.alg,
    },
    role: record.role,
    planId: record.planId,
    scopes: record.scopes,
  }
}

async function lookupPrincipal(
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  tenantId: string,
  subject: Subject,
) {
  const database = openDatabase(env, { max: 1 })
  try {
    if (subject.kind === 'user') {
      const [row] = await database.db
        .select({ role: members.role, planId: tenants.planId })
        .from(members)
        .innerJoin(tenants, eq(tenants.id, members.tenantId))
        .where(and(eq(members.tenantId, tenantId), eq(members.userId, subject.id)))
        .limit(1)
      return row ? { role: row.role, planId: row.planId, scopes: [] } : null
    }
    const [row] = await database.db
      .select({
        scopes: serviceAccounts.scopes,
        revokedAt: serviceAccounts.revokedAt,
        planId: tenants.planId,
      })
      .from(serviceAccounts)
      .innerJoin(tenants, eq(tenants.id, serviceAccounts.tenantId))
      .where(and(eq(serviceAccounts.id, subject.id), eq(serviceAccounts.tenantId, tenantId)))
      .limit(1)
    // Service accounts act with the member role: they can use the API and read settings, not administer.
    return row && !row.revokedAt ? { role: 'member' as const, planId: row.planId, scopes: row.scopes } : null
  } catch (err) {
    throw new AppError(
      503,
      'credential_store_unavailable',
      'Credentials cannot be verified right now; retry shortly.',
      {
        internalMessage: `token principal lookup failed: ${String(err)}`,
        headers: { 'retry-after': '1' },
      },
    )
  } finally {
    ctx.waitUntil(database.close())
  }
}

/**
 * A family of this tenant and user, by its primary key. A family that is not theirs, or no longer
 * exists (its user was deleted), is revoked.
 */
function lookupSession(
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  tenantId: string,
  subject: Subject,
  sessionId: string,
): Promise<SessionState> {
  return lookUpCredential(env, ctx, 'token session', async (db) => {
    const [row] = await db
      .select({ revokedAt: refreshTokenFamilies.revokedAt, reason: refreshTokenFamilies.revokedReason })
      .from(refreshTokenFamilies)
      .where(
        and(
          eq(refreshTokenFamilies.id, sessionId),
          eq(refreshTokenFamilies.tenantId, tenantId),
          eq(refreshTokenFamilies.userId, subject.id),
        ),
      )
      .limit(1)
    if (!row) return { revoked: true, reason: null }
    return row.revokedAt ? { revoked: true, reason: row.reason } : { revoked: false }
  })
}

export function authenticateAccessToken(
  token: string,
  audiences: readonly Audience[] | null,
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  resource: string | null = null,
): Promise<Identity> {
  const settings = gatewaySettings(env)
  return verifyBearerToken(
    token,
    audiences,
    {
      resolveKey: (kid) => resolveTokenKey(env, kid),
      lookupPrincipal: (tenantId, subject) => lookupPrincipal(env, ctx, tenantId, subject),
      lookupSession: (tenantId, subject, sessionId) => lookupSession(env, ctx, tenantId, subject, sessionId),
      issuer: settings.JWT_ISSUER,
      leewaySeconds: settings.JWT_LEEWAY_SECONDS,
      maxLifetimeSeconds: settings.AUTH_ACCESS_TOKEN_TTL_SECONDS,
      principalTtlMs: settings.API_KEY_CACHE_TTL_SECONDS * 1000,
    },
    resource,
  )
}
