import { ml_dsa44, ml_dsa65, ml_dsa87 } from '@noble/post-quantum/ml-dsa.js'
import { calculateJwkThumbprint, importJWK } from 'jose'
import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import { base64urlDecode, utf8 } from './encoding'
import {
  buildJwks,
  createVerificationKeySet,
  generateSigningKey,
  importSigningKey,
  importVerificationKey,
  pairwiseConsistencyTest,
  type SigningKey,
  signingKeyFromSecret,
} from './jwk'
import { JWS_ALGORITHMS, ML_DSA_ALGORITHMS, PUBLIC_KEY_BYTES, SIGNATURE_BYTES } from './jws-algorithms'

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => new Error('expected a rejection'),
    (e: unknown) => e,
  )

describe('algorithm sizes', () => {
  it('match the noble implementation (FIPS 204 Table 2)', () => {
    const noble = { 'ML-DSA-44': ml_dsa44, 'ML-DSA-65': ml_dsa65, 'ML-DSA-87': ml_dsa87 }
    for (const alg of ML_DSA_ALGORITHMS) {
      expect(SIGNATURE_BYTES[alg], alg).toBe(noble[alg].lengths.signature)
      expect(PUBLIC_KEY_BYTES[alg], alg).toBe(noble[alg].lengths.publicKey)
      expect(noble[alg].lengths.seed, alg).toBe(32)
    }
    expect(SIGNATURE_BYTES['ML-DSA-65']).toBe(3309)
  })
})

describe.each(JWS_ALGORITHMS)('%s keys', (alg) => {
  it('generate with an RFC 7638 thumbprint kid and the RFC 9964 / RFC 8037 public form', async () => {
    const key = await generateSigningKey(alg)
    expect(key.alg).toBe(alg)
    expect(key.kid).toBe(await calculateJwkThumbprint(key.publicJwk, 'sha256'))
    expect(key.publicJwk.use).toBe('sig')
    if (key.publicJwk.kty === 'AKP') {
      expect(Object.keys(key.publicJwk).sort()).toEqual(['alg', 'kid', 'kty', 'pub', 'use'])
      expect(key.publicJwk.alg).toBe(alg)
      expect(base64urlDecode(key.publicJwk.pub)?.length).toBe(PUBLIC_KEY_BYTES[alg])
    } else {
      expect(key.publicJwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA' })
      expect(base64urlDecode(key.publicJwk.x)?.length).toBe(32)
    }
    expect(JSON.stringify(key)).not.toMatch(/"(priv|d)"/)
  })

  it('export the private JWK (32-byte seed) and import it back to the same key', async () => {
    const key = await generateSigningKey(alg)
    const privateJwk = key.exportPrivateJwk()
    const secret = privateJwk.kty === 'AKP' ? privateJwk.priv : privateJwk.d
    expect(base64urlDecode(secret)?.length).toBe(32)

    const imported = await importSigningKey(JSON.parse(JSON.stringify(privateJwk)))
    expect(imported.kid).toBe(key.kid)
    expect(imported.publicJwk).toEqual(key.publicJwk)
    const message = utf8.encode('round trip')
    expect(await key.verify(message, await imported.sign(message))).toBe(true)
    const signature = await key.sign(message)
    expect(signature.length).toBe(SIGNATURE_BYTES[alg])
    expect(await imported.verify(message, signature)).toBe(true)
    expect(await imported.verify(utf8.encode('other message'), signature)).toBe(false)
  })

  it('verify returns false for a signature of the wrong length instead of throwing', async () => {
    const key = await generateSigningKey(alg)
    const message = utf8.encode('length')
    const signature = await key.sign(message)
    expect(await key.verify(message, signature.subarray(0, signature.length - 1))).toBe(false)
    expect(await key.verify(message, new Uint8Array(0))).toBe(false)
  })
})

describe('importing keys', () => {
  it('refuses an ML-DSA private JWK whose pub does not belong to priv', async () => {
    const a = (await generateSigningKey('ML-DSA-65')).exportPrivateJwk()
    const b = (await generateSigningKey('ML-DSA-65')).exportPrivateJwk()
    if (a.kty !== 'AKP' || b.kty !== 'AKP') throw new Error('expected AKP keys')
    const error = await rejection(importSigningKey({ ...a, pub: b.pub }))
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ status: 400, code: 'invalid_jwk' })
    expect((error as AppError).message).toMatch(/does not match/)
  })

  it('refuses an Ed25519 private JWK whose x does not belong to d', async () => {
    const a = (await generateSigningKey('EdDSA')).exportPrivateJwk()
    const b = (await generateSigningKey('EdDSA')).exportPrivateJwk()
    if (a.kty !== 'OKP' || b.kty !== 'OKP') throw new Error('expected OKP keys')
    expect(await rejection(importSigningKey({ ...a, x: b.x }))).toMatchObject({ code: 'invalid_jwk' })
  })

  it('refuses wrong sizes, non-canonical base64url, unknown algorithms and private members in public JWKs', async () => {
    const key = await generateSigningKey('ML-DSA-44')
    const jwk = key.exportPrivateJwk()
    if (jwk.kty !== 'AKP') throw new Error('expected AKP')
    const cases: [unknown, RegExp][] = [
      [{ ...jwk, priv: jwk.priv.slice(0, 40) }, /"priv" must decode to 32 bytes/],
      [{ ...jwk, alg: 'ML-DSA-65' }, /"pub" must decode to 1952 bytes/],
      [{ ...jwk, priv: `${jwk.priv}=` }, /base64url/],
      [{ ...jwk, alg: 'ML-DSA-99' }, /alg/],
      [{ kty: 'RSA', n: 'AQAB', e: 'AQAB' }, /kty/],
    ]
    for (const [input, message] of cases) {
      const error = await rejection(importSigningKey(input))
      expect(error, JSON.stringify(input).slice(0, 80)).toMatchObject({ code: 'invalid_jwk' })
      expect((error as AppError).message).toMatch(message)
    }
    expect(await rejection(importVerificationKey(jwk))).toMatchObject({
      code: 'invalid_jwk',
      message: expect.stringMatching(/must not contain private key material/),
    })
  })

  it('keeps the kid a JWK already carries, so third-party key sets resolve as published', async () => {
    const key = await generateSigningKey('EdDSA')
    const imported = await importVerificationKey({ ...key.publicJwk, kid: 'partner-2026-01' })
    expect(imported.kid).toBe('partner-2026-01')
  })

  it('signingKeyFromSecret expands a secret once per isolate and serves the same key afterwards', async () => {
    const secret = JSON.stringify((await generateSigningKey('ML-DSA-65')).exportPrivateJwk())
    const first = await signingKeyFromSecret(secret)
    expect(await signingKeyFromSecret(secret)).toBe(first)
    for (const broken of ['not json', JSON.stringify({ kty: 'AKP', alg: 'ML-DSA-65' })]) {
      const error = await rejection(signingKeyFromSecret(broken))
      expect(error).toMatchObject({ status: 500, code: 'signing_key_invalid' })
      expect((error as AppError).message).not.toContain('priv')
    }
  })

  it('Ed25519 public JWKs are usable by jose (interop)', async () => {
    const key = await generateSigningKey('EdDSA')
    const cryptoKey = await importJWK(key.publicJwk, 'EdDSA')
    expect(cryptoKey).toMatchObject({ type: 'public' })
  })
})

