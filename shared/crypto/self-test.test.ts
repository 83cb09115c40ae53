import { sha256 } from '@noble/hashes/sha2.js'
import { describe, expect, it } from 'vitest'
import mlDsaKeyGen from '../../test/fixtures/acvp/ml-dsa-keygen.json'
import mlDsaSigGen from '../../test/fixtures/acvp/ml-dsa-siggen.json'
import mlDsaSigVer from '../../test/fixtures/acvp/ml-dsa-sigver.json'
import mlKemEncapDecap from '../../test/fixtures/acvp/ml-kem-encapdecap.json'
import mlKemKeyGen from '../../test/fixtures/acvp/ml-kem-keygen.json'
import slhDsaKeyGen from '../../test/fixtures/acvp/slh-dsa-keygen.json'
import { AppError } from '../http/errors'
import { buildAccessTokenClaims, signAccessToken, verifyAccessToken } from './access-token'
import { bytesToHex, hexToBytes } from './encoding'
import { buildJwks, generateSigningKey } from './jwk'
import { type PostQuantumImplementation, postQuantumImplementation } from './post-quantum'
import { createSelfTestSuite, runSelfTests, type SelfTestOptions } from './self-test'
import { SELF_TEST_VECTORS, type SelfTestVectors } from './self-test.vectors'

type Fixture = { testGroups: { parameterSet: string; tests: Record<string, unknown>[] }[] }

function acvpCase(fixture: Fixture, tcId: number): Record<string, string> {
  for (const group of fixture.testGroups) {
    const found = group.tests.find((t) => t.tcId === tcId)
    if (found) return found as Record<string, string>
  }
  throw new Error(`tcId ${tcId} is not in the fixture`)
}

const digest = (hex: string) => bytesToHex(sha256(hexToBytes(hex)))
const flipHexNibble = (hex: string) => (hex[0] === '0' ? '1' : '0') + hex.slice(1)

/** The tests each implementation runs, in report order (see self-test.ts for why they differ). */
const EXPECTED_TESTS: Readonly<Record<PostQuantumImplementation, readonly string[]>> = {
  noble: [
    'sha256_kat',
    'ml_dsa_44_keygen_kat',
    'ml_dsa_44_sign_kat',
    'ml_dsa_44_verify_kat',
    'ml_dsa_65_keygen_kat',
    'ml_dsa_65_sign_kat',
    'ml_dsa_65_verify_kat',
    'ml_dsa_87_keygen_kat',
    'ml_dsa_87_sign_kat',
    'ml_dsa_87_verify_kat',
    'ml_kem_768_keygen_kat',
    'ml_kem_768_encaps_kat',
    'ml_kem_768_decaps_kat',
    'ml_kem_768_implicit_rejection',
    'slh_dsa_shake_128f_keygen_kat',
    'ed25519_kat',
    'argon2id_kat',
  ],
  webcrypto: [
    'sha256_kat',
    'ml_dsa_44_keygen_kat',
    'ml_dsa_44_sign_verify',
    'ml_dsa_44_verify_kat',
    'ml_dsa_65_keygen_kat',
    'ml_dsa_65_sign_verify',
    'ml_dsa_65_verify_kat',
    'ml_dsa_87_keygen_kat',
    'ml_dsa_87_sign_verify',
    'ml_dsa_87_verify_kat',
    'ml_kem_768_keygen_kat',
    'ml_kem_768_encaps_decaps',
    'ml_kem_768_implicit_rejection',
    'slh_dsa_shake_128f_keygen_kat',
    'ed25519_kat',
    'argon2id_kat',
  ],
}

const ON: Readonly<Record<PostQuantumImplementation, SelfTestOptions>> = {
  noble: { postQuantum: () => 'noble' },
  webcrypto: { postQuantum: () => 'webcrypto' },
}
const IMPLEMENTATIONS = ['webcrypto', 'noble'] as const

