/**
 * Self-tests in the FIPS 140-3 style: cryptographic algorithm self-tests (known-answer tests,
 * KATs) for every algorithm the crypto module offers, plus the ML-KEM implicit-rejection check.
 * Pairwise consistency tests on key generation live in jwk.ts.
 *
 * When they run: FIPS 140-3 (IG 10.3.A) lets a module run each algorithm's self-test before the
 * first use of that algorithm instead of all of them at power-on. `assertAlgorithm('ML-DSA-65')`
 * does exactly that: it runs the ML-DSA-65 KATs (and the SHA-256 KAT every group depends on) once
 * per isolate, then lets the operation proceed. An isolate that only verifies ML-DSA-65 tokens
 * never pays for SLH-DSA or Argon2id. `run()` runs everything (for the attestation report).
 *
 * Error state: once any test has failed, every `assert*` throws AppError 503
 * `crypto_self_test_failed` for every algorithm until the isolate is replaced (fail closed).
 *
 * Timing note: workerd only advances its clock on I/O, so in production `duration_ms` is usually 0
 * (the whole suite costs ~100 ms of CPU warm, 200-300 ms on a cold isolate; one group 5-40 ms).
 */
import { argon2id } from '@noble/hashes/argon2.js'
import { shake256 } from '@noble/hashes/sha3.js'
import { ml_dsa44, ml_dsa65, ml_dsa87 } from '@noble/post-quantum/ml-dsa.js'
import { ml_kem768 } from '@noble/post-quantum/ml-kem.js'
import { slh_dsa_shake_128f } from '@noble/post-quantum/slh-dsa.js'
import { AppError } from '../http/errors'
import { sha256Hex } from './digests'
import { base64urlEncode, bytesToHex, constantTimeEqual, hexToBytes } from './encoding'
import {
  type MlDsaKeyGenVector,
  type MlDsaSigGenVector,
  SELF_TEST_VECTORS,
  type SelfTestVectors,
} from './self-test.vectors'

/** The algorithm groups the self-tests cover; each is tested before its first use. */
export const SELF_TESTED_ALGORITHMS = [
  'SHA-256',
  'ML-DSA-44',
  'ML-DSA-65',
  'ML-DSA-87',
  'ML-KEM-768',
  'SLH-DSA-SHAKE-128f',
  'Ed25519',
  'Argon2id',
] as const
export type SelfTestedAlgorithm = (typeof SELF_TESTED_ALGORITHMS)[number]

export type SelfTestKind = 'known_answer' | 'implicit_rejection'

export interface SelfTestResult {
  name: string
  algorithm: string
  kind: SelfTestKind
  passed: boolean
  duration_ms: number
  /** What went wrong, when `passed` is false. */
  detail?: string
}

export interface SelfTestReport {
  passed: boolean
  completed_at: string
  duration_ms: number
  tests: SelfTestResult[]
}

export interface SelfTestSuite {
  /** Runs every test not run yet; later calls return the same report. */
  run(): Promise<SelfTestReport>
  /** Runs every test; AppError 503 `crypto_self_test_failed` when any failed. */
  assertPassed(): Promise<SelfTestReport>
  /**
   * Before the first use of an algorithm: runs its tests (once) and throws AppError 503
   * `crypto_self_test_failed` if they, or any test run earlier, failed.
   */
  assertAlgorithm(algorithm: SelfTestedAlgorithm): Promise<void>
  /** The tests run so far (no test is run by this call). */
  results(): readonly SelfTestResult[]
}

interface SelfTestCase {
  name: string
  algorithm: SelfTestedAlgorithm
  kind: SelfTestKind
  /** Returns a failure description, or null when the test passed. */
  run(): Promise<string | null> | string | null
}

function expectHex(label: string, actual: string, expected: string): string | null {
  return constantTimeEqual(hexToBytes(actual), hexToBytes(expected))
    ? null
    : `${label} differs from the expected value`
}

function flipFirstBit(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const copy = Uint8Array.from(bytes)
  copy[0] = (copy[0] as number) ^ 1
  return copy
}

