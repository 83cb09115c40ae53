/**
 * A differential test: the runtime's WebCrypto and @noble/post-quantum must be interchangeable,
 * byte for byte where the standards fix the bytes (keys from seeds, decapsulated secrets) and by
 * verification where they do not (hedged signatures, encapsulations), over many random inputs. A key
 * or token made on one must work on the other, so an isolate without the flag, or a key generated
 * by the Node scripts (noble), meets the same signatures. The unit-noble project
 * (post-quantum.noble.test.ts) checks the fallback on a runtime without the flag.
 */
import { describe, expect, it } from 'vitest'
import { bytesToHex } from './encoding'
import {
  hasNativeSupport,
  ML_DSA_ALGORITHMS,
  ML_KEM_ALGORITHMS,
  mlDsaFor,
  mlKemFor,
  NOBLE_ML_DSA,
  NOBLE_ML_KEM,
  postQuantumImplementation,
  WEBCRYPTO_ML_DSA,
  WEBCRYPTO_ML_KEM,
} from './post-quantum'

const random = (length: number) => crypto.getRandomValues(new Uint8Array(length))
const randomInt = (below: number) => (crypto.getRandomValues(new Uint32Array(1))[0] as number) % below
const flipBit = (bytes: Uint8Array, bit: number) => {
  const copy = Uint8Array.from(bytes)
  copy[bit >> 3] = (copy[bit >> 3] as number) ^ (1 << (bit & 7))
  return copy
}

describe('which implementation runs', () => {
  it('is WebCrypto for every ML-DSA and ML-KEM parameter set on workerd with webcrypto_modern_algorithms', () => {
    for (const alg of [...ML_DSA_ALGORITHMS, ...ML_KEM_ALGORITHMS]) {
      expect(hasNativeSupport(alg), alg).toBe(true)
      expect(postQuantumImplementation(alg), alg).toBe('webcrypto')
    }
    expect(mlDsaFor('ML-DSA-65')).toBe(WEBCRYPTO_ML_DSA)
    expect(mlKemFor('ML-KEM-768')).toBe(WEBCRYPTO_ML_KEM)
  })
})