describe('runSelfTests', () => {
  it('tests the native implementation this isolate uses (webcrypto_modern_algorithms is set)', async () => {
    expect(postQuantumImplementation('ML-DSA-65')).toBe('webcrypto')
    const report = await runSelfTests()
    expect(report.tests.map((t) => t.name)).toEqual(EXPECTED_TESTS.webcrypto)
    for (const test of report.tests.filter((t) => /^ML-(DSA|KEM)/.test(t.algorithm))) {
      expect(test.implementation, test.name).toBe('WebCrypto')
    }
    expect(report.passed).toBe(true)
  })

  it('runs once per isolate and returns the same report afterwards', async () => {
    const first = await runSelfTests()
    const second = await runSelfTests()
    expect(second).toBe(first)
  })
})

describe.each(IMPLEMENTATIONS)('the self-tests on %s', (implementation) => {
  it('pass every test and report each one, with what computed it', async () => {
    const report = await createSelfTestSuite(SELF_TEST_VECTORS, ON[implementation]).run()
    expect(report.tests.map((t) => t.name)).toEqual(EXPECTED_TESTS[implementation])
    const label = implementation === 'webcrypto' ? 'WebCrypto' : '@noble/post-quantum'
    for (const test of report.tests) {
      expect(test, test.name).toMatchObject({ passed: true })
      expect(test.detail).toBeUndefined()
      expect(test.duration_ms).toBeGreaterThanOrEqual(0)
      if (/^ML-(DSA|KEM)/.test(test.algorithm)) expect(test.implementation, test.name).toBe(label)
    }
    expect(report.tests.find((t) => t.name === 'ed25519_kat')?.implementation).toBe('WebCrypto')
    expect(report.tests.find((t) => t.name === 'argon2id_kat')?.implementation).toBe('@noble/hashes')
    expect(report.passed).toBe(true)
    expect(new Date(report.completed_at).toString()).not.toBe('Invalid Date')
  })

  it('a wrong public key from keyGen, or a verifier that rejects the ACVP signature, fails closed', async () => {
    const badKeyGen = await createSelfTestSuite(
      {
        ...SELF_TEST_VECTORS,
        mlDsa44KeyGen: {
          ...SELF_TEST_VECTORS.mlDsa44KeyGen,
          publicKeySha256: flipHexNibble(SELF_TEST_VECTORS.mlDsa44KeyGen.publicKeySha256),
        },
      },
      ON[implementation],
    ).run()
    expect(badKeyGen.tests.filter((t) => !t.passed).map((t) => [t.name, t.detail])).toEqual([
      ['ml_dsa_44_keygen_kat', 'public key differs from the expected value'],
    ])
    // A signature that is not the published one must not verify: the verifier is really checking.
    const badSignature = await createSelfTestSuite(
      {
        ...SELF_TEST_VECTORS,
        mlDsa87SigVer: {
          ...SELF_TEST_VECTORS.mlDsa87SigVer,
          signature: flipHexNibble(SELF_TEST_VECTORS.mlDsa87SigVer.signature),
        },
      },
      ON[implementation],
    ).run()
    expect(badSignature.tests.filter((t) => !t.passed).map((t) => [t.name, t.detail])).toEqual([
      ['ml_dsa_87_verify_kat', 'the known-answer signature did not verify'],
    ])
    const badKem = await createSelfTestSuite(
      {
        ...SELF_TEST_VECTORS,
        mlKem768KeyGen: {
          ...SELF_TEST_VECTORS.mlKem768KeyGen,
          encapsulationKeySha256: flipHexNibble(SELF_TEST_VECTORS.mlKem768KeyGen.encapsulationKeySha256),
        },
      },
      ON[implementation],
    ).run()
    expect(badKem.tests.filter((t) => !t.passed).map((t) => [t.name, t.detail])).toEqual([
      ['ml_kem_768_keygen_kat', 'encapsulation key differs from the expected value'],
    ])
    expect([badKeyGen.passed, badSignature.passed, badKem.passed]).toEqual([false, false, false])
  })
})

