/**
 * The crypto policy: its schema (exactly the spec's fields), the four presets, validation of
 * contradictory settings, and the per-algorithm check the gateway and `/crypto/policy/check` use.
 *
 * Semantics (decided here, documented in docs/crypto.md):
 * - `allowedSymmetricAlgorithms` governs every symmetric primitive: ciphers, hashes and MACs.
 * - `minimumSecurityLevel` applies to algorithms with a NIST category; classical public-key
 *   algorithms have none and are governed by `allowClassicalFallback` alone.
 * - `requireNistFinal`: only `NIST_FINAL` registry entries pass (draft and deprecated fail).
 * - `forbiddenAlgorithms` always wins, also for a component of a hybrid.
 * - Hybrids name a classical KEM and a post-quantum KEM joined by `+` (`x25519+kyber-1024`; TLS
 *   names such as `X25519MLKEM768` work too). The post-quantum half must pass every rule; the
 *   classical half must only not be forbidden: it is not a fallback, since the key stays secret
 *   unless both halves are broken. `hybridModeRequired` makes key exchange accept hybrids only.
 * - `mode`: a violation in `enforce` mode blocks (`enforced: true`); in `audit` mode it is logged
 *   and the operation proceeds. A disabled policy allows everything.
 */
import { z } from 'zod'
import { AppError } from '../http/errors'
import {
  ALGORITHM_REGISTRY,
  type AlgorithmEntry,
  type AlgorithmType,
  findAlgorithm,
  getAlgorithm,
} from './registry'

export const POLICY_MODES = ['audit', 'enforce'] as const
export type PolicyMode = (typeof POLICY_MODES)[number]

export const CryptoPolicySchema = z.strictObject({
  enabled: z.boolean(),
  mode: z.enum(POLICY_MODES),
  allowedKemAlgorithms: z.array(z.string().min(1)).max(64),
  allowedSignatureAlgorithms: z.array(z.string().min(1)).max(64),
  allowedSymmetricAlgorithms: z.array(z.string().min(1)).max(64),
  forbiddenAlgorithms: z.array(z.string().min(1)).max(64),
  minimumSecurityLevel: z.int().min(1).max(5),
  requireNistFinal: z.boolean(),
  allowClassicalFallback: z.boolean(),
  hybridModeRequired: z.boolean(),
})
export type CryptoPolicy = z.infer<typeof CryptoPolicySchema>

/** Where an algorithm is used; decides which registry types are acceptable. */
export const POLICY_CONTEXTS = {
  /** Signing or verifying access tokens (JWS). */
  token_signature: ['signature'],
  /** Signing attestations, audit checkpoints and other documents. */
  document_signature: ['signature'],
  /** Key establishment (KEM), including hybrids. */
  key_exchange: ['kem'],
  /** Encrypting data with a symmetric cipher. */
  data_encryption: ['symmetric'],
  /** Hashing (digests, Merkle trees, fingerprints). */
  hashing: ['hash'],
  /** Message authentication codes. */
  message_authentication: ['mac'],
  /** An algorithm a client declared in a request; any type, checked by its registry type. */
  request_declared: ['kem', 'signature', 'symmetric', 'hash', 'mac'],
} as const satisfies Record<string, readonly AlgorithmType[]>
export type PolicyContext = keyof typeof POLICY_CONTEXTS
export const POLICY_CONTEXT_NAMES = Object.keys(POLICY_CONTEXTS) as PolicyContext[]

export type PolicyRule =
  | 'policy_enabled'
  | 'forbidden_list'
  | 'allow_list'
  | 'minimum_security_level'
  | 'nist_final'
  | 'classical_fallback'
  | 'hybrid_mode'

export interface PolicyRuleResult {
  rule: PolicyRule
  passed: boolean
  detail: string
}

