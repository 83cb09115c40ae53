/**
 * ML-DSA (FIPS 204) and ML-KEM (FIPS 203) for the whole product, on the runtime's own
 * implementation when it has one and on @noble/post-quantum when it does not.
 *
 * Why two: workerd's WebCrypto computes ML-DSA-44/65/87 and ML-KEM-768/1024 in BoringSSL behind the
 * `webcrypto_modern_algorithms` compatibility flag (every wrangler config sets it). Measured inside
 * workerd on the same machine in the same runs, ML-DSA-65 signs ~30× and verifies ~20-30× faster
 * natively than in JavaScript (bench/identity.ts, bench/crypto-timings.ts, docs/benchmarks.md). Without the flag (another runtime, Node's key-generating
 * scripts) the same calls run on noble. Both produce and accept the same bytes: FIPS 204 pure
 * ML-DSA with a context string (empty in JOSE), public keys from the 32-byte seed ξ, ML-KEM keys
 * from the 64-byte seed d‖z; `post-quantum.test.ts` keeps them interchangeable over many inputs.
 *
 * Signing is hedged on both (FIPS 204 Algorithm 2 with 32 fresh random bytes `rnd` per signature,
 * the standard's default): native WebCrypto offers no deterministic mode, and noble's default is the
 * same. Deterministic signing exists only in the noble self-test KATs.
 *
 * Detection: `SubtleCrypto.supports(operation, algorithm)` (the WICG modern-algorithms API, present
 * only with the flag), asked once per algorithm per isolate and remembered as a plain boolean.
 * Whatever it says, the self-tests (self-test.ts) test the implementation chosen here before its
 * first use, and fail closed if it computes a wrong answer.
 */
import { ml_dsa44, ml_dsa65, ml_dsa87 } from '@noble/post-quantum/ml-dsa.js'
import { ml_kem768, ml_kem1024 } from '@noble/post-quantum/ml-kem.js'
import { ownBytes } from './encoding'

export const ML_DSA_ALGORITHMS = ['ML-DSA-44', 'ML-DSA-65', 'ML-DSA-87'] as const
export type MlDsaAlgorithm = (typeof ML_DSA_ALGORITHMS)[number]

/** The ML-KEM parameter sets both implementations have (workerd has no ML-KEM-512). */
export const ML_KEM_ALGORITHMS = ['ML-KEM-768', 'ML-KEM-1024'] as const
export type MlKemAlgorithm = (typeof ML_KEM_ALGORITHMS)[number]

export type PostQuantumAlgorithm = MlDsaAlgorithm | MlKemAlgorithm

/** `webcrypto`: the runtime's WebCrypto (workerd: BoringSSL). `noble`: @noble/post-quantum (JavaScript). */
export type PostQuantumImplementation = 'webcrypto' | 'noble'

/** An ML-DSA private key expanded once; the seed itself stays with the caller. */
export interface MlDsaSigner {
  readonly publicKey: Uint8Array
  /** A hedged FIPS 204 signature; `context` at most 255 bytes (empty by default, as JOSE uses). */
  sign(message: Uint8Array, context?: Uint8Array): Promise<Uint8Array>
}

/** An ML-DSA public key ready to verify; false for any signature that is not valid, never a throw. */
export interface MlDsaVerifier {
  verify(message: Uint8Array, signature: Uint8Array, context?: Uint8Array): Promise<boolean>
}

export interface MlDsaImplementation {
  readonly name: PostQuantumImplementation
  /** FIPS 204 ML-DSA.KeyGen_internal from the 32-byte seed ξ. */
  signerFromSeed(alg: MlDsaAlgorithm, seed: Uint8Array): Promise<MlDsaSigner>
  /** Throws on a public key of the wrong length or encoding. */
  verifierFor(alg: MlDsaAlgorithm, publicKey: Uint8Array): Promise<MlDsaVerifier>
}

export interface MlKemEncapsulation {
  ciphertext: Uint8Array
  sharedSecret: Uint8Array
}

/** An ML-KEM decapsulation key expanded once from its seed. */
export interface MlKemDecapsulator {
  readonly encapsulationKey: Uint8Array
  /** FIPS 203 ML-KEM.Decaps: a modified ciphertext yields the implicit-rejection key, not an error. */
  decapsulate(ciphertext: Uint8Array): Promise<Uint8Array>
}