describe('pairwise consistency test', () => {
  it('passes for a genuine key and fails for a key whose signatures do not match its public key', async () => {
    const key = await generateSigningKey('ML-DSA-65')
    expect(await pairwiseConsistencyTest(key)).toBe(true)
    const other = await generateSigningKey('ML-DSA-65')
    const inconsistent: SigningKey = { ...key, sign: (data) => other.sign(data) }
    expect(await pairwiseConsistencyTest(inconsistent)).toBe(false)
    const throwing: SigningKey = { ...key, sign: () => Promise.reject(new Error('hardware fault')) }
    expect(await pairwiseConsistencyTest(throwing)).toBe(false)
  })
})

describe('JWKS', () => {
  it('publishes public members only and resolves every kid after import', async () => {
    const keys = await Promise.all(JWS_ALGORITHMS.map((alg) => generateSigningKey(alg)))
    const jwks = buildJwks(keys)
    expect(JSON.stringify(jwks)).not.toMatch(/"(priv|d)"/)
    expect(jwks.keys.map((k) => k.kid)).toEqual(keys.map((k) => k.kid))

    const set = await createVerificationKeySet(JSON.parse(JSON.stringify(jwks)))
    expect(set.kids).toEqual(keys.map((k) => k.kid))
    const message = utf8.encode('jwks')
    for (const key of keys) {
      expect(await set.resolve(key.kid)?.verify(message, await key.sign(message))).toBe(true)
    }
    expect(set.resolve('unknown')).toBeUndefined()
  })

  it('skips entries that are not supported signature keys and refuses duplicate kids', async () => {
    const key = await generateSigningKey('ML-DSA-44')
    const set = await createVerificationKeySet({
      keys: [
        { kty: 'RSA', kid: 'rsa-1', n: 'AQAB', e: 'AQAB' },
        { ...key.publicJwk, kid: 'enc-1', use: 'enc' },
        { kty: 'OKP', crv: 'X25519', kid: 'x-1', x: 'AAAA' },
        key.publicJwk,
      ],
    })
    expect(set.kids).toEqual([key.kid])
    expect(set.ignored).toEqual(['rsa-1', 'enc-1', 'x-1'])
    expect(() => buildJwks([key, key])).toThrow(/share kid/)
    expect(await rejection(createVerificationKeySet({ keys: [key.publicJwk, key.publicJwk] }))).toMatchObject(
      {
        code: 'invalid_jwk',
      },
    )
  })
})
