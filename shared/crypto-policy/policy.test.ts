import { describe, expect, it } from 'vitest'
import { buildAccessTokenClaims, signAccessToken, verifyAccessToken } from '../crypto/access-token'
import { buildJwks, generateSigningKey } from '../crypto/jwk'
import { AppError } from '../http/errors'
import { policyViolationError } from './enforcement'
import {
  type CryptoPolicy,
  checkAlgorithm,
  getPolicyPreset,
  POLICY_CONTEXT_NAMES,
  POLICY_PRESETS,
  type PolicyContext,
  PRESET_NAMES,
  type PresetName,
  validatePolicy,
} from './policy'
import { ALGORITHM_REGISTRY, type AlgorithmType } from './registry'
import { acceptedTokenAlgorithms, chooseSigningAlgorithm } from './token-algorithms'

function thrown(fn: () => unknown): AppError {
  try {
    fn()
  } catch (e) {
    if (e instanceof AppError) return e
    throw e
  }
  throw new Error('expected an AppError')
}

/**
 * Every registry algorithm under every preset, in its natural context, written out from the
 * spec's preset table (see docs/crypto.md for the reasoning behind each cell):
 * D = Default, S = Strict, M = Maximum, G = Government; 1 = allowed, 0 = violation.
 */
const DECISIONS: Record<string, [D: 0 | 1, S: 0 | 1, M: 0 | 1, G: 0 | 1]> = {
  'kyber-512': [1, 0, 0, 0],
  'kyber-768': [1, 1, 0, 0],
  'kyber-1024': [1, 1, 1, 0], // Government: standalone key exchange is not hybrid
  'dilithium-2': [1, 0, 0, 0],
  'dilithium-3': [1, 1, 0, 0],
  'dilithium-5': [1, 1, 1, 1],
  'sphincs-shake-128f-simple': [1, 0, 0, 0],
  'sphincs-shake-256f-simple': [1, 0, 1, 1], // Strict names only the dilithium family
  'falcon-512': [0, 0, 0, 0], // draft: not in any preset
  'falcon-1024': [0, 0, 0, 0],
  'rsa-2048': [1, 0, 0, 0], // classical: only Default allows it, for migration
  'rsa-4096': [1, 0, 0, 0],
  'ecdsa-p256': [1, 0, 0, 0],
  'ecdsa-p384': [1, 0, 0, 0],
  ed25519: [1, 0, 0, 0],
  x25519: [1, 0, 0, 0],
  'ecdh-p256': [1, 0, 0, 0],
  'ecdh-p384': [1, 0, 0, 0],
  'aes-256-gcm': [1, 1, 1, 1],
  'aes-128-gcm': [1, 0, 0, 0], // level 1
  'chacha20-poly1305': [1, 0, 0, 0], // not NIST-approved
  'sha-256': [1, 0, 0, 0], // level 2
  'sha-384': [1, 1, 0, 0], // level 4
  'sha-512': [1, 1, 1, 1],
  'sha3-256': [1, 0, 0, 0],
  'sha3-512': [1, 1, 1, 1],
  'hmac-sha-256': [1, 1, 1, 1],
}

const HYBRID_DECISIONS: Record<string, [0 | 1, 0 | 1, 0 | 1, 0 | 1]> = {
  'x25519+kyber-1024': [1, 1, 1, 1],
  'ecdh-p384+kyber-1024': [1, 1, 1, 1],
  'x25519+kyber-768': [1, 1, 0, 0],
  'ecdh-p256+kyber-768': [1, 1, 0, 0],
  'x25519+kyber-512': [1, 0, 0, 0],
}

const NATURAL_CONTEXT: Record<AlgorithmType, PolicyContext> = {
  kem: 'key_exchange',
  signature: 'token_signature',
  symmetric: 'data_encryption',
  hash: 'hashing',
  mac: 'message_authentication',
}

