/**
 * Issues access tokens: picks the signing algorithm the tenant's crypto policy allows, signs with
 * that algorithm's current key, and records a policy violation when an audit-mode policy lets a
 * non-compliant algorithm through.
 *
 * Algorithm choice: a caller may ask for one (`alg` in the request); otherwise the first of
 * ML-DSA-65, ML-DSA-87, ML-DSA-44, EdDSA that has a key and that the policy allows outright.
 * Default and Strict tenants get ML-DSA-65, Maximum and Government tenants ML-DSA-87; EdDSA is
 * issued only when asked for and the policy allows classical signatures.
 */

import { appendAuditEvent } from '../../../durable-objects/audit-log/audit-client'
import { appendPolicyDecisions } from '../../../durable-objects/audit-log/policy-decisions'
import { buildAccessTokenClaims, signAccessToken } from '../../../shared/crypto'
import { canonicalJson, sha256Hex } from '../../../shared/crypto/digests'
import type { JwsAlgorithm } from '../../../shared/crypto/jws-algorithms'
import {
  checkAlgorithm,
  chooseSigningAlgorithm,
  JWS_ALGORITHM_REGISTRY_IDS,
  policyViolationError,
} from '../../../shared/crypto-policy'
import {
  loadTenantPolicy,
  recordViolationsLater,
  type ViolationRecord,
} from '../../../shared/crypto-policy/policy-store'
import type { Drizzle } from '../../../shared/db/client'
import { AppError } from '../../../shared/http/errors'
import type { Audience } from '../../../shared/worker/request-context'
import { type AuthEnv, authSettings } from './auth.context'
import { type KeyRing, keyRingFor } from './signing-keys'

/** The grant each token endpoint serves, as the audit log names it. */
const GRANTS: Record<string, 'password' | 'refresh_token' | 'client_credentials'> = {
  '/auth/login': 'password',
  '/auth/token/refresh': 'refresh_token',
  '/auth/service-token': 'client_credentials',
}

/** Key sets already on the platform log, by digest (per isolate; the log itself appends each once). */
const recordedKeySets = new Set<string>()

/**
 * A rotation of the token keys (JWT_SIGNING_KEYS) on the platform's audit log: each distinct key set
 * is appended once (its digest is the idempotency key), the first time an isolate signs with it.
 */
async function recordSigningKeys(env: AuthEnv, ring: KeyRing): Promise<void> {
  const keys = ring.jwks.keys.map((k) => ({
    kid: k.kid ?? '',
    alg: k.alg,
    state: ring.signers.get(k.alg)?.kid === k.kid ? ('signing' as const) : ('verify_only' as const),
  }))
  const digest = `sha256:${sha256Hex(canonicalJson(keys))}`
  if (recordedKeySets.has(digest)) return
  await appendAuditEvent(
    env.AUDIT_LOG,
    null,
    { kind: 'signing_keys.changed', purpose: 'access_tokens', keyset_digest: digest, keys },
    { idempotencyKey: `signing-keys:access_tokens:${digest}` },
  )
  recordedKeySets.add(digest)
}

export interface IssueRequest {
  tenantId: string
  sub: string
  aud: Audience
  /**
   * OAuth (functions/auth/src/oauth): the resource the token is bound to, which becomes its `aud`
   * (RFC 8707; `aud` above is then the principal's kind of audience, `platform`), the scope and
   * client, and the grant it was issued by.
   */
  oauth?: { resource: string; scope: string; clientId: string; grant: 'authorization_code' | 'refresh_token' }
  /**
   * The refresh-token family (login session or OAuth authorization) the token is issued from: its
   * `sid` claim, by which the gateway refuses the token once the family is revoked.
   */
  sessionId?: string
  /** The algorithm the caller asked for, if any. */
  alg?: JwsAlgorithm
  /** For violation records. */
  requestId: string
  method: string
  path: string
}

export interface IssuedToken {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  alg: JwsAlgorithm
}

export async function issueAccessToken(
  db: Drizzle,
  env: AuthEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  request: IssueRequest,
): Promise<IssuedToken> {
  const settings = authSettings(env)
  const ring = await keyRingFor(env.JWT_SIGNING_KEYS)
  const { policy } = await loadTenantPolicy(db, request.tenantId)

  let alg: JwsAlgorithm | undefined
  if (request.alg) {
    if (!ring.signers.has(request.alg)) {
      throw new AppError(
        400,
        'signing_algorithm_unavailable',
        `This service has no ${request.alg} signing key; it can sign with ${ring.available.join(', ')}.`,
        { param: 'alg' },
      )
    }
    alg = request.alg
  } else {
    alg = chooseSigningAlgorithm(policy, ring.available)
    if (!alg) {
      throw new AppError(
        503,
        'no_compliant_signing_key',
        `This workspace's crypto policy allows none of the token algorithms this service has keys for (${ring.available.join(', ')}). Ask the operator to add a key the policy allows (Maximum and Government need ML-DSA-87), or change the policy.`,
      )
    }
  }
  const check = checkAlgorithm(policy, JWS_ALGORITHM_REGISTRY_IDS[alg], 'token_signature')
  if (!check.allowed) {
    // Recorded either way, on the audit log before anything is answered: passed in audit mode,
    // blocked (and refused below) in enforce mode.
    const records: ViolationRecord[] = [
      {
        tenantId: request.tenantId,
        check,
        principal: request.sub,
        requestId: request.requestId,
        method: request.method,
        path: request.path,
      },
    ]
    await appendPolicyDecisions(env.AUDIT_LOG, records)
    recordViolationsLater(env, ctx, records)
  }
  if (check.enforced) throw policyViolationError(check, `A token signed with ${alg}`)

  const key = ring.signers.get(alg)!
  const { oauth } = request
  const claims = buildAccessTokenClaims({
    sub: request.sub,
    aud: oauth?.resource ?? request.aud,
    iss: settings.issuer,
    ttlSeconds: settings.accessTokenTtlSeconds,
    tenantId: request.tenantId,
    ...(oauth ? { scope: oauth.scope, clientId: oauth.clientId } : {}),
    ...(request.sessionId ? { sessionId: request.sessionId } : {}),
  })
  const accessToken = await signAccessToken(claims, key)
  await recordSigningKeys(env, ring)
  await appendAuditEvent(env.AUDIT_LOG, request.tenantId, {
    kind: 'token.issued',
    subject: request.sub,
    audience: request.aud,
    alg,
    kid: key.kid,
    token_id: claims.jti,
    grant: oauth?.grant ?? GRANTS[request.path] ?? 'password',
    ...(oauth ? { resource: oauth.resource, client_id: oauth.clientId, scope: oauth.scope } : {}),
    expires_at: new Date(claims.exp * 1000).toISOString(),
    request_id: request.requestId,
  })
  return {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: settings.accessTokenTtlSeconds,
    alg,
  }
}
