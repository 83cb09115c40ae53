/**
 * Conformance with NIST ACVP vectors (a subset, see test/fixtures/acvp/README.md) of both
 * post-quantum implementations (post-quantum.ts): @noble/post-quantum on every vector, and the
 * runtime's WebCrypto (workerd, webcrypto_modern_algorithms) on every vector its API can take.
 * WebCrypto imports private keys only as seeds, signs only hedged and draws its own encapsulation
 * randomness, so the vectors that give an expanded secret key, a deterministic signature or a fixed
 * m are run against it in the form it allows: its signature of the ACVP message verified by noble,
 * its decapsulation of the ACVP m's ciphertext (encapsulated by the ACVP-checked noble). These
 * results back the public conformance page; the self-tests reuse a few of the same cases.
 */

import { shake256 } from '@noble/hashes/sha3.js'
import { ml_dsa44, ml_dsa65, ml_dsa87 } from '@noble/post-quantum/ml-dsa.js'
import { ml_kem512, ml_kem768, ml_kem1024 } from '@noble/post-quantum/ml-kem.js'
import { slh_dsa_sha2_128f, slh_dsa_shake_128f, slh_dsa_shake_256f } from '@noble/post-quantum/slh-dsa.js'
import { describe, expect, it } from 'vitest'
import mlDsaKeyGen from '../../test/fixtures/acvp/ml-dsa-keygen.json'
import mlDsaSigGen from '../../test/fixtures/acvp/ml-dsa-siggen.json'
import mlDsaSigVer from '../../test/fixtures/acvp/ml-dsa-sigver.json'
import mlKemEncapDecap from '../../test/fixtures/acvp/ml-kem-encapdecap.json'
import mlKemKeyGen from '../../test/fixtures/acvp/ml-kem-keygen.json'
import slhDsaKeyGen from '../../test/fixtures/acvp/slh-dsa-keygen.json'
import { bytesToHex, hexToBytes } from './encoding'
import {
  hasNativeSupport,
  type MlDsaAlgorithm,
  type MlKemAlgorithm,
  WEBCRYPTO_ML_DSA,
  WEBCRYPTO_ML_KEM,
} from './post-quantum'

type AcvpTest = { tcId: number } & Record<string, string | number | boolean>
type AcvpGroup = { tgId: number; parameterSet: string; tests: AcvpTest[] } & Record<string, unknown>
type AcvpFile = { algorithm: string; mode: string; revision: string; testGroups: AcvpGroup[] }

const ML_DSA = { 'ML-DSA-44': ml_dsa44, 'ML-DSA-65': ml_dsa65, 'ML-DSA-87': ml_dsa87 } as const
const ML_KEM = { 'ML-KEM-512': ml_kem512, 'ML-KEM-768': ml_kem768, 'ML-KEM-1024': ml_kem1024 } as const
const SLH_DSA = {
  'SLH-DSA-SHA2-128f': slh_dsa_sha2_128f,
  'SLH-DSA-SHAKE-128f': slh_dsa_shake_128f,
  'SLH-DSA-SHAKE-256f': slh_dsa_shake_256f,
} as const

function pick<T>(table: Record<string, T>, name: string): T {
  const found = table[name]
  if (!found) throw new Error(`no implementation mapped for ${name}`)
  return found
}

const str = (test: AcvpTest, field: string): string => {
  const value = test[field]
  if (typeof value !== 'string') throw new Error(`tcId ${test.tcId} has no string field ${field}`)
  return value
}
const bytes = (test: AcvpTest, field: string) => hexToBytes(str(test, field))
const hex = (value: Uint8Array) => bytesToHex(value).toUpperCase()

