/**
 * The fallback, on workerd WITHOUT webcrypto_modern_algorithms (vitest project unit-noble): the
 * runtime has no ML-DSA or ML-KEM, so every signature, verification and self-test of the product
 * runs on @noble/post-quantum, end to end through the same public functions.
 */
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js'
import { describe, expect, it } from 'vitest'
import { rawPublicKey, signCheckpoint, verifyCheckpointNote } from '../audit/checkpoint'
import { buildAccessTokenClaims, signAccessToken, verifyAccessToken } from './access-token'
import { base64urlDecode } from './encoding'
import { buildJwks, generateSigningKey, importSigningKey } from './jwk'
import {
  hasNativeSupport,
  ML_DSA_ALGORITHMS,
  ML_KEM_ALGORITHMS,
  mlDsaFor,
  mlKemFor,
  NOBLE_ML_DSA,
  NOBLE_ML_KEM,
} from './post-quantum'
import { runSelfTests } from './self-test'

describe('without webcrypto_modern_algorithms', () => {
  it('finds no native ML-DSA or ML-KEM and picks noble for every parameter set', () => {
    for (const alg of [...ML_DSA_ALGORITHMS, ...ML_KEM_ALGORITHMS])
      expect(hasNativeSupport(alg), alg).toBe(false)
    expect(mlDsaFor('ML-DSA-65')).toBe(NOBLE_ML_DSA)
    expect(mlKemFor('ML-KEM-768')).toBe(NOBLE_ML_KEM)
  })

  it('issues and verifies ML-DSA access tokens, whose signatures are plain FIPS 204', async () => {
    const key = await generateSigningKey('ML-DSA-65')
    const imported = await importSigningKey(key.exportPrivateJwk())
    const claims = buildAccessTokenClaims({
      sub: 'svc_1',
      aud: 'platform',
      iss: 'https://auth.test',
      ttlSeconds: 300,
    })
    const token = await signAccessToken(claims, imported)
    const verified = await verifyAccessToken(token, {
      keys: buildJwks([key]),
      allowedAlgorithms: ['ML-DSA-65'],
      audience: 'platform',
      issuer: 'https://auth.test',
    })
    expect(verified.claims.sub).toBe('svc_1')
    const [header, payload, signature] = token.split('.') as [string, string, string]
    const publicKey = base64urlDecode(key.publicJwk.kty === 'AKP' ? key.publicJwk.pub : '')!
    expect(
      ml_dsa65.verify(
        base64urlDecode(signature)!,
        new TextEncoder().encode(`${header}.${payload}`),
        publicKey,
      ),
    ).toBe(true)
  })

  it('signs and verifies audit checkpoints (the ML-DSA-44 cosignature)', async () => {
    const ed25519 = await generateSigningKey('EdDSA')
    const mlDsa44 = await generateSigningKey('ML-DSA-44')
    const head = { origin: 'svc.test/audit-log/x', size: 7, rootHash: new Uint8Array(32).fill(3) }
    const signed = await signCheckpoint(head, { ed25519, mlDsa44 }, 1_795_000_000)
    const keys = { ed25519: rawPublicKey(ed25519.publicJwk), mlDsa44: rawPublicKey(mlDsa44.publicJwk) }
    expect(await verifyCheckpointNote(signed.note, keys)).toMatchObject({ size: 7 })
    expect(await verifyCheckpointNote(signed.note.replace('\n7\n', '\n8\n'), keys)).toBeNull()
  })

  it("the isolate's self-tests are noble's known-answer tests, and pass", async () => {
    const report = await runSelfTests()
    const pq = report.tests.filter((t) => /^ML-(DSA|KEM)/.test(t.algorithm))
    expect(pq.map((t) => t.name)).toContain('ml_dsa_65_sign_kat')
    expect(pq.map((t) => t.name)).toContain('ml_kem_768_decaps_kat')
    expect(new Set(pq.map((t) => t.implementation))).toEqual(new Set(['@noble/post-quantum']))
    expect(report.passed).toBe(true)
  })
})