describe('self-tests run per algorithm, before its first use', () => {
  it.each(IMPLEMENTATIONS)(
    'assertAlgorithm runs only that algorithm (and SHA-256), once (%s)',
    async (implementation) => {
      const suite = createSelfTestSuite(SELF_TEST_VECTORS, ON[implementation])
      await suite.assertAlgorithm('Ed25519')
      expect(suite.results().map((t) => t.name)).toEqual(['sha256_kat', 'ed25519_kat'])
      await suite.assertAlgorithm('ML-DSA-65')
      expect(suite.results().map((t) => t.name)).toEqual([
        'sha256_kat',
        ...EXPECTED_TESTS[implementation].filter((name) => name.startsWith('ml_dsa_65_')),
        'ed25519_kat',
      ])
      const before = suite.results()
      await suite.assertAlgorithm('ML-DSA-65')
      expect(suite.results()).toEqual(before)
      const report = await suite.run()
      expect(report.tests.map((t) => t.name)).toEqual(EXPECTED_TESTS[implementation])
    },
  )

  it('a failure in one algorithm puts the whole module in the error state (fail closed)', async () => {
    const suite = createSelfTestSuite({
      ...SELF_TEST_VECTORS,
      mlDsa87KeyGen: { ...SELF_TEST_VECTORS.mlDsa87KeyGen, publicKeySha256: '00'.repeat(32) },
    })
    await expect(suite.assertAlgorithm('Ed25519')).resolves.toBeUndefined()
    await expect(suite.assertAlgorithm('ML-DSA-87')).rejects.toMatchObject({
      status: 503,
      code: 'crypto_self_test_failed',
    })
    // Ed25519 passed its own test, but the module is now in the error state.
    await expect(suite.assertAlgorithm('Ed25519')).rejects.toMatchObject({ status: 503 })
  })

  it('a token of a not yet tested algorithm runs its KATs before verifying', async () => {
    const suite = createSelfTestSuite()
    const key = await generateSigningKey('ML-DSA-87')
    const token = await signAccessToken(
      buildAccessTokenClaims({ sub: 'svc_1', aud: 'platform', iss: 'https://auth.test', ttlSeconds: 300 }),
      key,
      { selfTests: suite },
    )
    expect(suite.results().map((t) => t.algorithm)).toEqual([
      'SHA-256',
      'ML-DSA-87',
      'ML-DSA-87',
      'ML-DSA-87',
    ])
    expect(token.split('.')).toHaveLength(3)
  })
})