describe('presets', () => {
  it('the decision table covers every registry algorithm', () => {
    expect(Object.keys(DECISIONS).sort()).toEqual(ALGORITHM_REGISTRY.map((e) => e.id).sort())
  })

  it.each(PRESET_NAMES.map((name, column) => [name, column] as const))(
    '%s decides every algorithm as the table says',
    (name, column) => {
      const policy = POLICY_PRESETS[name]
      for (const e of ALGORITHM_REGISTRY) {
        const check = checkAlgorithm(policy, e.id, NATURAL_CONTEXT[e.type])
        const expected = DECISIONS[e.id]?.[column] === 1 ? 'allow' : 'violation'
        expect(check.decision, `${name} / ${e.id}: ${JSON.stringify(check.rules)}`).toBe(expected)
        expect(check.allowed).toBe(expected === 'allow')
        expect(check.enforced).toBe(expected === 'violation' && policy.mode === 'enforce')
      }
      for (const [hybrid, row] of Object.entries(HYBRID_DECISIONS)) {
        const check = checkAlgorithm(policy, hybrid, 'key_exchange')
        expect(check.decision, `${name} / ${hybrid}: ${JSON.stringify(check.rules)}`).toBe(
          row[column] === 1 ? 'allow' : 'violation',
        )
      }
    },
  )

  it.each(PRESET_NAMES)('%s passes validatePolicy unchanged', (name) => {
    expect(validatePolicy(structuredClone(POLICY_PRESETS[name]))).toEqual(POLICY_PRESETS[name])
  })

  it('carry the spec rules as policy fields', () => {
    const fields = (name: PresetName) => {
      const { minimumSecurityLevel, requireNistFinal, allowClassicalFallback, hybridModeRequired, mode } =
        POLICY_PRESETS[name]
      return { minimumSecurityLevel, requireNistFinal, allowClassicalFallback, hybridModeRequired, mode }
    }
    expect(fields('default')).toEqual({
      minimumSecurityLevel: 1,
      requireNistFinal: false,
      allowClassicalFallback: true,
      hybridModeRequired: false,
      mode: 'audit',
    })
    expect(fields('strict')).toEqual({
      minimumSecurityLevel: 3,
      requireNistFinal: true,
      allowClassicalFallback: false,
      hybridModeRequired: false,
      mode: 'enforce',
    })
    expect(fields('maximum')).toEqual({
      minimumSecurityLevel: 5,
      requireNistFinal: true,
      allowClassicalFallback: false,
      hybridModeRequired: false,
      mode: 'enforce',
    })
    expect(fields('government')).toEqual({
      minimumSecurityLevel: 5,
      requireNistFinal: true,
      allowClassicalFallback: false,
      hybridModeRequired: true,
      mode: 'enforce',
    })
    expect(POLICY_PRESETS.strict.allowedKemAlgorithms).toEqual(['kyber-768', 'kyber-1024'])
    expect(POLICY_PRESETS.strict.allowedSignatureAlgorithms).toEqual(['dilithium-3', 'dilithium-5'])
  })

  it('getPolicyPreset returns a copy by case-insensitive name and rejects unknown names', () => {
    const copy = getPolicyPreset('Strict')
    copy.allowedKemAlgorithms.push('kyber-512')
    expect(POLICY_PRESETS.strict.allowedKemAlgorithms).toEqual(['kyber-768', 'kyber-1024'])
    const error = thrown(() => getPolicyPreset('paranoid'))
    expect(error).toMatchObject({ status: 400, code: 'unknown_policy_preset' })
    expect(error.message).toContain('default, strict, maximum, government')
  })
})

