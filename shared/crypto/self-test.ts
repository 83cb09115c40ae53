/**
 * Self-tests in the FIPS 140-3 style: cryptographic algorithm self-tests (known-answer tests,
 * KATs) for every algorithm the crypto module offers, plus the ML-KEM implicit-rejection check.
 * Pairwise consistency tests on key generation live in jwk.ts.
 *
 * Which implementation: each post-quantum test runs against the implementation the isolate uses
 * for that algorithm (post-quantum.ts): the runtime's WebCrypto where it has ML-DSA / ML-KEM, else
 * @noble/post-quantum. Every result names it (`implementation`). The two differ in what can be
 * known in advance:
 * - noble: keyGen (public and expanded secret key), deterministic sigGen, sigVer; ML-KEM keyGen,
 *   encapsulation with a fixed m, decapsulation of an ACVP ciphertext.
 * - WebCrypto: keys come only from seeds and never show their expanded form, signing is hedged
 *   only and encapsulation draws its own m. So: keyGen KATs on the public keys, the sigVer KAT, and
 *   for signing and encapsulation a check by the other half (`sign_verify`, `encaps_decaps`): sign
 *   the ACVP message under the keyGen key and verify it; encapsulate to the keyGen key and
 *   decapsulate. Decapsulation is checked by the implicit-rejection test against J(z‖c).
 *
 * When they run: FIPS 140-3 (IG 10.3.A) lets a module run each algorithm's self-test before the
 * first use of that algorithm instead of all of them at power-on. `assertAlgorithm('ML-DSA-65')`
 * does exactly that: it runs the ML-DSA-65 tests (and the SHA-256 KAT every group depends on) once
 * per isolate, then lets the operation proceed. An isolate that only verifies ML-DSA-65 tokens
 * never pays for SLH-DSA or Argon2id. `run()` runs everything (for the attestation report).
 *
 * Error state: once any test has failed, every `assert*` throws AppError 503
 * `crypto_self_test_failed` for every algorithm until the isolate is replaced (fail closed).
 *
 * Timing note: workerd only advances its clock on I/O, so in production `duration_ms` is usually 0
 * (an ML-DSA group costs a few milliseconds natively and 10-40 ms on noble; the whole suite,
 * ~100 ms warm, is dominated by Argon2id and SLH-DSA keygen either way: docs/crypto.md).
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
  type MlDsaAlgorithm,
  mlDsaImplementation,
  mlKemImplementation,
  type PostQuantumAlgorithm,
  type PostQuantumImplementation,
  postQuantumImplementation,
} from './post-quantum'
import {
  type MlDsaKeyGenVector,
  type MlDsaSigGenVector,
  type MlDsaSigVerVector,
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

/**
 * `known_answer`: output compared with a published answer. `implicit_rejection`: FIPS 203's
 * rejection key recomputed independently. `sign_verify` / `encaps_decaps`: a randomized operation
 * (hedged signing, encapsulation) whose output no vector can predict, checked by its inverse.
 */
export type SelfTestKind = 'known_answer' | 'implicit_rejection' | 'sign_verify' | 'encaps_decaps'

/** What computed a test's answers: a library, or the runtime's WebCrypto. */
export type SelfTestImplementation =
  | 'WebCrypto'
  | '@noble/post-quantum'
  | '@noble/hashes'
  | '@noble/hashes, WebCrypto'

