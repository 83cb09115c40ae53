/**
 * What a policy decision means for a request: in `enforce` mode a violation is refused with 403
 * `crypto_policy_violation` naming the algorithm and the rules it broke; in `audit` mode it is
 * recorded and the request proceeds.
 *
 * Clients may declare the algorithms a request relies on in the `x-svc-crypto-algorithms` header
 * (comma-separated registry ids, standard names or hybrids, e.g. `x25519+kyber-768, aes-256-gcm`);
 * each is checked in the `request_declared` context.
 */
import { AppError } from '../http/errors'
import type { AlgorithmCheck } from './policy'

export const DECLARED_ALGORITHMS_HEADER = 'x-svc-crypto-algorithms'
export const MAX_DECLARED_ALGORITHMS = 16

export interface FailedRule {
  rule: string
  detail: string
}

/** The rules that failed, as stored and as sent in a 403 body. */
export function failedRules(check: AlgorithmCheck): FailedRule[] {
  return check.rules.filter((r) => !r.passed).map((r) => ({ rule: r.rule, detail: r.detail }))
}

/** AppError 403 `crypto_policy_violation` for a check that enforce mode blocks. */
export function policyViolationError(check: AlgorithmCheck, where: string): AppError {
  const rules = failedRules(check)
  return new AppError(
    403,
    'crypto_policy_violation',
    `${where} uses ${check.algorithm}, which this workspace's crypto policy (enforce mode) does not allow: ${rules.map((r) => `${r.rule}: ${r.detail}`).join('; ')}.`,
    {
      param: check.context === 'request_declared' ? DECLARED_ALGORITHMS_HEADER : null,
      extraBody: {
        crypto_policy: {
          algorithm: check.algorithm,
          requested: check.requested,
          context: check.context,
          mode: check.mode,
          decision: check.decision,
          enforced: check.enforced,
          rules,
        },
      },
    },
  )
}

/** Parses the declared-algorithms header: a comma-separated list, at most 16 distinct names. */
export function parseDeclaredAlgorithms(header: string | null): string[] {
  if (header === null) return []
  const names = [...new Set(header.split(',').map((n) => n.trim()))].filter((n) => n !== '')
  if (names.length > MAX_DECLARED_ALGORITHMS) {
    throw new AppError(
      400,
      'too_many_declared_algorithms',
      `${DECLARED_ALGORITHMS_HEADER} lists ${names.length} algorithms; declare at most ${MAX_DECLARED_ALGORITHMS}.`,
      { param: DECLARED_ALGORITHMS_HEADER },
    )
  }
  return names
}