const ML_DSA_IMPL = { 'ML-DSA-44': ml_dsa44, 'ML-DSA-65': ml_dsa65, 'ML-DSA-87': ml_dsa87 } as const

/** keyGen, sigGen (deterministic, pure, with context) and verify KATs for one ML-DSA parameter set. */
function mlDsaCases(
  algorithm: keyof typeof ML_DSA_IMPL,
  keyGen: MlDsaKeyGenVector,
  sigGen: MlDsaSigGenVector,
): SelfTestCase[] {
  const impl = ML_DSA_IMPL[algorithm]
  const prefix = algorithm.toLowerCase().replaceAll('-', '_')
  /** The signature produced by the sign KAT, shared with the verify KAT. */
  let signature: Uint8Array | undefined
  let publicKey: Uint8Array | undefined
  return [
    {
      name: `${prefix}_keygen_kat`,
      algorithm,
      kind: 'known_answer',
      run() {
        const keys = impl.keygen(hexToBytes(keyGen.seed))
        return (
          expectHex('public key', sha256Hex(keys.publicKey), keyGen.publicKeySha256) ??
          expectHex('secret key', sha256Hex(keys.secretKey), keyGen.secretKeySha256)
        )
      },
    },
    {
      name: `${prefix}_sign_kat`,
      algorithm,
      kind: 'known_answer',
      run() {
        const secretKey = hexToBytes(sigGen.secretKey)
        const produced = impl.sign(hexToBytes(sigGen.message), secretKey, {
          context: hexToBytes(sigGen.context),
          extraEntropy: false,
        })
        const failure = expectHex('deterministic signature', sha256Hex(produced), sigGen.signatureSha256)
        if (failure) return failure
        signature = produced
        publicKey = impl.getPublicKey(secretKey)
        return null
      },
    },
    {
      name: `${prefix}_verify_kat`,
      algorithm,
      kind: 'known_answer',
      run() {
        if (!signature || !publicKey) return `no known-good signature: ${prefix}_sign_kat failed`
        const message = hexToBytes(sigGen.message)
        const context = hexToBytes(sigGen.context)
        if (!impl.verify(signature, message, publicKey, { context })) {
          return 'the known-answer signature did not verify'
        }
        if (impl.verify(flipFirstBit(signature), message, publicKey, { context })) {
          return 'a signature with one bit flipped verified'
        }
        return null
      },
    },
  ]
}