describe('self-test vectors come from the ACVP fixtures', () => {
  it.each([
    ['ML-DSA-44', SELF_TEST_VECTORS.mlDsa44KeyGen, SELF_TEST_VECTORS.mlDsa44SigGen],
    ['ML-DSA-65', SELF_TEST_VECTORS.mlDsa65KeyGen, SELF_TEST_VECTORS.mlDsa65SigGen],
    ['ML-DSA-87', SELF_TEST_VECTORS.mlDsa87KeyGen, SELF_TEST_VECTORS.mlDsa87SigGen],
  ])('%s keyGen and deterministic sigGen', (_name, keyGen, sigGen) => {
    const kg = acvpCase(mlDsaKeyGen as Fixture, keyGen.tcId)
    expect(keyGen.seed).toBe(kg.seed?.toLowerCase())
    expect(keyGen.publicKeySha256).toBe(digest(kg.pk ?? ''))
    expect(keyGen.secretKeySha256).toBe(digest(kg.sk ?? ''))
    const sg = acvpCase(mlDsaSigGen as Fixture, sigGen.tcId)
    expect(sigGen.secretKey).toBe(sg.sk?.toLowerCase())
    expect(sigGen.message).toBe(sg.message?.toLowerCase())
    expect(sigGen.context).toBe(sg.context?.toLowerCase())
    expect(sigGen.signatureSha256).toBe(digest(sg.signature ?? ''))
  })

  it.each([
    ['ML-DSA-44', SELF_TEST_VECTORS.mlDsa44SigVer],
    ['ML-DSA-65', SELF_TEST_VECTORS.mlDsa65SigVer],
    ['ML-DSA-87', SELF_TEST_VECTORS.mlDsa87SigVer],
  ])('%s sigVer: a valid signature, whole', (name, sigVer) => {
    const group = (mlDsaSigVer as Fixture).testGroups.find((g) => g.tests.some((t) => t.tcId === sigVer.tcId))
    expect(group?.parameterSet).toBe(name)
    const sv = acvpCase(mlDsaSigVer as Fixture, sigVer.tcId) as Record<string, unknown>
    expect(sv.testPassed).toBe(true)
    expect([sigVer.publicKey, sigVer.message, sigVer.context, sigVer.signature]).toEqual(
      [sv.pk, sv.message, sv.context, sv.signature].map((x) => String(x).toLowerCase()),
    )
  })

  it('ML-KEM-768 keyGen tcId 26, encapsulation tcId 26, decapsulation tcId 88', () => {
    const kg = acvpCase(mlKemKeyGen as Fixture, SELF_TEST_VECTORS.mlKem768KeyGen.tcId)
    expect(SELF_TEST_VECTORS.mlKem768KeyGen.d).toBe(kg.d?.toLowerCase())
    expect(SELF_TEST_VECTORS.mlKem768KeyGen.z).toBe(kg.z?.toLowerCase())
    expect(SELF_TEST_VECTORS.mlKem768KeyGen.encapsulationKeySha256).toBe(digest(kg.ek ?? ''))
    expect(SELF_TEST_VECTORS.mlKem768KeyGen.decapsulationKeySha256).toBe(digest(kg.dk ?? ''))
    const enc = acvpCase(mlKemEncapDecap as Fixture, SELF_TEST_VECTORS.mlKem768Encap.tcId)
    expect(SELF_TEST_VECTORS.mlKem768Encap.encapsulationKey).toBe(enc.ek?.toLowerCase())
    expect(SELF_TEST_VECTORS.mlKem768Encap.m).toBe(enc.m?.toLowerCase())
    expect(SELF_TEST_VECTORS.mlKem768Encap.ciphertextSha256).toBe(digest(enc.c ?? ''))
    expect(SELF_TEST_VECTORS.mlKem768Encap.sharedSecret).toBe(enc.k?.toLowerCase())
    const dec = acvpCase(mlKemEncapDecap as Fixture, SELF_TEST_VECTORS.mlKem768Decap.tcId)
    expect(dec.reason).toBe('modified ciphertext')
    expect(SELF_TEST_VECTORS.mlKem768Decap.decapsulationKey).toBe(dec.dk?.toLowerCase())
    expect(SELF_TEST_VECTORS.mlKem768Decap.ciphertext).toBe(dec.c?.toLowerCase())
    expect(SELF_TEST_VECTORS.mlKem768Decap.sharedSecret).toBe(dec.k?.toLowerCase())
  })

  it('SLH-DSA-SHAKE-128f keyGen tcId 31', () => {
    const kg = acvpCase(slhDsaKeyGen as Fixture, SELF_TEST_VECTORS.slhDsaShake128fKeyGen.tcId)
    const v = SELF_TEST_VECTORS.slhDsaShake128fKeyGen
    expect([v.skSeed, v.skPrf, v.pkSeed, v.publicKey, v.secretKey]).toEqual(
      [kg.skSeed, kg.skPrf, kg.pkSeed, kg.pk, kg.sk].map((x) => x?.toLowerCase()),
    )
  })
})

