/**
 * The tenant's crypto policy at the gateway. Checked per request:
 * - the access token's signature algorithm (context `token_signature`);
 * - every algorithm the client declares in `x-svc-crypto-algorithms` (context `request_declared`),
 *   e.g. `x-svc-crypto-algorithms: x25519+kyber-768, aes-256-gcm` for a client that says its
 *   transport and payload encryption use those.
 * A violation in `enforce` mode is refused with 403 `crypto_policy_violation` naming the algorithm
 * and the rules it broke; in `audit` mode the request goes on. Either way the decision is appended
 * to the tenant's audit log first (durable-objects/audit-log/policy-decisions.ts) and the request
 * goes on, or the 403 leaves, only once it is durable there: a violation is never let through or refused unlogged
 * (audit log unreachable: 503 audit_log_unavailable, nothing done). The Postgres copy behind the
 * violations listing is written after the response (waitUntil).
 */

import { appendPolicyDecisions } from '../../../durable-objects/audit-log/policy-decisions'
import type { JwsAlgorithm } from '../../../shared/crypto/jws-algorithms'
import {
  type AlgorithmCheck,
  DECLARED_ALGORITHMS_HEADER,
  JWS_ALGORITHM_REGISTRY_IDS,
  parseDeclaredAlgorithms,
  policyViolationError,
} from '../../../shared/crypto-policy'
import { recordViolationsLater, type ViolationRecord } from '../../../shared/crypto-policy/policy-store'
import { AppError } from '../../../shared/http/errors'
import { type Identity, principalId } from '../../../shared/worker/request-context'
import type { GatewayEnv } from './gateway.context'
import { type CachedPolicy, decide, tenantPolicy } from './tenant-policies'

export interface EnforcementInput {
  request: Request
  identity: Identity
  requestId: string
  path: string
}

function declaredCheck(entry: CachedPolicy, name: string): AlgorithmCheck {
  try {
    return decide(entry, name, 'request_declared')
  } catch (err) {
    if (err instanceof AppError && err.status === 400) {
      throw new AppError(err.status, err.code, `${DECLARED_ALGORITHMS_HEADER}: ${err.message}`, {
        param: DECLARED_ALGORITHMS_HEADER,
      })
    }
    throw err
  }
}

export async function enforceCryptoPolicy(
  input: EnforcementInput,
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
): Promise<void> {
  const { identity, request } = input
  const tokenAlg: JwsAlgorithm | null =
    identity.principal.kind === 'access_token' ? (identity.principal.algorithm as JwsAlgorithm) : null
  const declared = parseDeclaredAlgorithms(request.headers.get(DECLARED_ALGORITHMS_HEADER))
  if (!tokenAlg && declared.length === 0) return

  const entry = await tenantPolicy(env, ctx, identity.tenantId)
  const checks: { check: AlgorithmCheck; where: string }[] = []
  if (tokenAlg) {
    const registryId = JWS_ALGORITHM_REGISTRY_IDS[tokenAlg] ?? tokenAlg
    checks.push({
      check: decide(entry, registryId, 'token_signature'),
      where: `This access token (${tokenAlg})`,
    })
  }
  for (const name of declared) {
    checks.push({ check: declaredCheck(entry, name), where: `This request (${DECLARED_ALGORITHMS_HEADER})` })
  }
  const violations = checks.filter(({ check }) => !check.allowed)
  if (violations.length === 0) return

  const principal = principalId(identity)
  const records: ViolationRecord[] = violations.map(({ check }) => ({
    tenantId: identity.tenantId,
    check,
    principal,
    requestId: input.requestId,
    method: request.method,
    path: input.path,
  }))
  await appendPolicyDecisions(env.AUDIT_LOG, records)
  recordViolationsLater(env, ctx, records)
  const blocked = violations.find(({ check }) => check.enforced)
  if (blocked) throw policyViolationError(blocked.check, blocked.where)
}