export interface AlgorithmCheck {
  /** Canonical registry id, or `classical+pq` for a hybrid. */
  algorithm: string
  /** The name as the caller gave it. */
  requested: string
  context: PolicyContext
  type: AlgorithmType
  hybrid: boolean
  /** Compliant with the policy (every rule passed, or the policy is disabled). */
  allowed: boolean
  mode: PolicyMode
  decision: 'allow' | 'violation'
  /** The operation would be blocked: a violation under an enabled policy in enforce mode. */
  enforced: boolean
  rules: PolicyRuleResult[]
}

// ---------------------------------------------------------------------------------------------
// Presets

const ids = (type: AlgorithmType, keep: (e: AlgorithmEntry) => boolean) =>
  ALGORITHM_REGISTRY.filter((e) => e.type === type && keep(e)).map((e) => e.id)
const symmetricIds = (keep: (e: AlgorithmEntry) => boolean) =>
  ALGORITHM_REGISTRY.filter((e) => e.family === 'symmetric' && keep(e)).map((e) => e.id)
const finalAtLeast = (level: number) => (e: AlgorithmEntry) =>
  e.status === 'NIST_FINAL' && e.securityLevel !== null && e.securityLevel >= level

/** The classical signature algorithms, forbidden outright by the presets that forbid classical crypto. */
const CLASSICAL_SIGNATURES = ids('signature', (e) => e.classical)

export const PRESET_NAMES = ['default', 'strict', 'maximum', 'government'] as const
export type PresetName = (typeof PRESET_NAMES)[number]

/**
 * The spec's preset table:
 * - Default: PQC preferred; all NIST-final PQC allowed; classical allowed for migration; level 1.
 * - Strict: PQC required; only kyber-768+ and dilithium-3+; classical forbidden; NIST-final; level 3.
 * - Maximum: level-5 PQC only; classical forbidden; NIST-final required; level 5.
 * - Government: level-5 FIPS-finalized PQC only; classical forbidden; hybrid transport; level 5.
 */
export const POLICY_PRESETS: Readonly<Record<PresetName, Readonly<CryptoPolicy>>> = Object.freeze({
  default: Object.freeze({
    enabled: true,
    mode: 'audit',
    allowedKemAlgorithms: ids('kem', (e) => e.status === 'NIST_FINAL' || e.classical),
    allowedSignatureAlgorithms: ids('signature', (e) => e.status === 'NIST_FINAL' || e.classical),
    allowedSymmetricAlgorithms: symmetricIds(() => true),
    forbiddenAlgorithms: [],
    minimumSecurityLevel: 1,
    requireNistFinal: false,
    allowClassicalFallback: true,
    hybridModeRequired: false,
  }),
  strict: Object.freeze({
    enabled: true,
    mode: 'enforce',
    allowedKemAlgorithms: ['kyber-768', 'kyber-1024'],
    allowedSignatureAlgorithms: ['dilithium-3', 'dilithium-5'],
    allowedSymmetricAlgorithms: symmetricIds(finalAtLeast(3)),
    forbiddenAlgorithms: CLASSICAL_SIGNATURES,
    minimumSecurityLevel: 3,
    requireNistFinal: true,
    allowClassicalFallback: false,
    hybridModeRequired: false,
  }),
  maximum: Object.freeze({
    enabled: true,
    mode: 'enforce',
    allowedKemAlgorithms: ids('kem', finalAtLeast(5)),
    allowedSignatureAlgorithms: ids('signature', finalAtLeast(5)),
    allowedSymmetricAlgorithms: symmetricIds(finalAtLeast(5)),
    forbiddenAlgorithms: CLASSICAL_SIGNATURES,
    minimumSecurityLevel: 5,
    requireNistFinal: true,
    allowClassicalFallback: false,
    hybridModeRequired: false,
  }),
  government: Object.freeze({
    enabled: true,
    mode: 'enforce',
    allowedKemAlgorithms: ids('kem', finalAtLeast(5)),
    allowedSignatureAlgorithms: ids('signature', finalAtLeast(5)),
    allowedSymmetricAlgorithms: symmetricIds(finalAtLeast(5)),
    forbiddenAlgorithms: CLASSICAL_SIGNATURES,
    minimumSecurityLevel: 5,
    requireNistFinal: true,
    allowClassicalFallback: false,
    hybridModeRequired: true,
  }),
})