function buildCases(v: SelfTestVectors): SelfTestCase[] {
  return [
    {
      name: 'sha256_kat',
      algorithm: 'SHA-256',
      kind: 'known_answer',
      async run() {
        const message = hexToBytes(v.sha256.message)
        const webCrypto = bytesToHex(new Uint8Array(await crypto.subtle.digest('SHA-256', message)))
        return (
          expectHex('noble SHA-256', sha256Hex(message), v.sha256.digest) ??
          expectHex('WebCrypto SHA-256', webCrypto, v.sha256.digest)
        )
      },
    },
    ...mlDsaCases('ML-DSA-44', v.mlDsa44KeyGen, v.mlDsa44SigGen),
    ...mlDsaCases('ML-DSA-65', v.mlDsa65KeyGen, v.mlDsa65SigGen),
    ...mlDsaCases('ML-DSA-87', v.mlDsa87KeyGen, v.mlDsa87SigGen),
    {
      name: 'ml_kem_768_keygen_kat',
      algorithm: 'ML-KEM-768',
      kind: 'known_answer',
      run() {
        const seed = hexToBytes(v.mlKem768KeyGen.d + v.mlKem768KeyGen.z)
        const { publicKey, secretKey } = ml_kem768.keygen(seed)
        return (
          expectHex('encapsulation key', sha256Hex(publicKey), v.mlKem768KeyGen.encapsulationKeySha256) ??
          expectHex('decapsulation key', sha256Hex(secretKey), v.mlKem768KeyGen.decapsulationKeySha256)
        )
      },
    },
    {
      name: 'ml_kem_768_encaps_kat',
      algorithm: 'ML-KEM-768',
      kind: 'known_answer',
      run() {
        const { cipherText, sharedSecret } = ml_kem768.encapsulate(
          hexToBytes(v.mlKem768Encap.encapsulationKey),
          hexToBytes(v.mlKem768Encap.m),
        )
        return (
          expectHex('ciphertext', sha256Hex(cipherText), v.mlKem768Encap.ciphertextSha256) ??
          expectHex('shared secret', bytesToHex(sharedSecret), v.mlKem768Encap.sharedSecret)
        )
      },
    },
    {
      name: 'ml_kem_768_decaps_kat',
      algorithm: 'ML-KEM-768',
      kind: 'known_answer',
      run() {
        const key = ml_kem768.decapsulate(
          hexToBytes(v.mlKem768Decap.ciphertext),
          hexToBytes(v.mlKem768Decap.decapsulationKey),
        )
        return expectHex(
          `decapsulated key (${v.mlKem768Decap.reason})`,
          bytesToHex(key),
          v.mlKem768Decap.sharedSecret,
        )
      },
    },
    {
      name: 'ml_kem_768_implicit_rejection',
      algorithm: 'ML-KEM-768',
      kind: 'implicit_rejection',
      run() {
        // Keys from the keygen KAT; z is the implicit-rejection secret (FIPS 203 Algorithm 16).
        const z = hexToBytes(v.mlKem768KeyGen.z)
        const { publicKey, secretKey } = ml_kem768.keygen(hexToBytes(v.mlKem768KeyGen.d + v.mlKem768KeyGen.z))
        const { cipherText, sharedSecret } = ml_kem768.encapsulate(publicKey, hexToBytes(v.mlKem768Encap.m))
        if (!constantTimeEqual(ml_kem768.decapsulate(cipherText, secretKey), sharedSecret)) {
          return 'decapsulating a genuine ciphertext did not return the encapsulated key'
        }
        const tampered = flipFirstBit(cipherText)
        const rejected = ml_kem768.decapsulate(tampered, secretKey)
        // FIPS 203 Algorithm 18: K̄ = J(z || c) = SHAKE256(z || c, 32), computed here independently.
        const joined = new Uint8Array(z.length + tampered.length)
        joined.set(z)
        joined.set(tampered, z.length)
        const expected = shake256(joined, { dkLen: 32 })
        if (constantTimeEqual(rejected, sharedSecret))
          return 'a tampered ciphertext decapsulated to the real key'
        if (!constantTimeEqual(rejected, expected))
          return 'a tampered ciphertext did not yield the rejection key J(z || c)'
        return null
      },
    },
    {
      name: 'slh_dsa_shake_128f_keygen_kat',
      algorithm: 'SLH-DSA-SHAKE-128f',
      kind: 'known_answer',
      run() {
        const k = v.slhDsaShake128fKeyGen
        const { publicKey, secretKey } = slh_dsa_shake_128f.keygen(hexToBytes(k.skSeed + k.skPrf + k.pkSeed))
        return (
          expectHex('public key', bytesToHex(publicKey), k.publicKey) ??
          expectHex('secret key', bytesToHex(secretKey), k.secretKey)
        )
      },
    },
    {
      name: 'ed25519_kat',
      algorithm: 'Ed25519',
      kind: 'known_answer',
      async run() {
        const e = v.ed25519
        const jwk: JsonWebKey = {
          kty: 'OKP',
          crv: 'Ed25519',
          x: base64urlEncode(hexToBytes(e.publicKey)),
          d: base64urlEncode(hexToBytes(e.secretKey)),
        }
        const privateKey = await crypto.subtle.importKey('jwk', jwk, { name: 'Ed25519' }, false, ['sign'])
        const publicKey = await crypto.subtle.importKey(
          'raw',
          hexToBytes(e.publicKey),
          { name: 'Ed25519' },
          false,
          ['verify'],
        )
        const message = hexToBytes(e.message)
        const signature = new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, privateKey, message))
        const failure = expectHex('signature', bytesToHex(signature), e.signature)
        if (failure) return failure
        const tampered = flipFirstBit(signature)
        if (await crypto.subtle.verify({ name: 'Ed25519' }, publicKey, tampered, message)) {
          return 'a signature with one bit flipped verified'
        }
        return (await crypto.subtle.verify({ name: 'Ed25519' }, publicKey, signature, message))
          ? null
          : 'the known-answer signature did not verify'
      },
    },
    {
      name: 'argon2id_kat',
      algorithm: 'Argon2id',
      kind: 'known_answer',
      run() {
        const a = v.argon2id
        const tag = argon2id(hexToBytes(a.password), hexToBytes(a.salt), {
          m: a.memoryKiB,
          t: a.passes,
          p: a.parallelism,
          key: hexToBytes(a.secret),
          personalization: hexToBytes(a.associatedData),
          dkLen: 32,
        })
        return expectHex('tag', bytesToHex(tag), a.tag)
      },
    },
  ]
}

