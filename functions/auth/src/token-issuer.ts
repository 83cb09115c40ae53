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
import { buildAccessTokenClaims, signAccessToken } from '../../../shared/crypto'
import type { JwsAlgorithm } from '../../../shared/crypto/jws-algorithms'
import {
  checkAlgorithm,
  chooseSigningAlgorithm,
  JWS_ALGORITHM_REGISTRY_IDS,
  policyViolationError,
} from '../../../shared/crypto-policy'
import { loadTenantPolicy, recordViolationsLater } from '../../../shared/crypto-policy/policy-store'
import type { Drizzle } from '../../../shared/db/client'
import { AppError } from '../../../shared/http/errors'
import type { Audience } from '../../../shared/worker/request-context'
import { type AuthEnv, authSettings } from './auth.context'
import { keyRingFor } from './signing-keys'

export interface IssueRequest {
  tenantId: string
  sub: string
  aud: Audience
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
    // Recorded either way: passed in audit mode, blocked (and refused below) in enforce mode.
    recordViolationsLater(env, ctx, [
      {
        tenantId: request.tenantId,
        check,
        principal: request.sub,
        requestId: request.requestId,
        method: request.method,
        path: request.path,
      },
    ])
  }
  if (check.enforced) throw policyViolationError(check, `A token signed with ${alg}`)

  const key = ring.signers.get(alg)!
  const claims = buildAccessTokenClaims({
    sub: request.sub,
    aud: request.aud,
    iss: settings.issuer,
    ttlSeconds: settings.accessTokenTtlSeconds,
    tenantId: request.tenantId,
  })
  return {
    access_token: await signAccessToken(claims, key),
    token_type: 'Bearer',
    expires_in: settings.accessTokenTtlSeconds,
    alg,
  }
}