export interface SelfTestResult {
  name: string
  algorithm: string
  kind: SelfTestKind
  implementation: SelfTestImplementation
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

export interface SelfTestOptions {
  /** Which implementation computes each post-quantum algorithm; by default the isolate's (post-quantum.ts). */
  postQuantum?: (algorithm: PostQuantumAlgorithm) => PostQuantumImplementation
}

interface SelfTestCase {
  name: string
  algorithm: SelfTestedAlgorithm
  kind: SelfTestKind
  implementation: SelfTestImplementation
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

const NOBLE_ML_DSA_KEYS = { 'ML-DSA-44': ml_dsa44, 'ML-DSA-65': ml_dsa65, 'ML-DSA-87': ml_dsa87 } as const
const LIBRARY: Readonly<Record<PostQuantumImplementation, SelfTestImplementation>> = {
  webcrypto: 'WebCrypto',
  noble: '@noble/post-quantum',
}

interface MlDsaVectors {
  keyGen: MlDsaKeyGenVector
  sigGen: MlDsaSigGenVector
  sigVer: MlDsaSigVerVector
}

/**
 * keyGen, signing and verify tests for one ML-DSA parameter set on one implementation. The verify
 * KAT is the same on both: an ACVP sigVer signature must verify, and with one bit flipped must not.
 */
function mlDsaCases(
  algorithm: MlDsaAlgorithm,
  v: MlDsaVectors,
  implementation: PostQuantumImplementation,
): SelfTestCase[] {
  const impl = mlDsaImplementation(implementation)
  const prefix = algorithm.toLowerCase().replaceAll('-', '_')
  const common = { algorithm, implementation: LIBRARY[implementation] } as const
  const verifyKat: SelfTestCase = {
    ...common,
    name: `${prefix}_verify_kat`,
    kind: 'known_answer',
    async run() {
      const verifier = await impl.verifierFor(algorithm, hexToBytes(v.sigVer.publicKey))
      const message = hexToBytes(v.sigVer.message)
      const context = hexToBytes(v.sigVer.context)
      const signature = hexToBytes(v.sigVer.signature)
      if (!(await verifier.verify(message, signature, context)))
        return 'the known-answer signature did not verify'
      if (await verifier.verify(message, flipFirstBit(signature), context)) {
        return 'a signature with one bit flipped verified'
      }
      return null
    },
  }
  if (implementation === 'webcrypto') {
    return [
      {
        ...common,
        name: `${prefix}_keygen_kat`,
        kind: 'known_answer',
        async run() {
          // WebCrypto keeps the expanded secret key inside the CryptoKey: only the public key can be compared.
          const signer = await impl.signerFromSeed(algorithm, hexToBytes(v.keyGen.seed))
          return expectHex('public key', sha256Hex(signer.publicKey), v.keyGen.publicKeySha256)
        },
      },
      {
        ...common,
        name: `${prefix}_sign_verify`,
        kind: 'sign_verify',
        async run() {
          const signer = await impl.signerFromSeed(algorithm, hexToBytes(v.keyGen.seed))
          const verifier = await impl.verifierFor(algorithm, signer.publicKey)
          const message = hexToBytes(v.sigGen.message)
          const context = hexToBytes(v.sigGen.context)
          const signature = await signer.sign(message, context)
          if (!(await verifier.verify(message, signature, context))) return 'a fresh signature did not verify'
          if (await verifier.verify(message, signature)) return 'a signature verified under another context'
          return null
        },
      },
      verifyKat,
    ]
  }
  const noble = NOBLE_ML_DSA_KEYS[algorithm]
  return [
    {
      ...common,
      name: `${prefix}_keygen_kat`,
      kind: 'known_answer',
      run() {
        const keys = noble.keygen(hexToBytes(v.keyGen.seed))
        return (
          expectHex('public key', sha256Hex(keys.publicKey), v.keyGen.publicKeySha256) ??
          expectHex('secret key', sha256Hex(keys.secretKey), v.keyGen.secretKeySha256)
        )
      },
    },
    {
      ...common,
      name: `${prefix}_sign_kat`,
      kind: 'known_answer',
      run() {
        const produced = noble.sign(hexToBytes(v.sigGen.message), hexToBytes(v.sigGen.secretKey), {
          context: hexToBytes(v.sigGen.context),
          extraEntropy: false,
        })
        return expectHex('deterministic signature', sha256Hex(produced), v.sigGen.signatureSha256)
      },
    },
    verifyKat,
  ]
}

/** The ML-KEM-768 tests on one implementation (see the header for why they differ). */
function mlKem768Cases(v: SelfTestVectors, implementation: PostQuantumImplementation): SelfTestCase[] {
  const impl = mlKemImplementation(implementation)
  const common = { algorithm: 'ML-KEM-768', implementation: LIBRARY[implementation] } as const
  const seed = () => hexToBytes(v.mlKem768KeyGen.d + v.mlKem768KeyGen.z)
  const implicitRejection: SelfTestCase = {
    ...common,
    name: 'ml_kem_768_implicit_rejection',
    kind: 'implicit_rejection',
    async run() {
      // Keys from the keygen KAT; z is the implicit-rejection secret (FIPS 203 Algorithm 16).
      const z = hexToBytes(v.mlKem768KeyGen.z)
      const key = await impl.decapsulatorFromSeed('ML-KEM-768', seed())
      const { ciphertext, sharedSecret } = await impl.encapsulate('ML-KEM-768', key.encapsulationKey)
      if (!constantTimeEqual(await key.decapsulate(ciphertext), sharedSecret)) {
        return 'decapsulating a genuine ciphertext did not return the encapsulated key'
      }
      const tampered = flipFirstBit(ciphertext)
      const rejected = await key.decapsulate(tampered)
      // FIPS 203 Algorithm 18: K̄ = J(z || c) = SHAKE256(z || c, 32), computed here independently.
      const joined = new Uint8Array(z.length + tampered.length)
      joined.set(z)
      joined.set(tampered, z.length)
      const expected = shake256(joined, { dkLen: 32 })
      if (constantTimeEqual(rejected, sharedSecret))
        return 'a tampered ciphertext decapsulated to the real key'
      if (!constantTimeEqual(rejected, expected)) {
        return 'a tampered ciphertext did not yield the rejection key J(z || c)'
      }
      return null
    },
  }
  if (implementation === 'webcrypto') {
    return [
      {
        ...common,
        name: 'ml_kem_768_keygen_kat',
        kind: 'known_answer',
        async run() {
          // WebCrypto keeps the decapsulation key inside the CryptoKey: only the encapsulation key can be compared.
          const key = await impl.decapsulatorFromSeed('ML-KEM-768', seed())
          return expectHex(
            'encapsulation key',
            sha256Hex(key.encapsulationKey),
            v.mlKem768KeyGen.encapsulationKeySha256,
          )
        },
      },
      {
        ...common,
        name: 'ml_kem_768_encaps_decaps',
        kind: 'encaps_decaps',
        async run() {
          const key = await impl.decapsulatorFromSeed('ML-KEM-768', seed())
          const { ciphertext, sharedSecret } = await impl.encapsulate('ML-KEM-768', key.encapsulationKey)
          if (ciphertext.length !== 1088 || sharedSecret.length !== 32) {
            return `encapsulation returned ${ciphertext.length}-byte ciphertext and ${sharedSecret.length}-byte key`
          }
          return constantTimeEqual(await key.decapsulate(ciphertext), sharedSecret)
            ? null
            : 'decapsulation did not return the encapsulated key'
        },
      },
      implicitRejection,
    ]
  }
  return [
    {
      ...common,
      name: 'ml_kem_768_keygen_kat',
      kind: 'known_answer',
      run() {
        const { publicKey, secretKey } = ml_kem768.keygen(seed())
        return (
          expectHex('encapsulation key', sha256Hex(publicKey), v.mlKem768KeyGen.encapsulationKeySha256) ??
          expectHex('decapsulation key', sha256Hex(secretKey), v.mlKem768KeyGen.decapsulationKeySha256)
        )
      },
    },
    {
      ...common,
      name: 'ml_kem_768_encaps_kat',
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
      ...common,
      name: 'ml_kem_768_decaps_kat',
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
    implicitRejection,
  ]
}

function buildCases(
  v: SelfTestVectors,
  postQuantum: (algorithm: PostQuantumAlgorithm) => PostQuantumImplementation,
): SelfTestCase[] {
  const dsa = (algorithm: MlDsaAlgorithm, vectors: MlDsaVectors) =>
    mlDsaCases(algorithm, vectors, postQuantum(algorithm))
  return [
    {
      name: 'sha256_kat',
      algorithm: 'SHA-256',
      kind: 'known_answer',
      implementation: '@noble/hashes, WebCrypto',
      async run() {
        const message = hexToBytes(v.sha256.message)
        const webCrypto = bytesToHex(new Uint8Array(await crypto.subtle.digest('SHA-256', message)))
        return (
          expectHex('noble SHA-256', sha256Hex(message), v.sha256.digest) ??
          expectHex('WebCrypto SHA-256', webCrypto, v.sha256.digest)
        )
      },
    },
    ...dsa('ML-DSA-44', { keyGen: v.mlDsa44KeyGen, sigGen: v.mlDsa44SigGen, sigVer: v.mlDsa44SigVer }),
    ...dsa('ML-DSA-65', { keyGen: v.mlDsa65KeyGen, sigGen: v.mlDsa65SigGen, sigVer: v.mlDsa65SigVer }),
    ...dsa('ML-DSA-87', { keyGen: v.mlDsa87KeyGen, sigGen: v.mlDsa87SigGen, sigVer: v.mlDsa87SigVer }),
    ...mlKem768Cases(v, postQuantum('ML-KEM-768')),
    {
      name: 'slh_dsa_shake_128f_keygen_kat',
      algorithm: 'SLH-DSA-SHAKE-128f',
      kind: 'known_answer',
      implementation: '@noble/post-quantum',
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
      implementation: 'WebCrypto',
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
      implementation: '@noble/hashes',
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
    implementation: testCase.implementation,
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

/**
 * A suite over the given vectors; tests inject corrupted vectors to exercise the failure path, and
 * `options.postQuantum` to test an implementation other than the isolate's.
 */
export function createSelfTestSuite(
  vectors: SelfTestVectors = SELF_TEST_VECTORS,
  options: SelfTestOptions = {},
): SelfTestSuite {
  // Built on first use, not at module load: which implementation the isolate has is asked then.
  let built: SelfTestCase[] | undefined
  const cases = () => {
    built ??= buildCases(vectors, options.postQuantum ?? postQuantumImplementation)
    return built
  }
  // Settled results are cached, never pending promises: workerd must not resolve one request's
  // promise from another request's context. Two concurrent first calls may both run a test; the
  // first result recorded wins, and both are the same computation.
  const done = new Map<string, SelfTestResult>()
  const ordered = () => cases().flatMap((c) => done.get(c.name) ?? [])
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
    await runCases(cases())
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
      await runCases(cases().filter((c) => c.algorithm === 'SHA-256' || c.algorithm === algorithm))
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