/** A preset by name, ignoring case; unknown names are AppError 400 `unknown_policy_preset`. */
export function getPolicyPreset(name: string): CryptoPolicy {
  const key = name.trim().toLowerCase()
  const preset = (PRESET_NAMES as readonly string[]).includes(key)
    ? POLICY_PRESETS[key as PresetName]
    : undefined
  if (!preset) {
    throw new AppError(
      400,
      'unknown_policy_preset',
      `Unknown policy preset "${name}"; presets: ${PRESET_NAMES.join(', ')}.`,
      {
        param: 'preset',
      },
    )
  }
  return structuredClone(preset) as CryptoPolicy
}

// ---------------------------------------------------------------------------------------------
// Validation

type ListField =
  | 'allowedKemAlgorithms'
  | 'allowedSignatureAlgorithms'
  | 'allowedSymmetricAlgorithms'
  | 'forbiddenAlgorithms'

const LIST_TYPES: Record<Exclude<ListField, 'forbiddenAlgorithms'>, readonly AlgorithmType[]> = {
  allowedKemAlgorithms: ['kem'],
  allowedSignatureAlgorithms: ['signature'],
  allowedSymmetricAlgorithms: ['symmetric', 'hash', 'mac'],
}

/**
 * Parses and checks a policy, returning it with every name replaced by its registry id.
 * Schema errors are AppError 400 `invalid_crypto_policy`; contradictions are AppError 400
 * `crypto_policy_contradiction` with every problem in the message and in `policy_problems`.
 */
export function validatePolicy(input: unknown): CryptoPolicy {
  const parsed = CryptoPolicySchema.safeParse(input)
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
    throw new AppError(400, 'invalid_crypto_policy', `The crypto policy is invalid: ${issues.join('; ')}.`, {
      extraBody: { policy_problems: issues },
    })
  }
  const policy = parsed.data
  const problems: string[] = []

  const normalise = (field: ListField): AlgorithmEntry[] => {
    const seen = new Set<string>()
    const entries: AlgorithmEntry[] = []
    policy[field].forEach((name, index) => {
      if (name.includes('+')) {
        problems.push(
          `${field}[${index}] "${name}" is a hybrid; list its components, hybrids are formed at check time`,
        )
        return
      }
      const found = findAlgorithm(name)
      if (!found) {
        problems.push(`${field}[${index}] "${name}" is not a known algorithm`)
        return
      }
      if (seen.has(found.id)) {
        problems.push(`${field} lists ${found.id} twice`)
        return
      }
      seen.add(found.id)
      entries.push(found)
    })
    return entries
  }

  const forbidden = normalise('forbiddenAlgorithms')
  const forbiddenIds = new Set(forbidden.map((e) => e.id))
  const allowed: Record<Exclude<ListField, 'forbiddenAlgorithms'>, AlgorithmEntry[]> = {
    allowedKemAlgorithms: normalise('allowedKemAlgorithms'),
    allowedSignatureAlgorithms: normalise('allowedSignatureAlgorithms'),
    allowedSymmetricAlgorithms: normalise('allowedSymmetricAlgorithms'),
  }

  for (const [field, entries] of Object.entries(allowed) as [keyof typeof allowed, AlgorithmEntry[]][]) {
    for (const e of entries) {
      if (!LIST_TYPES[field].includes(e.type)) {
        problems.push(`${field} contains ${e.id}, which is a ${e.type} algorithm`)
      }
      if (forbiddenIds.has(e.id)) problems.push(`${e.id} is both allowed (${field}) and forbidden`)
      if (e.securityLevel !== null && e.securityLevel < policy.minimumSecurityLevel) {
        problems.push(
          `${e.id} (security level ${e.securityLevel}) is allowed but minimumSecurityLevel is ${policy.minimumSecurityLevel}`,
        )
      }
      if (e.classical && !policy.allowClassicalFallback) {
        problems.push(`${e.id} is a classical algorithm, allowed while allowClassicalFallback is false`)
      }
      if (policy.requireNistFinal && e.status !== 'NIST_FINAL') {
        problems.push(`${e.id} is ${e.status}, allowed while requireNistFinal is true`)
      }
    }
  }

  if (policy.hybridModeRequired) {
    const pqKem = allowed.allowedKemAlgorithms.some((e) => e.type === 'kem' && e.postQuantum)
    const classicalKem = ALGORITHM_REGISTRY.some(
      (e) => e.type === 'kem' && e.classical && !forbiddenIds.has(e.id),
    )
    if (!pqKem || !classicalKem) {
      problems.push(
        'hybridModeRequired needs at least one allowed post-quantum KEM and one classical KEM that is not forbidden, or no key exchange can pass',
      )
    }
  }

  if (problems.length > 0) {
    throw new AppError(
      400,
      'crypto_policy_contradiction',
      `The crypto policy contradicts itself: ${problems.join('; ')}.`,
      {
        extraBody: { policy_problems: problems },
      },
    )
  }
  return {
    ...policy,
    allowedKemAlgorithms: allowed.allowedKemAlgorithms.map((e) => e.id),
    allowedSignatureAlgorithms: allowed.allowedSignatureAlgorithms.map((e) => e.id),
    allowedSymmetricAlgorithms: allowed.allowedSymmetricAlgorithms.map((e) => e.id),
    forbiddenAlgorithms: forbidden.map((e) => e.id),
  }
}

