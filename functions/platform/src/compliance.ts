/**
 * Compliance status per framework and requirement, derived from what is configured and running:
 * the tenant's effective policy, the algorithms the product signs with, the self-test report. Every
 * requirement carries its status (met, partially_met, not_met, not_applicable), the evidence (the
 * setting, the algorithm, the test) and the dates that apply.
 *
 * Sources: NSA CNSA 2.0 algorithms and FAQ (v2.1) with its transition timeline; NIST FIPS 140-3 and
 * its implementation guidance (IG 10.3.A self-tests); NIST IR 8547 (112-bit classical public-key
 * algorithms deprecated after 2030, all RSA/ECC/EdDSA disallowed after 2035).
 *
 * Honesty rules: the algorithms are FIPS-approved where the standard says so, but the product runs
 * them in JavaScript libraries and workerd's BoringSSL build on Cloudflare Workers; none of that is
 * a CMVP-validated module, and no requirement that needs one is reported as met.
 */

import type { SelfTestReport } from '../../../shared/crypto/self-test'
import { type CryptoPolicy, checkAlgorithm } from '../../../shared/crypto-policy/policy'
import { acceptedTokenAlgorithms } from '../../../shared/crypto-policy/token-algorithms'

export type ComplianceStatus = 'met' | 'partially_met' | 'not_met' | 'not_applicable'

export interface Evidence {
  kind: 'setting' | 'algorithm' | 'test' | 'document'
  ref: string
  detail: string
}

export interface Requirement {
  id: string
  title: string
  status: ComplianceStatus
  explanation: string
  evidence: Evidence[]
  dates?: { label: string; date: string }[]
}

export interface FrameworkReport {
  framework: 'CNSA 2.0' | 'FIPS 140-3'
  reference: string
  summary: Record<ComplianceStatus, number>
  requirements: Requirement[]
}

export interface ComplianceInputs {
  policy: CryptoPolicy
  /** JOSE algorithms the token keys can sign with (auth worker's JWKS). */
  tokenKeyAlgorithms: readonly string[]
  selfTests: SelfTestReport | null
}

const CNSA_TIMELINE = [
  { label: 'Software and firmware signing: prefer CNSA 2.0', date: '2025-01-01' },
  { label: 'Web browsers, servers and cloud services: support and prefer CNSA 2.0', date: '2025-01-01' },
  { label: 'Software and firmware signing: CNSA 2.0 exclusively', date: '2030-12-31' },
  { label: 'Web browsers, servers and cloud services: CNSA 2.0 exclusively', date: '2033-12-31' },
  { label: 'National security systems quantum-resistant', date: '2035-12-31' },
]

export const NIST_IR_8547_DATES = [
  { label: 'NIST IR 8547: 112-bit RSA/ECC deprecated', date: '2030-12-31' },
  { label: 'NIST IR 8547: all RSA, ECDSA, EdDSA, ECDH disallowed', date: '2035-12-31' },
]

const allowed = (policy: CryptoPolicy, id: string, context = 'request_declared') =>
  checkAlgorithm(policy, id, context).allowed

function summarize(requirements: Requirement[]): Record<ComplianceStatus, number> {
  const summary: Record<ComplianceStatus, number> = {
    met: 0,
    partially_met: 0,
    not_met: 0,
    not_applicable: 0,
  }
  for (const r of requirements) summary[r.status]++
  return summary
}

function setting(field: keyof CryptoPolicy, policy: CryptoPolicy): Evidence {
  return { kind: 'setting', ref: `policy.${field}`, detail: JSON.stringify(policy[field]) }
}

/**
 * The evidence of a self-test. Alternatives name the same check on another implementation (noble's
 * `_sign_kat` is WebCrypto's `_sign_verify`): the one this report ran is cited.
 */