describe('validatePolicy', () => {
  const base = (): CryptoPolicy => structuredClone(POLICY_PRESETS.strict) as CryptoPolicy

  it('normalises standard names to registry ids', () => {
    const policy = {
      ...base(),
      allowedKemAlgorithms: ['ML-KEM-768', 'Kyber-1024'],
      allowedSignatureAlgorithms: ['ML-DSA-87'],
    }
    expect(validatePolicy(policy)).toMatchObject({
      allowedKemAlgorithms: ['kyber-768', 'kyber-1024'],
      allowedSignatureAlgorithms: ['dilithium-5'],
    })
  })

  it('rejects unknown fields, wrong types and out-of-range levels (schema)', () => {
    for (const bad of [
      { ...base(), extra: true },
      { ...base(), mode: 'block' },
      { ...base(), minimumSecurityLevel: 6 },
      { ...base(), minimumSecurityLevel: 2.5 },
      { ...base(), allowedKemAlgorithms: 'kyber-768' },
      (({ hybridModeRequired: _, ...rest }) => rest)(base()),
    ]) {
      const error = thrown(() => validatePolicy(bad))
      expect(error, JSON.stringify(bad).slice(0, 60)).toMatchObject({
        status: 400,
        code: 'invalid_crypto_policy',
      })
    }
  })

  const contradictions: [string, (p: CryptoPolicy) => CryptoPolicy, RegExp][] = [
    [
      'an unknown algorithm',
      (p) => ({ ...p, allowedKemAlgorithms: ['kyber-768', 'kyber-999'] }),
      /"kyber-999" is not a known algorithm/,
    ],
    ['a hybrid in a list', (p) => ({ ...p, allowedKemAlgorithms: ['x25519+kyber-768'] }), /is a hybrid/],
    [
      'a duplicate',
      (p) => ({ ...p, allowedKemAlgorithms: ['kyber-768', 'ML-KEM-768'] }),
      /lists kyber-768 twice/,
    ],
    [
      'a KEM in the signature list',
      (p) => ({ ...p, allowedSignatureAlgorithms: ['dilithium-3', 'kyber-768'] }),
      /allowedSignatureAlgorithms contains kyber-768, which is a kem/,
    ],
    [
      'allowed and forbidden',
      (p) => ({ ...p, forbiddenAlgorithms: ['dilithium-3'] }),
      /dilithium-3 is both allowed \(allowedSignatureAlgorithms\) and forbidden/,
    ],
    [
      'below the minimum level',
      (p) => ({ ...p, allowedKemAlgorithms: ['kyber-512', 'kyber-768'] }),
      /kyber-512 \(security level 1\) is allowed but minimumSecurityLevel is 3/,
    ],
    [
      'classical without fallback',
      (p) => ({ ...p, forbiddenAlgorithms: [], allowedSignatureAlgorithms: ['dilithium-3', 'ed25519'] }),
      /ed25519 is a classical algorithm, allowed while allowClassicalFallback is false/,
    ],
    [
      'a draft with requireNistFinal',
      (p) => ({ ...p, allowedSignatureAlgorithms: ['falcon-1024'] }),
      /falcon-1024 is DRAFT, allowed while requireNistFinal is true/,
    ],
    [
      'a non-NIST cipher with requireNistFinal',
      (p) => ({ ...p, allowedSymmetricAlgorithms: ['aes-256-gcm', 'chacha20-poly1305'] }),
      /chacha20-poly1305 is DEPRECATED, allowed while requireNistFinal is true/,
    ],
    [
      'hybrid mode without a classical KEM to pair with',
      (p) => ({ ...p, hybridModeRequired: true, forbiddenAlgorithms: ['x25519', 'ecdh-p256', 'ecdh-p384'] }),
      /hybridModeRequired needs/,
    ],
    [
      'hybrid mode without a post-quantum KEM',
      (p) => ({ ...p, hybridModeRequired: true, allowedKemAlgorithms: [] }),
      /hybridModeRequired needs/,
    ],
  ]

  it.each(contradictions)('rejects %s', (_, mutate, message) => {
    const error = thrown(() => validatePolicy(mutate(base())))
    expect(error).toMatchObject({ status: 400, code: 'crypto_policy_contradiction' })
    expect(error.message).toMatch(message)
    expect(error.extraBody?.policy_problems).toEqual(expect.arrayContaining([expect.stringMatching(message)]))
  })

  it('reports every problem at once', () => {
    const error = thrown(() =>
      validatePolicy({
        ...base(),
        allowedKemAlgorithms: ['kyber-512', 'nope'],
        forbiddenAlgorithms: ['dilithium-5'],
      }),
    )
    expect(error.extraBody?.policy_problems).toHaveLength(3)
  })
})