// ---------------------------------------------------------------------------------------------
// Checking one algorithm

/** Well-known names of hybrid key exchanges (TLS group names, X-Wing). */
const HYBRID_ALIASES: Readonly<Record<string, string>> = {
  x25519mlkem768: 'x25519+kyber-768',
  'x-wing': 'x25519+kyber-768',
  xwing: 'x25519+kyber-768',
  secp256r1mlkem768: 'ecdh-p256+kyber-768',
  secp384r1mlkem1024: 'ecdh-p384+kyber-1024',
}

interface PolicySets {
  forbidden: Set<string>
  allowed: Record<AlgorithmType, Set<string>>
}

/** Policy lists as sets of registry ids; cheap enough to rebuild per check, so policies may be mutated freely. */
function policySets(policy: CryptoPolicy): PolicySets {
  const resolve = (names: readonly string[]) =>
    new Set(names.map((n) => findAlgorithm(n)?.id ?? n.toLowerCase()))
  const symmetric = resolve(policy.allowedSymmetricAlgorithms)
  return {
    forbidden: resolve(policy.forbiddenAlgorithms),
    allowed: {
      kem: resolve(policy.allowedKemAlgorithms),
      signature: resolve(policy.allowedSignatureAlgorithms),
      symmetric,
      hash: symmetric,
      mac: symmetric,
    },
  }
}

const LIST_NAME: Record<AlgorithmType, string> = {
  kem: 'allowedKemAlgorithms',
  signature: 'allowedSignatureAlgorithms',
  symmetric: 'allowedSymmetricAlgorithms',
  hash: 'allowedSymmetricAlgorithms',
  mac: 'allowedSymmetricAlgorithms',
}

function parseContext(context: string): PolicyContext {
  const key = context.trim().toLowerCase()
  if (!(POLICY_CONTEXT_NAMES as string[]).includes(key)) {
    throw new AppError(
      400,
      'invalid_policy_context',
      `Unknown context "${context}"; contexts: ${POLICY_CONTEXT_NAMES.join(', ')}.`,
      {
        param: 'context',
      },
    )
  }
  return key as PolicyContext
}

/** Whether one registry entry passes every per-entry rule of a policy (the booleans of `entryRules`). */
function entryPasses(policy: CryptoPolicy, sets: PolicySets, e: AlgorithmEntry): boolean {
  return (
    !sets.forbidden.has(e.id) &&
    sets.allowed[e.type].has(e.id) &&
    (e.securityLevel === null || e.securityLevel >= policy.minimumSecurityLevel) &&
    (!policy.requireNistFinal || e.status === 'NIST_FINAL') &&
    (!e.classical || policy.allowClassicalFallback)
  )
}

