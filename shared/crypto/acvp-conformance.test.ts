/**
 * Conformance of @noble/post-quantum with NIST ACVP vectors (a subset, see test/fixtures/acvp/README.md).
 * These results back the public conformance page; the self-tests reuse a few of the same cases.
 */
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