export interface MlKemImplementation {
  readonly name: PostQuantumImplementation
  /** FIPS 203 ML-KEM.KeyGen_internal from the 64-byte seed d‖z. */
  decapsulatorFromSeed(alg: MlKemAlgorithm, seed: Uint8Array): Promise<MlKemDecapsulator>
  /** Throws on an encapsulation key that fails FIPS 203's modulus check. */
  encapsulate(alg: MlKemAlgorithm, encapsulationKey: Uint8Array): Promise<MlKemEncapsulation>
}

// ---------------------------------------------------------------------------------------------
// @noble/post-quantum

const NOBLE_DSA = { 'ML-DSA-44': ml_dsa44, 'ML-DSA-65': ml_dsa65, 'ML-DSA-87': ml_dsa87 } as const
const NOBLE_KEM = { 'ML-KEM-768': ml_kem768, 'ML-KEM-1024': ml_kem1024 } as const
const EMPTY = new Uint8Array(0)

export const NOBLE_ML_DSA: MlDsaImplementation = {
  name: 'noble',
  async signerFromSeed(alg, seed) {
    const { publicKey, secretKey } = NOBLE_DSA[alg].keygen(Uint8Array.from(seed))
    return {
      publicKey,
      // noble's default: hedged, rnd from crypto.getRandomValues.
      sign: async (message, context = EMPTY) => NOBLE_DSA[alg].sign(message, secretKey, { context }),
    }
  },
  async verifierFor(alg, publicKey) {
    const expected = NOBLE_DSA[alg].lengths.publicKey
    if (publicKey.length !== expected) {
      throw new RangeError(`${alg} public key must be ${expected} bytes (got ${publicKey.length})`)
    }
    const key = Uint8Array.from(publicKey)
    return {
      async verify(message, signature, context = EMPTY) {
        try {
          return NOBLE_DSA[alg].verify(signature, message, key, { context })
        } catch {
          return false
        }
      },
    }
  },
}

export const NOBLE_ML_KEM: MlKemImplementation = {
  name: 'noble',
  async decapsulatorFromSeed(alg, seed) {
    const { publicKey, secretKey } = NOBLE_KEM[alg].keygen(Uint8Array.from(seed))
    return {
      encapsulationKey: publicKey,
      decapsulate: async (ciphertext) => NOBLE_KEM[alg].decapsulate(ciphertext, secretKey),
    }
  },
  async encapsulate(alg, encapsulationKey) {
    const { cipherText, sharedSecret } = NOBLE_KEM[alg].encapsulate(encapsulationKey)
    return { ciphertext: cipherText, sharedSecret }
  },
}

// ---------------------------------------------------------------------------------------------
// WebCrypto (workerd with webcrypto_modern_algorithms)

/** The WICG modern-algorithms additions to SubtleCrypto, which @cloudflare/workers-types does not type yet. */
interface ModernSubtleCrypto {
  importKey(
    format: 'raw-seed' | 'raw-public',
    keyData: BufferSource,
    algorithm: { name: string },
    extractable: boolean,
    usages: string[],
  ): Promise<CryptoKey>
  getPublicKey(key: CryptoKey, usages: string[]): Promise<CryptoKey>
  exportKey(format: 'raw-public', key: CryptoKey): Promise<ArrayBuffer>
  sign(
    algorithm: { name: string; context?: BufferSource },
    key: CryptoKey,
    data: BufferSource,
  ): Promise<ArrayBuffer>
  verify(
    algorithm: { name: string; context?: BufferSource },
    key: CryptoKey,
    signature: BufferSource,
    data: BufferSource,
  ): Promise<boolean>
  encapsulateBits(
    algorithm: { name: string },
    key: CryptoKey,
  ): Promise<{ sharedKey: ArrayBuffer; ciphertext: ArrayBuffer }>
  decapsulateBits(algorithm: { name: string }, key: CryptoKey, ciphertext: BufferSource): Promise<ArrayBuffer>
}

const subtle = () => crypto.subtle as unknown as ModernSubtleCrypto

/** Only a non-empty context is passed: the empty one is WebCrypto's default, as it is FIPS 204's. */
const dsaParams = (name: string, context?: Uint8Array) =>
  context && context.length > 0 ? { name, context: ownBytes(context) } : { name }