/** Registry order for advice: post-quantum first, then the lowest level that passes (closest to what was asked). */
const byAdvicePreference = (a: AlgorithmEntry, b: AlgorithmEntry) =>
  Number(b.postQuantum) - Number(a.postQuantum) || (a.securityLevel ?? 0) - (b.securityLevel ?? 0)

/**
 * A replacement for `e` that this policy itself allows: the registry's replacement when it passes,
 * else the closest allowed algorithm of the same type. Under `hybridModeRequired` a key exchange is
 * advised as a hybrid whose halves both pass. Advice that the same policy would refuse (rsa-2048 under
 * Strict told to use dilithium-2, a level-2 algorithm Strict does not allow) sends the client round in
 * a circle, so when nothing of the type passes the advice says that instead.
 */
function adviseReplacement(policy: CryptoPolicy, sets: PolicySets, e: AlgorithmEntry): string {
  const registryChoice = e.replacement ? findAlgorithm(e.replacement) : undefined
  const candidates = [
    ...(registryChoice ? [registryChoice] : []),
    ...ALGORITHM_REGISTRY.filter((c) => c.type === e.type && c.id !== e.id).sort(byAdvicePreference),
  ]
  if (e.type === 'kem' && policy.hybridModeRequired) {
    const pq = [e, ...candidates].find((c) => c.postQuantum && entryPasses(policy, sets, c))
    const classical = [e, ...ALGORITHM_REGISTRY].find(
      (c) => c.type === 'kem' && c.classical && !sets.forbidden.has(c.id),
    )
    return pq && classical
      ? `use a hybrid such as ${classical.id}+${pq.id}`
      : 'the policy allows no hybrid key exchange'
  }
  const choice = candidates.find((c) => entryPasses(policy, sets, c))
  return choice ? `use ${choice.id}` : `the policy allows no ${e.type} algorithm`
}

/** The rules that apply to one algorithm entry under a policy (no hybrid or context rules). */
function entryRules(policy: CryptoPolicy, sets: PolicySets, e: AlgorithmEntry): PolicyRuleResult[] {
  const rules: PolicyRuleResult[] = [
    sets.forbidden.has(e.id)
      ? { rule: 'forbidden_list', passed: false, detail: `${e.id} is in forbiddenAlgorithms` }
      : { rule: 'forbidden_list', passed: true, detail: `${e.id} is not forbidden` },
    sets.allowed[e.type].has(e.id)
      ? { rule: 'allow_list', passed: true, detail: `${e.id} is in ${LIST_NAME[e.type]}` }
      : { rule: 'allow_list', passed: false, detail: `${e.id} is not in ${LIST_NAME[e.type]}` },
  ]
  if (e.securityLevel !== null) {
    rules.push({
      rule: 'minimum_security_level',
      passed: e.securityLevel >= policy.minimumSecurityLevel,
      detail: `${e.id} has security level ${e.securityLevel}; the policy requires at least ${policy.minimumSecurityLevel}`,
    })
  }
  if (policy.requireNistFinal) {
    rules.push({
      rule: 'nist_final',
      passed: e.status === 'NIST_FINAL',
      detail:
        e.status === 'NIST_FINAL'
          ? `${e.id} is a final NIST standard (${e.reference})`
          : `${e.id} is ${e.status}; the policy requires NIST-final algorithms`,
    })
  }
  if (e.classical) {
    rules.push({
      rule: 'classical_fallback',
      passed: policy.allowClassicalFallback,
      detail: policy.allowClassicalFallback
        ? `${e.id} is classical (quantum-vulnerable); allowed as a fallback during migration`
        : `${e.id} is classical (quantum-vulnerable) and the policy does not allow classical fallback; ${adviseReplacement(policy, sets, e)}`,
    })
  }
  return rules
}