/** Flattens a fixture into [label, group, test] rows for it.each. */
function cases(
  file: AcvpFile,
  filter: (group: AcvpGroup) => boolean = () => true,
): [string, AcvpGroup, AcvpTest][] {
  const rows = file.testGroups
    .filter(filter)
    .flatMap((group) =>
      group.tests.map((test): [string, AcvpGroup, AcvpTest] => [
        `${group.parameterSet} tcId ${test.tcId}`,
        group,
        test,
      ]),
    )
  if (rows.length === 0) throw new Error(`no ACVP cases selected from ${file.algorithm} ${file.mode}`)
  return rows
}

describe('FIPS 204 ML-DSA (ACVP)', () => {
  it.each(cases(mlDsaKeyGen as AcvpFile))('keyGen %s', (_, group, test) => {
    const { publicKey, secretKey } = pick(ML_DSA, group.parameterSet).keygen(bytes(test, 'seed'))
    expect(hex(publicKey)).toBe(str(test, 'pk'))
    expect(hex(secretKey)).toBe(str(test, 'sk'))
  })

  it.each(cases(mlDsaSigGen as AcvpFile, (g) => g.signatureInterface === 'external' && g.preHash === 'pure'))(
    'sigGen, external pure %s',
    (_, group, test) => {
      const extraEntropy = group.deterministic ? false : bytes(test, 'rnd')
      const signature = pick(ML_DSA, group.parameterSet).sign(bytes(test, 'message'), bytes(test, 'sk'), {
        context: bytes(test, 'context'),
        extraEntropy,
      })
      expect(hex(signature)).toBe(str(test, 'signature'))
    },
  )

  it.each(cases(mlDsaSigGen as AcvpFile, (g) => g.signatureInterface === 'internal'))(
    'sigGen, internal %s',
    (_, group, test) => {
      expect(group.externalMu).toBe(false)
      const signature = pick(ML_DSA, group.parameterSet).internal.sign(
        bytes(test, 'message'),
        bytes(test, 'sk'),
        {
          extraEntropy: group.deterministic ? false : bytes(test, 'rnd'),
        },
      )
      expect(hex(signature)).toBe(str(test, 'signature'))
    },
  )

  it.each(cases(mlDsaSigVer as AcvpFile))('sigVer %s', (_, group, test) => {
    const valid = pick(ML_DSA, group.parameterSet).verify(
      bytes(test, 'signature'),
      bytes(test, 'message'),
      bytes(test, 'pk'),
      {
        context: bytes(test, 'context'),
      },
    )
    expect(valid, String(test.reason)).toBe(test.testPassed)
  })

  it('the sigVer subset has both accepted and rejected signatures', () => {
    const outcomes = cases(mlDsaSigVer as AcvpFile).map(([, , t]) => t.testPassed)
    expect(outcomes).toContain(true)
    expect(outcomes).toContain(false)
  })
})