async function execute(testCase: SelfTestCase): Promise<SelfTestResult> {
  const start = performance.now()
  let detail: string | null
  try {
    detail = await testCase.run()
  } catch (err) {
    detail = `threw ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`
  }
  const result: SelfTestResult = {
    name: testCase.name,
    algorithm: testCase.algorithm,
    kind: testCase.kind,
    passed: detail === null,
    duration_ms: Math.round((performance.now() - start) * 100) / 100,
  }
  if (detail !== null) result.detail = detail
  return result
}

function failure(results: readonly SelfTestResult[]): AppError | null {
  const failed = results.filter((t) => !t.passed)
  if (failed.length === 0) return null
  return new AppError(
    503,
    'crypto_self_test_failed',
    'Cryptographic self-tests failed on this server instance, so it will not sign or verify anything. Retry the request; another instance may serve it.',
    { internalMessage: failed.map((t) => `${t.name}: ${t.detail}`).join('; ') },
  )
}

/** A suite over the given vectors; tests inject corrupted vectors to exercise the failure path. */
export function createSelfTestSuite(vectors: SelfTestVectors = SELF_TEST_VECTORS): SelfTestSuite {
  const cases = buildCases(vectors)
  // Settled results are cached, never pending promises: workerd must not resolve one request's
  // promise from another request's context. Two concurrent first calls may both run a test; the
  // first result recorded wins, and both are the same computation.
  const done = new Map<string, SelfTestResult>()
  const ordered = () => cases.flatMap((c) => done.get(c.name) ?? [])
  const runCases = async (selected: readonly SelfTestCase[]) => {
    for (const testCase of selected) {
      if (done.has(testCase.name)) continue
      const result = await execute(testCase)
      if (!done.has(testCase.name)) done.set(testCase.name, result)
    }
  }
  let report: SelfTestReport | undefined
  const run = async (): Promise<SelfTestReport> => {
    if (report) return report
    const started = performance.now()
    await runCases(cases)
    const tests = ordered()
    report ??= {
      passed: tests.every((t) => t.passed),
      completed_at: new Date().toISOString(),
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
      tests,
    }
    return report
  }
  return {
    run,
    async assertPassed() {
      const result = await run()
      const error = failure(result.tests)
      if (error) throw error
      return result
    },
    async assertAlgorithm(algorithm) {
      if (!(SELF_TESTED_ALGORITHMS as readonly string[]).includes(algorithm)) {
        throw new AppError(500, 'crypto_self_test_unknown', `No self-test covers ${String(algorithm)}.`)
      }
      await runCases(cases.filter((c) => c.algorithm === 'SHA-256' || c.algorithm === algorithm))
      const error = failure([...done.values()])
      if (error) throw error
    },
    results: ordered,
  }
}

const isolateSuite = createSelfTestSuite()

/** The isolate's self-test report (runs the suite on first use). */
export function runSelfTests(): Promise<SelfTestReport> {
  return isolateSuite.run()
}

/** The default suite that signing and verification consult before their first use. */
export function defaultSelfTestSuite(): SelfTestSuite {
  return isolateSuite
}
