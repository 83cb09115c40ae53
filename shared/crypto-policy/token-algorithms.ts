/**
 * Bridges the crypto policy and token verification: which JWS algorithms a policy lets the
 * gateway accept, and the registry id behind each JWS name.
 */
import { JWS_ALGORITHMS, type JwsAlgorithm } from '../crypto/jws-algorithms'
import { type AlgorithmCheck, type CryptoPolicy, checkAlgorithm } from './policy'

/** Registry id of each JWS algorithm this product signs or verifies. */
export const JWS_ALGORITHM_REGISTRY_IDS: Readonly<Record<JwsAlgorithm, string>> = {
  'ML-DSA-44': 'dilithium-2',
  'ML-DSA-65': 'dilithium-3',
  'ML-DSA-87': 'dilithium-5',
  EdDSA: 'ed25519',
}

/** The policy decision for each JWS algorithm in the `token_signature` context. */
export function tokenAlgorithmChecks(policy: CryptoPolicy): Record<JwsAlgorithm, AlgorithmCheck> {
  return Object.fromEntries(
    JWS_ALGORITHMS.map((alg) => [
      alg,
      checkAlgorithm(policy, JWS_ALGORITHM_REGISTRY_IDS[alg], 'token_signature'),
    ]),
  ) as Record<JwsAlgorithm, AlgorithmCheck>
}

/**
 * The JWS algorithms a verifier should accept under the policy: every algorithm the policy does
 * not block. In audit mode that is all of them (violations are logged, not blocked); log them with
 * `checkAlgorithm(policy, header.alg, 'token_signature')`. Pass the result as `allowedAlgorithms`
 * to `verifyAccessToken`. Empty when the policy blocks every token algorithm.
 */
export function acceptedTokenAlgorithms(policy: CryptoPolicy): JwsAlgorithm[] {
  const checks = tokenAlgorithmChecks(policy)
  return JWS_ALGORITHMS.filter((alg) => !checks[alg].enforced)
}

/**
 * The algorithm to sign a token with for a tenant: the first of `available` (the signer's keys, in
 * the issuer's order of preference) that the policy allows outright, else the first it does not
 * block (audit mode), else `undefined` (no key satisfies the policy: refuse to issue).
 */
export function chooseSigningAlgorithm(
  policy: CryptoPolicy,
  available: readonly JwsAlgorithm[],
): JwsAlgorithm | undefined {
  const checks = tokenAlgorithmChecks(policy)
  return (
    available.find((alg) => checks[alg].decision === 'allow') ??
    available.find((alg) => !checks[alg].enforced)
  )
}