describe.each(ML_DSA_ALGORITHMS)('%s: WebCrypto and noble are interchangeable', (alg) => {
  it('derive the same public key from the same seed ξ (48 random seeds)', async () => {
    for (let i = 0; i < 48; i++) {
      const seed = random(32)
      const native = await WEBCRYPTO_ML_DSA.signerFromSeed(alg, seed)
      const noble = await NOBLE_ML_DSA.signerFromSeed(alg, seed)
      expect(bytesToHex(native.publicKey), bytesToHex(seed)).toBe(bytesToHex(noble.publicKey))
    }
  })

  it("each verifies the other's signatures, with and without a context, and both refuse altered ones", async () => {
    for (let round = 0; round < 6; round++) {
      const seed = random(32)
      const message = random(randomInt(2048))
      const context = round % 2 === 0 ? new Uint8Array(0) : random(1 + randomInt(255))
      const signers = [
        await WEBCRYPTO_ML_DSA.signerFromSeed(alg, seed),
        await NOBLE_ML_DSA.signerFromSeed(alg, seed),
      ]
      const verifiers = [
        await WEBCRYPTO_ML_DSA.verifierFor(alg, signers[0]!.publicKey),
        await NOBLE_ML_DSA.verifierFor(alg, signers[1]!.publicKey),
      ]
      for (const signer of signers) {
        const signature = await signer.sign(message, context)
        const otherContext = context.length === 0 ? random(8) : new Uint8Array(0)
        const otherMessage = flipBit(message.length > 0 ? message : new Uint8Array(1), 0)
        const altered = flipBit(signature, randomInt(signature.length * 8))
        for (const verifier of verifiers) {
          expect(await verifier.verify(message, signature, context)).toBe(true)
          expect(await verifier.verify(message, altered, context)).toBe(false)
          expect(await verifier.verify(message, signature, otherContext)).toBe(false)
          expect(await verifier.verify(otherMessage, signature, context)).toBe(false)
        }
      }
    }
  })

  it('both sign hedged (FIPS 204 default): two signatures of one message differ, and both verify', async () => {
    const seed = random(32)
    const message = random(64)
    for (const impl of [WEBCRYPTO_ML_DSA, NOBLE_ML_DSA]) {
      const signer = await impl.signerFromSeed(alg, seed)
      const [a, b] = [await signer.sign(message), await signer.sign(message)]
      expect(bytesToHex(a), impl.name).not.toBe(bytesToHex(b))
      const verifier = await NOBLE_ML_DSA.verifierFor(alg, signer.publicKey)
      expect([await verifier.verify(message, a), await verifier.verify(message, b)]).toEqual([true, true])
    }
  })

  it('verify answers false, never throws, for a signature of the wrong length or a context over 255 bytes', async () => {
    const signer = await WEBCRYPTO_ML_DSA.signerFromSeed(alg, random(32))
    const message = random(32)
    const signature = await signer.sign(message)
    for (const impl of [WEBCRYPTO_ML_DSA, NOBLE_ML_DSA]) {
      const verifier = await impl.verifierFor(alg, signer.publicKey)
      expect(await verifier.verify(message, signature.subarray(1)), impl.name).toBe(false)
      expect(await verifier.verify(message, new Uint8Array(0)), impl.name).toBe(false)
      expect(await verifier.verify(message, signature, random(256)), impl.name).toBe(false)
    }
  })

  it('both refuse a public key of the wrong length', async () => {
    const { publicKey } = await NOBLE_ML_DSA.signerFromSeed(alg, random(32))
    for (const impl of [WEBCRYPTO_ML_DSA, NOBLE_ML_DSA]) {
      await expect(impl.verifierFor(alg, publicKey.subarray(1)), impl.name).rejects.toThrow()
    }
  })
})

describe.each(ML_KEM_ALGORITHMS)('%s: WebCrypto and noble are interchangeable', (alg) => {
  it('derive the same encapsulation key from the same seed d‖z (24 random seeds)', async () => {
    for (let i = 0; i < 24; i++) {
      const seed = random(64)
      const native = await WEBCRYPTO_ML_KEM.decapsulatorFromSeed(alg, seed)
      const noble = await NOBLE_ML_KEM.decapsulatorFromSeed(alg, seed)
      expect(bytesToHex(native.encapsulationKey), bytesToHex(seed)).toBe(bytesToHex(noble.encapsulationKey))
    }
  })

  it("each decapsulates the other's encapsulations to the same secret, and rejects altered ciphertexts alike", async () => {
    for (let round = 0; round < 6; round++) {
      const seed = random(64)
      const keys = [
        await WEBCRYPTO_ML_KEM.decapsulatorFromSeed(alg, seed),
        await NOBLE_ML_KEM.decapsulatorFromSeed(alg, seed),
      ]
      for (const impl of [WEBCRYPTO_ML_KEM, NOBLE_ML_KEM]) {
        const { ciphertext, sharedSecret } = await impl.encapsulate(alg, keys[0]!.encapsulationKey)
        expect(sharedSecret.length).toBe(32)
        for (const key of keys)
          expect(bytesToHex(await key.decapsulate(ciphertext))).toBe(bytesToHex(sharedSecret))
        // Implicit rejection (FIPS 203 §6.3) is deterministic: J(z‖c), the same on both.
        const altered = flipBit(ciphertext, randomInt(ciphertext.length * 8))
        const [a, b] = [await keys[0]!.decapsulate(altered), await keys[1]!.decapsulate(altered)]
        expect(bytesToHex(a)).toBe(bytesToHex(b))
        expect(bytesToHex(a)).not.toBe(bytesToHex(sharedSecret))
      }
    }
  })
})