describe('checkAlgorithm', () => {
  it('lists every rule that decided, with the reason', () => {
    const check = checkAlgorithm(POLICY_PRESETS.strict, 'rsa-2048', 'token_signature')
    expect(check).toMatchObject({
      algorithm: 'rsa-2048',
      context: 'token_signature',
      type: 'signature',
      hybrid: false,
      allowed: false,
      mode: 'enforce',
      decision: 'violation',
      enforced: true,
    })
    expect(check.rules).toEqual([
      { rule: 'forbidden_list', passed: false, detail: 'rsa-2048 is in forbiddenAlgorithms' },
      { rule: 'allow_list', passed: false, detail: 'rsa-2048 is not in allowedSignatureAlgorithms' },
      {
        rule: 'nist_final',
        passed: false,
        detail: 'rsa-2048 is DEPRECATED; the policy requires NIST-final algorithms',
      },
      {
        rule: 'classical_fallback',
        passed: false,
        detail:
          'rsa-2048 is classical (quantum-vulnerable) and the policy does not allow classical fallback; use dilithium-3',
      },
    ])
  })

  it('suggests only replacements the same policy allows (rsa-2048 under Strict: dilithium-3, not dilithium-2)', () => {
    const violation = policyViolationError(
      checkAlgorithm(POLICY_PRESETS.strict, 'rsa-2048', 'token_signature'),
      'The token',
    )
    expect(violation.message).toContain('use dilithium-3')
    expect(violation.message).not.toContain('dilithium-2')
    // Every advice ("use X", "such as X") under every preset names something that preset allows in that context.
    const natural: Record<AlgorithmType, PolicyContext> = {
      kem: 'key_exchange',
      signature: 'token_signature',
      symmetric: 'data_encryption',
      hash: 'hashing',
      mac: 'message_authentication',
    }
    let advised = 0
    for (const preset of PRESET_NAMES) {
      const policy = POLICY_PRESETS[preset]
      for (const e of ALGORITHM_REGISTRY) {
        const context = natural[e.type]
        for (const rule of checkAlgorithm(policy, e.id, context).rules) {
          const suggestion = /(?:use|such as) (\S+)$/.exec(rule.detail)?.[1]
          if (!suggestion) continue
          advised++
          expect(
            checkAlgorithm(policy, suggestion, context).allowed,
            `${preset}: ${e.id} -> ${rule.detail}`,
          ).toBe(true)
        }
      }
    }
    expect(advised).toBeGreaterThan(20)
  })

  it('says so when the policy allows no algorithm of that type, instead of advising a forbidden one', () => {
    const none = { ...POLICY_PRESETS.strict, allowedSignatureAlgorithms: [] }
    const rule = checkAlgorithm(none, 'rsa-2048', 'token_signature').rules.find(
      (r) => r.rule === 'classical_fallback',
    )
    expect(rule?.detail).toBe(
      'rsa-2048 is classical (quantum-vulnerable) and the policy does not allow classical fallback; the policy allows no signature algorithm',
    )
  })

  it('accepts standard names and reports the registry id', () => {
    const check = checkAlgorithm(POLICY_PRESETS.strict, 'ML-DSA-65', 'TOKEN_SIGNATURE')
    expect(check).toMatchObject({
      algorithm: 'dilithium-3',
      requested: 'ML-DSA-65',
      context: 'token_signature',
      decision: 'allow',
    })
    expect(check.rules.map((r) => r.rule)).toEqual([
      'forbidden_list',
      'allow_list',
      'minimum_security_level',
      'nist_final',
    ])
  })

  it('audit mode records the violation without enforcing it', () => {
    const audit = { ...POLICY_PRESETS.strict, mode: 'audit' as const }
    expect(checkAlgorithm(audit, 'ed25519', 'token_signature')).toMatchObject({
      decision: 'violation',
      enforced: false,
      allowed: false,
    })
    expect(checkAlgorithm(POLICY_PRESETS.default, 'falcon-512', 'document_signature')).toMatchObject({
      decision: 'violation',
      enforced: false,
      mode: 'audit',
    })
  })

  it('a disabled policy allows everything and says so', () => {
    const disabled = { ...POLICY_PRESETS.maximum, enabled: false }
    const check = checkAlgorithm(disabled, 'rsa-2048', 'token_signature')
    expect(check).toMatchObject({ allowed: true, decision: 'allow', enforced: false })
    expect(check.rules[0]).toMatchObject({ rule: 'policy_enabled', passed: true })
  })

  it('request_declared checks any type by its registry type', () => {
    expect(checkAlgorithm(POLICY_PRESETS.strict, 'sha-256', 'request_declared')).toMatchObject({
      type: 'hash',
      decision: 'violation',
    })
    expect(checkAlgorithm(POLICY_PRESETS.strict, 'kyber-768', 'request_declared')).toMatchObject({
      type: 'kem',
      decision: 'allow',
    })
  })

  it('rejects unknown algorithms, unknown contexts and type mismatches with a 400 naming the allowed values', () => {
    expect(thrown(() => checkAlgorithm(POLICY_PRESETS.default, 'md5', 'hashing'))).toMatchObject({
      status: 400,
      code: 'unknown_algorithm',
    })
    const context = thrown(() => checkAlgorithm(POLICY_PRESETS.default, 'sha-256', 'storage'))
    expect(context).toMatchObject({ status: 400, code: 'invalid_policy_context', param: 'context' })
    expect(context.message).toContain(POLICY_CONTEXT_NAMES.join(', '))
    const mismatch = thrown(() => checkAlgorithm(POLICY_PRESETS.default, 'kyber-768', 'token_signature'))
    expect(mismatch).toMatchObject({ status: 400, code: 'algorithm_context_mismatch' })
    expect(mismatch.message).toBe(
      'kyber-768 is a kem algorithm; context token_signature takes signature algorithms.',
    )
  })
})