describe('FIPS 203 ML-KEM (ACVP)', () => {
  it.each(cases(mlKemKeyGen as AcvpFile))('keyGen %s', (_, group, test) => {
    const seed = hexToBytes(str(test, 'd') + str(test, 'z'))
    const { publicKey, secretKey } = pick(ML_KEM, group.parameterSet).keygen(seed)
    expect(hex(publicKey)).toBe(str(test, 'ek'))
    expect(hex(secretKey)).toBe(str(test, 'dk'))
  })

  it.each(cases(mlKemEncapDecap as AcvpFile, (g) => g.function === 'encapsulation'))(
    'encapsulation %s',
    (_, group, test) => {
      const { cipherText, sharedSecret } = pick(ML_KEM, group.parameterSet).encapsulate(
        bytes(test, 'ek'),
        bytes(test, 'm'),
      )
      expect(hex(cipherText)).toBe(str(test, 'c'))
      expect(hex(sharedSecret)).toBe(str(test, 'k'))
    },
  )

  it.each(cases(mlKemEncapDecap as AcvpFile, (g) => g.function === 'decapsulation'))(
    'decapsulation (valid and implicit rejection) %s',
    (_, group, test) => {
      const key = pick(ML_KEM, group.parameterSet).decapsulate(bytes(test, 'c'), bytes(test, 'dk'))
      expect(hex(key), String(test.reason)).toBe(str(test, 'k'))
    },
  )

  it('the decapsulation subset includes modified ciphertexts (implicit rejection)', () => {
    const reasons = cases(mlKemEncapDecap as AcvpFile, (g) => g.function === 'decapsulation').map(
      ([, , t]) => t.reason,
    )
    expect(reasons).toContain('modified ciphertext')
    expect(reasons).toContain('valid decapsulation')
  })

  it.each(cases(mlKemEncapDecap as AcvpFile, (g) => g.function === 'encapsulationKeyCheck'))(
    'encapsulation key check %s',
    (_, group, test) => {
      const kem = pick(ML_KEM, group.parameterSet)
      const attempt = () => kem.encapsulate(bytes(test, 'ek'), new Uint8Array(32))
      if (test.testPassed) expect(attempt).not.toThrow()
      else expect(attempt, String(test.reason)).toThrow(/modulus/)
    },
  )

  it.each(cases(mlKemEncapDecap as AcvpFile, (g) => g.function === 'decapsulationKeyCheck'))(
    'decapsulation key check %s',
    (_, group, test) => {
      const kem = pick(ML_KEM, group.parameterSet)
      const ciphertext = new Uint8Array(kem.lengths.cipherText ?? 0)
      const attempt = () => kem.decapsulate(ciphertext, bytes(test, 'dk'))
      if (test.testPassed) expect(attempt).not.toThrow()
      else expect(attempt, String(test.reason)).toThrow(/hash check/)
    },
  )
})

describe('FIPS 205 SLH-DSA (ACVP)', () => {
  it.each(cases(slhDsaKeyGen as AcvpFile))('keyGen %s', (_, group, test) => {
    const seed = hexToBytes(str(test, 'skSeed') + str(test, 'skPrf') + str(test, 'pkSeed'))
    const { publicKey, secretKey } = pick(SLH_DSA, group.parameterSet).keygen(seed)
    expect(hex(publicKey)).toBe(str(test, 'pk'))
    expect(hex(secretKey)).toBe(str(test, 'sk'))
  })
})

/** The ACVP keyGen case of a parameter set (one per set in the subset). */
function keyGenCase(file: AcvpFile, parameterSet: string): AcvpTest {
  const test = file.testGroups.find((g) => g.parameterSet === parameterSet)?.tests[0]
  if (!test) throw new Error(`no keyGen case for ${parameterSet}`)
  return test
}

describe('FIPS 204 ML-DSA (ACVP) on WebCrypto', () => {
  it.each(cases(mlDsaKeyGen as AcvpFile))(
    'keyGen %s: the public key from the seed',
    async (_, group, test) => {
      const signer = await WEBCRYPTO_ML_DSA.signerFromSeed(
        group.parameterSet as MlDsaAlgorithm,
        bytes(test, 'seed'),
      )
      expect(hex(signer.publicKey)).toBe(str(test, 'pk'))
    },
  )

  it.each(cases(mlDsaSigVer as AcvpFile))('sigVer %s', async (_, group, test) => {
    const alg = group.parameterSet as MlDsaAlgorithm
    const verifier = await WEBCRYPTO_ML_DSA.verifierFor(alg, bytes(test, 'pk'))
    const valid = await verifier.verify(
      bytes(test, 'message'),
      bytes(test, 'signature'),
      bytes(test, 'context'),
    )
    expect(valid, String(test.reason)).toBe(test.testPassed)
  })

  it.each(cases(mlDsaSigGen as AcvpFile, (g) => g.signatureInterface === 'external' && g.preHash === 'pure'))(
    'sigGen, external pure %s: its hedged signature of the message and context verifies under noble',
    async (_, group, test) => {
      const alg = group.parameterSet as MlDsaAlgorithm
      const key = keyGenCase(mlDsaKeyGen as AcvpFile, alg)
      const signer = await WEBCRYPTO_ML_DSA.signerFromSeed(alg, bytes(key, 'seed'))
      const message = bytes(test, 'message')
      const context = bytes(test, 'context')
      const signature = await signer.sign(message, context)
      const noble = pick(ML_DSA, alg)
      expect(signature.length).toBe(noble.lengths.signature)
      expect(noble.verify(signature, message, bytes(key, 'pk'), { context })).toBe(true)
      expect(noble.verify(signature, message, bytes(key, 'pk'))).toBe(context.length === 0)
    },
  )
})