function selfTest(report: SelfTestReport | null, ...names: [string, ...string[]]): Evidence {
  const result = report?.tests.find((t) => names.includes(t.name))
  const name = result?.name ?? names[0]
  return {
    kind: 'test',
    ref: `self-test ${name}`,
    detail: result
      ? result.passed
        ? `passed (${report!.completed_at})`
        : `FAILED: ${result.detail ?? ''}`
      : 'not run yet in this isolate',
  }
}

function cnsa(inputs: ComplianceInputs): FrameworkReport {
  const { policy, tokenKeyAlgorithms, selfTests } = inputs
  const tokenAlgs = acceptedTokenAlgorithms(policy)
  const requirements: Requirement[] = []

  const onlyMlDsa87 = tokenAlgs.length > 0 && tokenAlgs.every((a) => a === 'ML-DSA-87')
  requirements.push({
    id: 'cnsa2-signatures',
    title: 'Digital signatures: ML-DSA-87 (FIPS 204) only',
    status:
      onlyMlDsa87 && tokenKeyAlgorithms.includes('ML-DSA-87')
        ? 'met'
        : tokenAlgs.includes('ML-DSA-87')
          ? 'partially_met'
          : 'not_met',
    explanation: onlyMlDsa87
      ? 'Access tokens of this workspace are signed and accepted with ML-DSA-87 only.'
      : `This workspace's policy accepts tokens signed with ${tokenAlgs.join(', ') || 'nothing'}; CNSA 2.0 allows ML-DSA-87 only (the Maximum and Government presets).`,
    evidence: [
      setting('allowedSignatureAlgorithms', policy),
      { kind: 'algorithm', ref: 'token signing keys', detail: tokenKeyAlgorithms.join(', ') },
      selfTest(selfTests, 'ml_dsa_87_sign_kat', 'ml_dsa_87_sign_verify'),
    ],
    dates: CNSA_TIMELINE.slice(1, 4),
  })

  const kems = policy.allowedKemAlgorithms
  requirements.push({
    id: 'cnsa2-key-establishment',
    title: 'Key establishment: ML-KEM-1024 (FIPS 203)',
    status:
      kems.length > 0 && kems.every((k) => k === 'kyber-1024')
        ? 'met'
        : kems.includes('kyber-1024')
          ? 'partially_met'
          : 'not_met',
    explanation:
      'Governs the key establishment clients declare (x-svc-crypto-algorithms) and policy checks; TLS to the service is terminated by the Cloudflare edge, which offers X25519MLKEM768 (not CNSA 2.0).',
    evidence: [setting('allowedKemAlgorithms', policy), setting('hybridModeRequired', policy)],
  })

  const symmetric = policy.allowedSymmetricAlgorithms
  const ciphers = symmetric.filter((s) => /gcm|chacha/.test(s))
  requirements.push({
    id: 'cnsa2-symmetric',
    title: 'Symmetric encryption: AES-256 (FIPS 197)',
    status:
      ciphers.length > 0 && ciphers.every((c) => c === 'aes-256-gcm')
        ? 'met'
        : ciphers.includes('aes-256-gcm')
          ? 'partially_met'
          : 'not_met',
    explanation: `Ciphers the policy allows: ${ciphers.join(', ') || 'none'}.`,
    evidence: [setting('allowedSymmetricAlgorithms', policy)],
  })

  const hashes = symmetric.filter((s) => s.startsWith('sha'))
  requirements.push({
    id: 'cnsa2-hashing',
    title: 'Hashing: SHA-384 or SHA-512 (FIPS 180-4)',
    status: hashes.every((h) => h === 'sha-384' || h === 'sha-512') ? 'partially_met' : 'not_met',
    explanation:
      'Policy and attestation digests use SHA-384. The audit logs must use SHA-256 (RFC 9162 and C2SP fix the Merkle hash) and key IDs and JWK thumbprints are SHA-256 by their standards, so SHA-256 stays in use: never fully met.',
    evidence: [
      setting('allowedSymmetricAlgorithms', policy),
      { kind: 'algorithm', ref: 'attestation subjects', detail: 'SHA-384 over RFC 8785 canonical JSON' },
      { kind: 'algorithm', ref: 'audit log Merkle tree', detail: 'SHA-256 (RFC 9162 §2.1)' },
    ],
  })

  requirements.push({
    id: 'cnsa2-software-signing',
    title: 'Signed statements about the software: LMS/XMSS (SP 800-208) or ML-DSA-87',
    status: 'not_met',
    explanation:
      'Attestations are signed with ML-DSA-65 (and Ed25519 for classical verifiers), audit checkpoints with ML-DSA-44 (as C2SP tlog-cosignature specifies) and Ed25519. Neither is a CNSA 2.0 parameter set.',
    evidence: [
      { kind: 'algorithm', ref: 'attestation DSSE signatures', detail: 'ML-DSA-65, Ed25519' },
      {
        kind: 'algorithm',
        ref: 'audit checkpoints',
        detail: 'ML-DSA-44 cosignature, Ed25519 note signature',
      },
    ],
    dates: [CNSA_TIMELINE[0]!, CNSA_TIMELINE[2]!],
  })

  const classicalForbidden = !policy.allowClassicalFallback
  requirements.push({
    id: 'cnsa2-no-classical',
    title: 'Quantum-vulnerable public-key algorithms (RSA, ECDH, ECDSA, EdDSA) not relied on',
    status: classicalForbidden ? 'partially_met' : 'not_met',
    explanation: classicalForbidden
      ? 'The policy forbids classical algorithms on their own; Ed25519 still signs audit checkpoints and attestations beside the post-quantum signature, for classical verifiers.'
      : 'The policy allows classical algorithms on their own (allowClassicalFallback).',
    evidence: [setting('allowClassicalFallback', policy), setting('forbiddenAlgorithms', policy)],
    dates: [CNSA_TIMELINE[4]!, ...NIST_IR_8547_DATES],
  })

  return {
    framework: 'CNSA 2.0',
    reference: 'NSA Commercial National Security Algorithm Suite 2.0 (algorithms and FAQ v2.1)',
    summary: summarize(requirements),
    requirements,
  }
}