function parseHybrid(name: string, context: PolicyContext): [AlgorithmEntry, AlgorithmEntry] {
  const parts = name.split('+').map((p) => p.trim())
  const invalid = (message: string) =>
    new AppError(400, 'invalid_hybrid_algorithm', `${message} (got "${name}").`, { param: 'algorithm' })
  if (!(POLICY_CONTEXTS[context] as readonly AlgorithmType[]).includes('kem')) {
    throw invalid(`Hybrids are key exchanges; context ${context} does not take a KEM`)
  }
  if (parts.length !== 2) throw invalid('A hybrid joins exactly two KEMs with "+", e.g. x25519+kyber-768')
  const [a, b] = parts.map((p) => getAlgorithm(p)) as [AlgorithmEntry, AlgorithmEntry]
  const classical = [a, b].find((e) => e.type === 'kem' && e.classical)
  const pq = [a, b].find((e) => e.type === 'kem' && e.postQuantum)
  if (!classical || !pq)
    throw invalid('A hybrid pairs one classical KEM (x25519, ecdh-p256, ecdh-p384) with one ML-KEM')
  return [classical, pq]
}

/**
 * Checks one algorithm (id, standard name, alias or hybrid) in a context against a policy and
 * lists every rule that decided. Unknown algorithms, unknown contexts and algorithms of the wrong
 * type for the context are AppError 400 naming the allowed values.
 */
export function checkAlgorithm(policy: CryptoPolicy, algorithm: string, context: string): AlgorithmCheck {
  const ctx = parseContext(context)
  const sets = policySets(policy)
  const requested = algorithm
  const alias = HYBRID_ALIASES[algorithm.trim().toLowerCase()]
  const name = alias ?? algorithm
  let rules: PolicyRuleResult[]
  let canonical: string
  let type: AlgorithmType
  const hybrid = name.includes('+')

  if (hybrid) {
    const [classical, pq] = parseHybrid(name, ctx)
    canonical = `${classical.id}+${pq.id}`
    type = 'kem'
    const pqRules = entryRules(policy, sets, pq).filter((r) => r.rule !== 'forbidden_list')
    const forbiddenHit = [classical, pq].filter((e) => sets.forbidden.has(e.id)).map((e) => e.id)
    rules = [
      forbiddenHit.length > 0
        ? {
            rule: 'forbidden_list',
            passed: false,
            detail: `${forbiddenHit.join(' and ')} in forbiddenAlgorithms`,
          }
        : {
            rule: 'forbidden_list',
            passed: true,
            detail: `neither ${classical.id} nor ${pq.id} is forbidden`,
          },
      ...pqRules,
      {
        rule: 'classical_fallback',
        passed: true,
        detail: `${classical.id} is used only inside a hybrid with ${pq.id}, which is not a classical fallback`,
      },
    ]
    if (policy.hybridModeRequired) {
      rules.push({ rule: 'hybrid_mode', passed: true, detail: `${canonical} is a hybrid key exchange` })
    }
  } else {
    const e = getAlgorithm(name)
    const accepted = POLICY_CONTEXTS[ctx] as readonly AlgorithmType[]
    if (!accepted.includes(e.type)) {
      throw new AppError(
        400,
        'algorithm_context_mismatch',
        `${e.id} is a ${e.type} algorithm; context ${ctx} takes ${accepted.join(' or ')} algorithms.`,
        { param: 'algorithm' },
      )
    }
    canonical = e.id
    type = e.type
    rules = entryRules(policy, sets, e)
    if (policy.hybridModeRequired && e.type === 'kem') {
      rules.push({
        rule: 'hybrid_mode',
        passed: false,
        detail: `the policy requires hybrid key exchange; ${adviseReplacement(policy, sets, e)}`,
      })
    }
  }

  if (!policy.enabled) {
    rules.unshift({
      rule: 'policy_enabled',
      passed: true,
      detail: 'the crypto policy is disabled, so nothing is logged or blocked',
    })
  }
  const compliant = !policy.enabled || rules.every((r) => r.passed)
  return {
    algorithm: canonical,
    requested,
    context: ctx,
    type,
    hybrid,
    allowed: compliant,
    mode: policy.mode,
    decision: compliant ? 'allow' : 'violation',
    enforced: !compliant && policy.mode === 'enforce',
    rules,
  }
}