describe('a failed self-test fails closed', () => {
  const corruptions: [string, (v: SelfTestVectors) => SelfTestVectors][] = [
    [
      'ml_dsa_65_sign_kat',
      (v) => ({
        ...v,
        mlDsa65SigGen: {
          ...v.mlDsa65SigGen,
          signatureSha256: flipHexNibble(v.mlDsa65SigGen.signatureSha256),
        },
      }),
    ],
    [
      'ml_dsa_65_keygen_kat',
      (v) => ({
        ...v,
        mlDsa65KeyGen: {
          ...v.mlDsa65KeyGen,
          publicKeySha256: flipHexNibble(v.mlDsa65KeyGen.publicKeySha256),
        },
      }),
    ],
    [
      'ml_kem_768_decaps_kat',
      (v) => ({
        ...v,
        mlKem768Decap: { ...v.mlKem768Decap, sharedSecret: flipHexNibble(v.mlKem768Decap.sharedSecret) },
      }),
    ],
    [
      'ml_kem_768_encaps_kat',
      (v) => ({
        ...v,
        mlKem768Encap: {
          ...v.mlKem768Encap,
          ciphertextSha256: flipHexNibble(v.mlKem768Encap.ciphertextSha256),
        },
      }),
    ],
    [
      'slh_dsa_shake_128f_keygen_kat',
      (v) => ({
        ...v,
        slhDsaShake128fKeyGen: {
          ...v.slhDsaShake128fKeyGen,
          publicKey: flipHexNibble(v.slhDsaShake128fKeyGen.publicKey),
        },
      }),
    ],
    [
      'ed25519_kat',
      (v) => ({ ...v, ed25519: { ...v.ed25519, signature: flipHexNibble(v.ed25519.signature) } }),
    ],
    ['argon2id_kat', (v) => ({ ...v, argon2id: { ...v.argon2id, tag: flipHexNibble(v.argon2id.tag) } })],
    ['sha256_kat', (v) => ({ ...v, sha256: { ...v.sha256, digest: flipHexNibble(v.sha256.digest) } })],
  ]

  // The known answers only noble can be held to (deterministic signing, fixed-m encapsulation, an
  // expanded decapsulation key), and those every implementation is held to, on noble.
  it.each(corruptions)('a corrupted %s vector fails that test and the report', async (name, corrupt) => {
    const report = await createSelfTestSuite(corrupt(SELF_TEST_VECTORS), ON.noble).run()
    expect(report.passed).toBe(false)
    const failed = report.tests.filter((t) => !t.passed)
    expect(failed.map((t) => t.name)).toEqual([name])
    expect(failed[0]?.detail).toMatch(/differs from the expected value/)
  })

  it('refuses to sign or verify tokens with AppError 503 crypto_self_test_failed', async () => {
    const broken = createSelfTestSuite({
      ...SELF_TEST_VECTORS,
      mlDsa65KeyGen: { ...SELF_TEST_VECTORS.mlDsa65KeyGen, publicKeySha256: '00'.repeat(32) },
    })
    const key = await generateSigningKey('ML-DSA-65')
    const claims = buildAccessTokenClaims({
      sub: 'svc_1',
      aud: 'platform',
      iss: 'https://auth.test',
      ttlSeconds: 300,
    })

    const signError = await signAccessToken(claims, key, { selfTests: broken }).catch((e: unknown) => e)
    expect(signError).toBeInstanceOf(AppError)
    expect(signError).toMatchObject({ status: 503, code: 'crypto_self_test_failed' })
    expect((signError as AppError).internalMessage).toContain('ml_dsa_65_keygen_kat')

    const token = await signAccessToken(claims, key)
    const verifyError = await verifyAccessToken(token, {
      keys: buildJwks([key]),
      allowedAlgorithms: ['ML-DSA-65'],
      audience: 'platform',
      issuer: 'https://auth.test',
      selfTests: broken,
    }).catch((e: unknown) => e)
    expect(verifyError).toMatchObject({ status: 503, code: 'crypto_self_test_failed' })
  })
})