describe('hybrid key exchange', () => {
  const government = POLICY_PRESETS.government

  it('Government requires a hybrid: a lone ML-KEM-1024 is a violation, x25519+kyber-1024 is allowed', () => {
    const lone = checkAlgorithm(government, 'kyber-1024', 'key_exchange')
    expect(lone.decision).toBe('violation')
    expect(lone.rules.find((r) => r.rule === 'hybrid_mode')).toMatchObject({ passed: false })
    expect(lone.rules.filter((r) => !r.passed).map((r) => r.rule)).toEqual(['hybrid_mode'])

    const hybrid = checkAlgorithm(government, 'x25519+kyber-1024', 'key_exchange')
    expect(hybrid).toMatchObject({
      algorithm: 'x25519+kyber-1024',
      hybrid: true,
      decision: 'allow',
      type: 'kem',
    })
    expect(hybrid.rules.map((r) => r.rule)).toEqual([
      'forbidden_list',
      'allow_list',
      'minimum_security_level',
      'nist_final',
      'classical_fallback',
      'hybrid_mode',
    ])
  })

  it('a lone classical KEM fails the allow-list, NIST-final, fallback and hybrid rules', () => {
    const check = checkAlgorithm(government, 'x25519', 'key_exchange')
    expect(check.rules.filter((r) => !r.passed).map((r) => r.rule)).toEqual([
      'allow_list',
      'nist_final',
      'classical_fallback',
      'hybrid_mode',
    ])
  })

  it('normalises component order and TLS names', () => {
    expect(checkAlgorithm(government, 'kyber-1024 + X25519', 'key_exchange').algorithm).toBe(
      'x25519+kyber-1024',
    )
    expect(checkAlgorithm(government, 'SecP384r1MLKEM1024', 'key_exchange')).toMatchObject({
      algorithm: 'ecdh-p384+kyber-1024',
      decision: 'allow',
    })
    const xwing = checkAlgorithm(government, 'X25519MLKEM768', 'key_exchange')
    expect(xwing).toMatchObject({ algorithm: 'x25519+kyber-768', decision: 'violation' })
    expect(xwing.rules.filter((r) => !r.passed).map((r) => r.rule)).toEqual([
      'allow_list',
      'minimum_security_level',
    ])
  })

  it('a forbidden component fails the hybrid', () => {
    const policy = { ...government, forbiddenAlgorithms: [...government.forbiddenAlgorithms, 'x25519'] }
    const check = checkAlgorithm(policy, 'x25519+kyber-1024', 'key_exchange')
    expect(check.decision).toBe('violation')
    expect(check.rules[0]).toMatchObject({
      rule: 'forbidden_list',
      passed: false,
      detail: 'x25519 in forbiddenAlgorithms',
    })
  })

  it('refuses malformed hybrids and hybrids outside key exchange', () => {
    for (const bad of [
      'kyber-768+kyber-1024',
      'x25519+ecdh-p256',
      'x25519+kyber-768+kyber-1024',
      'x25519+dilithium-3',
    ]) {
      expect(
        thrown(() => checkAlgorithm(government, bad, 'key_exchange')),
        bad,
      ).toMatchObject({
        status: 400,
        code: 'invalid_hybrid_algorithm',
      })
    }
    expect(thrown(() => checkAlgorithm(government, 'x25519+kyber-1024', 'token_signature'))).toMatchObject({
      code: 'invalid_hybrid_algorithm',
    })
  })
})