function fips(inputs: ComplianceInputs): FrameworkReport {
  const { policy, selfTests } = inputs
  const requirements: Requirement[] = []

  requirements.push({
    id: 'fips140-3-validated-module',
    title: 'Cryptography performed by a CMVP-validated module',
    status: 'not_met',
    explanation:
      "ML-DSA and ML-KEM run in the Workers runtime's WebCrypto (BoringSSL inside workerd; @noble/post-quantum only where a runtime lacks them), SHAKE256 and Argon2id in @noble/hashes (JavaScript). Neither the runtime's WebCrypto nor these libraries is a FIPS 140-3 validated cryptographic module here, and this service claims no validation.",
    evidence: [{ kind: 'document', ref: 'docs/crypto.md', detail: 'Not a validated module' }],
  })

  const nonApproved = ['chacha20-poly1305', 'falcon-512', 'falcon-1024'].filter((id) => allowed(policy, id))
  requirements.push({
    id: 'fips140-3-approved-algorithms',
    title: 'Only approved algorithms (FIPS 203, 204, 205, 186-5, 197, 180-4, 198-1) in approved mode',
    status: nonApproved.length === 0 ? 'partially_met' : 'not_met',
    explanation:
      nonApproved.length === 0
        ? 'The policy allows only FIPS-approved algorithms; passwords are hashed with Argon2id, which is not approved (PBKDF2 at the Workers cap is weaker: docs/crypto.md §4).'
        : `The policy allows non-approved algorithms: ${nonApproved.join(', ')}.`,
    evidence: [
      setting('requireNistFinal', policy),
      { kind: 'algorithm', ref: 'password hashing', detail: 'Argon2id (RFC 9106)' },
    ],
  })

  const casts = selfTests?.tests.filter((t) => t.kind === 'known_answer') ?? []
  requirements.push({
    id: 'fips140-3-casts',
    title: 'Cryptographic algorithm self-tests before first use (IG 10.3.A)',
    status: selfTests === null ? 'partially_met' : selfTests.passed ? 'met' : 'not_met',
    explanation: selfTests
      ? `${selfTests.tests.length} self-tests (${casts.length} known-answer; the rest check hedged signing and encapsulation, which no vector can predict, by their inverse) ran at ${selfTests.completed_at}; each algorithm is also tested before its first use in every isolate, and a failure stops all cryptography (fail closed).`
      : 'Each algorithm is tested before its first use in every isolate; no full report from this isolate yet.',
    evidence: [
      selfTest(selfTests, 'ml_dsa_65_verify_kat'),
      selfTest(selfTests, 'ml_kem_768_keygen_kat'),
      selfTest(selfTests, 'ed25519_kat'),
      {
        kind: 'document',
        ref: '/trust/conformance',
        detail: 'every self-test with its vector (NIST ACVP tcIds)',
      },
    ],
  })

  requirements.push({
    id: 'fips140-3-pairwise-consistency',
    title: 'Pairwise consistency test on key generation',
    status: 'met',
    explanation:
      'Every generated or imported signing key signs and verifies a fixed message before use; a failing key is discarded.',
    evidence: [
      {
        kind: 'test',
        ref: 'shared/crypto/jwk.ts pairwiseConsistencyTest',
        detail: 'on generateSigningKey and Ed25519 import',
      },
    ],
  })

  requirements.push({
    id: 'fips140-3-implicit-rejection',
    title: 'ML-KEM decapsulation implicit-rejection check',
    status: selfTests?.tests.find((t) => t.name === 'ml_kem_768_implicit_rejection')?.passed
      ? 'met'
      : 'partially_met',
    explanation: 'A modified ciphertext must yield the rejection key J(z‖c), never the real key.',
    evidence: [selfTest(selfTests, 'ml_kem_768_implicit_rejection')],
  })

  requirements.push({
    id: 'fips140-3-entropy',
    title: 'Entropy source validated under SP 800-90B (ESV)',
    status: 'not_met',
    explanation:
      "Randomness comes from the Workers runtime (crypto.getRandomValues: BoringSSL's CSPRNG seeded by the host OS); no entropy-source validation is claimed (see /trust/entropy).",
    evidence: [{ kind: 'document', ref: '/trust/entropy', detail: 'the entropy chain' }],
  })

  requirements.push({
    id: 'fips140-3-zeroization',
    title: 'Zeroization of secret keys',
    status: 'partially_met',
    explanation:
      "Private keys exist only in the auth and platform workers' memory, imported from secrets; JavaScript cannot guarantee that copies are wiped.",
    evidence: [{ kind: 'document', ref: 'docs/crypto.md', detail: 'keys expanded once per isolate' }],
  })

  requirements.push({
    id: 'fips140-3-physical-security',
    title: 'Physical security of the module',
    status: 'not_applicable',
    explanation:
      'A software service on a shared cloud platform has no module boundary of its own to protect physically.',
    evidence: [],
  })

  return {
    framework: 'FIPS 140-3',
    reference: 'NIST FIPS 140-3 and its Implementation Guidance',
    summary: summarize(requirements),
    requirements,
  }
}

export function assessCompliance(inputs: ComplianceInputs) {
  const frameworks = [cnsa(inputs), fips(inputs)]
  const classicalAllowed = [
    'rsa-2048',
    'rsa-4096',
    'ecdsa-p256',
    'ecdsa-p384',
    'ed25519',
    'x25519',
    'ecdh-p256',
    'ecdh-p384',
  ].filter((id) => allowed(inputs.policy, id))
  return {
    object: 'crypto_compliance' as const,
    validated_module: false,
    statement:
      'The algorithms used are FIPS-approved where noted, but they run in JavaScript libraries and the Workers runtime, which are not CMVP-validated cryptographic modules.',
    frameworks,
    classical_algorithms_allowed: classicalAllowed.map((id) => ({
      algorithm: id,
      dates: NIST_IR_8547_DATES,
    })),
  }
}