describe('FIPS 203 ML-KEM (ACVP) on WebCrypto', () => {
  const native = (group: AcvpGroup) => hasNativeSupport(group.parameterSet as MlKemAlgorithm)

  it('has ML-KEM-768 and ML-KEM-1024, and no ML-KEM-512 (noble alone runs those vectors)', () => {
    const api = SubtleCrypto as unknown as { supports(op: string, alg: string): boolean }
    expect(api.supports('encapsulateBits', 'ML-KEM-512')).toBe(false)
    expect(mlKemKeyGen.testGroups.filter((g) => native(g as AcvpGroup)).map((g) => g.parameterSet)).toEqual([
      'ML-KEM-768',
      'ML-KEM-1024',
    ])
  })

  it.each(cases(mlKemKeyGen as AcvpFile, native))(
    'keyGen %s: the encapsulation key from d‖z',
    async (_, group, test) => {
      const key = await WEBCRYPTO_ML_KEM.decapsulatorFromSeed(
        group.parameterSet as MlKemAlgorithm,
        hexToBytes(str(test, 'd') + str(test, 'z')),
      )
      expect(hex(key.encapsulationKey)).toBe(str(test, 'ek'))
    },
  )

  it.each(cases(mlKemEncapDecap as AcvpFile, (g) => g.function === 'encapsulation' && native(g)))(
    'encapsulation %s: its m encapsulated to the keyGen key decapsulates here; ours decapsulates in noble',
    async (_, group, test) => {
      const alg = group.parameterSet as MlKemAlgorithm
      const kg = keyGenCase(mlKemKeyGen as AcvpFile, alg)
      const z = bytes(kg, 'z')
      const key = await WEBCRYPTO_ML_KEM.decapsulatorFromSeed(alg, hexToBytes(str(kg, 'd') + str(kg, 'z')))
      const noble = pick(ML_KEM, alg)
      const known = noble.encapsulate(bytes(kg, 'ek'), bytes(test, 'm'))
      expect(hex(await key.decapsulate(known.cipherText))).toBe(hex(known.sharedSecret))
      // A modified ciphertext yields J(z‖c) (FIPS 203 §6.3), computed here independently.
      const modified = Uint8Array.from(known.cipherText)
      modified[0] = (modified[0] as number) ^ 1
      const joined = new Uint8Array([...z, ...modified])
      expect(hex(await key.decapsulate(modified))).toBe(hex(shake256(joined, { dkLen: 32 })))
      const ours = await WEBCRYPTO_ML_KEM.encapsulate(alg, bytes(kg, 'ek'))
      expect(hex(noble.decapsulate(ours.ciphertext, bytes(kg, 'dk')))).toBe(hex(ours.sharedSecret))
    },
  )

  it.each(cases(mlKemEncapDecap as AcvpFile, (g) => g.function === 'encapsulationKeyCheck' && native(g)))(
    'encapsulation key check %s',
    async (_, group, test) => {
      const attempt = WEBCRYPTO_ML_KEM.encapsulate(group.parameterSet as MlKemAlgorithm, bytes(test, 'ek'))
      if (test.testPassed)
        await expect(attempt).resolves.toMatchObject({ sharedSecret: expect.any(Uint8Array) })
      else await expect(attempt, String(test.reason)).rejects.toThrow(/public key/)
    },
  )
})