export const WEBCRYPTO_ML_DSA: MlDsaImplementation = {
  name: 'webcrypto',
  async signerFromSeed(alg, seed) {
    const privateKey = await subtle().importKey('raw-seed', ownBytes(seed), { name: alg }, false, ['sign'])
    const publicKey = await subtle().getPublicKey(privateKey, ['verify'])
    return {
      publicKey: new Uint8Array(await subtle().exportKey('raw-public', publicKey)),
      sign: async (message, context) =>
        new Uint8Array(await subtle().sign(dsaParams(alg, context), privateKey, ownBytes(message))),
    }
  },
  async verifierFor(alg, publicKey) {
    const key = await subtle().importKey('raw-public', ownBytes(publicKey), { name: alg }, false, ['verify'])
    return {
      async verify(message, signature, context) {
        try {
          return await subtle().verify(dsaParams(alg, context), key, ownBytes(signature), ownBytes(message))
        } catch {
          return false
        }
      },
    }
  },
}

export const WEBCRYPTO_ML_KEM: MlKemImplementation = {
  name: 'webcrypto',
  async decapsulatorFromSeed(alg, seed) {
    const privateKey = await subtle().importKey('raw-seed', ownBytes(seed), { name: alg }, false, [
      'decapsulateBits',
    ])
    const publicKey = await subtle().getPublicKey(privateKey, ['encapsulateBits'])
    return {
      encapsulationKey: new Uint8Array(await subtle().exportKey('raw-public', publicKey)),
      decapsulate: async (ciphertext) =>
        new Uint8Array(await subtle().decapsulateBits({ name: alg }, privateKey, ownBytes(ciphertext))),
    }
  },
  async encapsulate(alg, encapsulationKey) {
    const key = await subtle().importKey('raw-public', ownBytes(encapsulationKey), { name: alg }, false, [
      'encapsulateBits',
    ])
    const { sharedKey, ciphertext } = await subtle().encapsulateBits({ name: alg }, key)
    return { ciphertext: new Uint8Array(ciphertext), sharedSecret: new Uint8Array(sharedKey) }
  },
}

// ---------------------------------------------------------------------------------------------
// Selection

const OPERATIONS: Readonly<Record<'dsa' | 'kem', readonly string[]>> = {
  dsa: ['importKey', 'getPublicKey', 'sign', 'verify'],
  kem: ['importKey', 'getPublicKey', 'encapsulateBits', 'decapsulateBits'],
}

const nativeSupport = new Map<PostQuantumAlgorithm, boolean>()

/** Whether this runtime's WebCrypto computes `alg` (asked once per isolate). */
export function hasNativeSupport(alg: PostQuantumAlgorithm): boolean {
  let known = nativeSupport.get(alg)
  if (known === undefined) {
    const api = (globalThis as { SubtleCrypto?: { supports?: (op: string, alg: string) => unknown } })
      .SubtleCrypto
    const operations = OPERATIONS[alg.startsWith('ML-DSA') ? 'dsa' : 'kem']
    known =
      typeof api?.supports === 'function' &&
      operations.every((op) => {
        try {
          return api.supports?.(op, alg) === true
        } catch {
          return false
        }
      })
    nativeSupport.set(alg, known)
  }
  return known
}

/** Which implementation computes `alg` in this isolate. */
export function postQuantumImplementation(alg: PostQuantumAlgorithm): PostQuantumImplementation {
  return hasNativeSupport(alg) ? 'webcrypto' : 'noble'
}

export function mlDsaImplementation(name: PostQuantumImplementation): MlDsaImplementation {
  return name === 'webcrypto' ? WEBCRYPTO_ML_DSA : NOBLE_ML_DSA
}

export function mlKemImplementation(name: PostQuantumImplementation): MlKemImplementation {
  return name === 'webcrypto' ? WEBCRYPTO_ML_KEM : NOBLE_ML_KEM
}

/** The ML-DSA implementation that computes `alg` in this isolate. */
export function mlDsaFor(alg: MlDsaAlgorithm): MlDsaImplementation {
  return mlDsaImplementation(postQuantumImplementation(alg))
}

/** The ML-KEM implementation that computes `alg` in this isolate. */
export function mlKemFor(alg: MlKemAlgorithm): MlKemImplementation {
  return mlKemImplementation(postQuantumImplementation(alg))
}
