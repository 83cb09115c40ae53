import { beforeAll, describe, expect, it } from 'vitest'
import {
  buildAccessTokenClaims,
  createVerificationKeySet,
  generateSigningKey,
  type PrivateJwk,
  signAccessToken,
  verifyAccessToken,
} from '../../../shared/crypto'
import { AppError } from '../../../shared/http/errors'
import { loadKeyRing, signDocument } from './signing-keys'

let current65: PrivateJwk
let previous65: PrivateJwk
let current87: PrivateJwk
let ed25519: PrivateJwk

beforeAll(async () => {
  current65 = (await generateSigningKey('ML-DSA-65')).exportPrivateJwk()
  previous65 = (await generateSigningKey('ML-DSA-65')).exportPrivateJwk()
  current87 = (await generateSigningKey('ML-DSA-87')).exportPrivateJwk()
  ed25519 = (await generateSigningKey('EdDSA')).exportPrivateJwk()
})

async function refusal(secret: string | undefined): Promise<AppError> {
  const error = await loadKeyRing(secret).then(
    () => new Error('the secret was accepted'),
    (e: unknown) => e,
  )
  if (!(error instanceof AppError)) throw error
  return error
}

describe('JWT_SIGNING_KEYS key ring', () => {
  it('signs with the first key of each algorithm and publishes every key, public members only', async () => {
    const ring = await loadKeyRing(JSON.stringify([current65, current87, ed25519, previous65]))
    expect(ring.available).toEqual(['ML-DSA-65', 'ML-DSA-87', 'EdDSA'])
    expect(ring.signers.get('ML-DSA-65')?.kid).toBe(current65.kid)
    expect(ring.jwks.keys.map((k) => k.kid)).toEqual([
      current65.kid,
      current87.kid,
      ed25519.kid,
      previous65.kid,
    ])
    const published = JSON.stringify(ring.jwks)
    expect(published).not.toContain('"priv"')
    expect(published).not.toContain('"d"')
  })

  it('keeps verifying tokens of a rotated-out key until they expire', async () => {
    const before = await loadKeyRing(JSON.stringify([previous65]))
    const claims = buildAccessTokenClaims({ sub: 'sa:x', aud: 'platform', iss: 'svc', ttlSeconds: 300 })
    const oldToken = await signAccessToken(claims, before.signers.get('ML-DSA-65')!)

    const after = await loadKeyRing(JSON.stringify([current65, previous65]))
    const newToken = await signAccessToken(claims, after.signers.get('ML-DSA-65')!)
    for (const token of [oldToken, newToken]) {
      const verified = await verifyAccessToken(token, {
        keys: after.jwks,
        allowedAlgorithms: ['ML-DSA-65'],
        audience: 'platform',
        issuer: 'svc',
      })
      expect(verified.claims.sub).toBe('sa:x')
    }
    expect(JSON.parse(atob(newToken.split('.')[0]!.replace(/-/g, '+').replace(/_/g, '/'))).kid).toBe(
      current65.kid,
    )
  })

  it('accepts a JWKS-shaped secret too', async () => {
    const ring = await loadKeyRing(JSON.stringify({ keys: [ed25519] }))
    expect(ring.available).toEqual(['EdDSA'])
  })

  it('refuses a missing or broken secret with 503, never quoting it', async () => {
    expect(await refusal(undefined)).toMatchObject({ status: 503, code: 'signing_keys_unavailable' })
    const notJson = await refusal('{"kty":"AKP", secret-material')
    expect(notJson.internalMessage).toBe('JWT_SIGNING_KEYS: not JSON')
    expect(notJson.message).not.toContain('secret-material')
    const mismatched = await refusal(
      JSON.stringify([{ ...current65, pub: previous65.kty === 'AKP' ? previous65.pub : '' }]),
    )
    expect(mismatched.internalMessage).toMatch(/key #0: .*does not match/)
    const publicOnly = await refusal(
      JSON.stringify([{ kty: 'OKP', crv: 'Ed25519', x: ed25519.kty === 'OKP' ? ed25519.x : '' }]),
    )
    expect(publicOnly.status).toBe(503)
  })
})

describe('signing documents with the token keys (the sign RPC)', () => {
  it('signs with the current key of the algorithm; the public JWKS verifies it, a changed byte does not', async () => {
    const secret = JSON.stringify([current65, ed25519, previous65])
    const data = new TextEncoder().encode('{"receipt":1}')
    const signed = await signDocument(secret, data, 'ML-DSA-65')
    if (!signed.ok) throw new Error(signed.message)
    expect(signed.kid).toBe(current65.kid)
    const keys = await createVerificationKeySet((await loadKeyRing(secret)).jwks)
    const key = keys.resolve(signed.kid)
    expect(key?.alg).toBe('ML-DSA-65')
    expect(await key!.verify(data, signed.signature)).toBe(true)
    const changed = new TextEncoder().encode('{"receipt":2}')
    expect(await key!.verify(changed, signed.signature)).toBe(false)
  })

  it('refuses, as a value, an algorithm without a key and a missing secret', async () => {
    const data = new Uint8Array([1, 2, 3])
    expect(await signDocument(JSON.stringify([ed25519]), data, 'ML-DSA-87')).toMatchObject({
      ok: false,
      code: 'signing_algorithm_unavailable',
    })
    expect(await signDocument(undefined, data, 'EdDSA')).toMatchObject({
      ok: false,
      code: 'signing_keys_unavailable',
    })
  })
})