describe('policy-driven token verification', () => {
  it('accepted token algorithms follow each preset', () => {
    expect(acceptedTokenAlgorithms(POLICY_PRESETS.default)).toEqual([
      'ML-DSA-44',
      'ML-DSA-65',
      'ML-DSA-87',
      'EdDSA',
    ])
    expect(acceptedTokenAlgorithms(POLICY_PRESETS.strict)).toEqual(['ML-DSA-65', 'ML-DSA-87'])
    expect(acceptedTokenAlgorithms(POLICY_PRESETS.maximum)).toEqual(['ML-DSA-87'])
    expect(acceptedTokenAlgorithms(POLICY_PRESETS.government)).toEqual(['ML-DSA-87'])
  })

  it('chooses a signing algorithm the tenant policy allows', () => {
    expect(chooseSigningAlgorithm(POLICY_PRESETS.strict, ['EdDSA', 'ML-DSA-65', 'ML-DSA-87'])).toBe(
      'ML-DSA-65',
    )
    expect(chooseSigningAlgorithm(POLICY_PRESETS.maximum, ['ML-DSA-65', 'ML-DSA-87'])).toBe('ML-DSA-87')
    expect(chooseSigningAlgorithm(POLICY_PRESETS.default, ['EdDSA', 'ML-DSA-65'])).toBe('EdDSA')
    expect(chooseSigningAlgorithm({ ...POLICY_PRESETS.strict, mode: 'audit' }, ['EdDSA'])).toBe('EdDSA')
    expect(chooseSigningAlgorithm(POLICY_PRESETS.government, ['ML-DSA-65', 'EdDSA'])).toBeUndefined()
  })

  it('an EdDSA token is refused under Strict and accepted under Default', async () => {
    const key = await generateSigningKey('EdDSA')
    const token = await signAccessToken(
      buildAccessTokenClaims({ sub: 'u1', aud: 'platform', iss: 'https://auth.test', ttlSeconds: 60 }),
      key,
    )
    const options = { keys: buildJwks([key]), audience: 'platform' as const, issuer: 'https://auth.test' }
    await expect(
      verifyAccessToken(token, {
        ...options,
        allowedAlgorithms: acceptedTokenAlgorithms(POLICY_PRESETS.strict),
      }),
    ).rejects.toMatchObject({ status: 401, code: 'token_algorithm_not_allowed' })
    await expect(
      verifyAccessToken(token, {
        ...options,
        allowedAlgorithms: acceptedTokenAlgorithms(POLICY_PRESETS.default),
      }),
    ).resolves.toMatchObject({ header: { alg: 'EdDSA' } })
  })
})
