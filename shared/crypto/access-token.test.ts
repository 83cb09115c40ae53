import { ml_dsa44, ml_dsa65, ml_dsa87 } from '@noble/post-quantum/ml-dsa.js'
import { createLocalJWKSet, importJWK, jwtVerify, SignJWT } from 'jose'
import { beforeAll, describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import {
  type AccessTokenClaims,
  buildAccessTokenClaims,
  signAccessToken,
  type VerifyAccessTokenOptions,
  verifyAccessToken,
} from './access-token'
import { base64urlDecode, base64urlEncode, utf8 } from './encoding'
import { buildJwks, createVerificationKeySet, generateSigningKey, type Jwks, type SigningKey } from './jwk'
import { JWS_ALGORITHMS, type JwsAlgorithm, ML_DSA_ALGORITHMS, SIGNATURE_BYTES } from './jws-algorithms'

const ISSUER = 'https://auth.svc.test'
const NOW = new Date('2026-03-01T12:00:00Z')
const NOW_S = NOW.getTime() / 1000

let keys: Record<JwsAlgorithm, SigningKey>
let secondMlDsa65: SigningKey
let jwks: Jwks

beforeAll(async () => {
  const generated = await Promise.all(JWS_ALGORITHMS.map((alg) => generateSigningKey(alg)))
  keys = Object.fromEntries(generated.map((k) => [k.alg, k])) as Record<JwsAlgorithm, SigningKey>
  secondMlDsa65 = await generateSigningKey('ML-DSA-65')
  jwks = buildJwks([...generated, secondMlDsa65])
})

function claims(overrides: Partial<AccessTokenClaims> = {}): AccessTokenClaims {
  return {
    ...buildAccessTokenClaims({
      sub: 'svc_account_1',
      aud: 'platform',
      iss: ISSUER,
      ttlSeconds: 600,
      tenantId: 'tenant-a',
      now: NOW,
    }),
    ...overrides,
  }
}

function options(overrides: Partial<VerifyAccessTokenOptions> = {}): VerifyAccessTokenOptions {
  return {
    keys: jwks,
    allowedAlgorithms: [...JWS_ALGORITHMS],
    audience: 'platform',
    issuer: ISSUER,
    now: NOW,
    ...overrides,
  }
}

const segment = (value: unknown) => base64urlEncode(utf8.encode(JSON.stringify(value)))

/** Builds a token from parts, signing `header.payload` with `signer` (or attaching `signature`). */
async function craft(
  header: unknown,
  payload: unknown,
  signer?: SigningKey,
  signature?: Uint8Array,
): Promise<string> {
  const input = `${segment(header)}.${segment(payload)}`
  const sig = signer ? await signer.sign(utf8.encode(input)) : (signature ?? new Uint8Array(0))
  return `${input}.${base64urlEncode(sig)}`
}

async function refusal(token: string, opts: VerifyAccessTokenOptions = options()): Promise<AppError> {
  const error = await verifyAccessToken(token, opts).then(
    () => new Error('the token was accepted'),
    (e: unknown) => e,
  )
  if (!(error instanceof AppError)) throw error
  return error
}

describe('signing and verifying', () => {
  it.each(JWS_ALGORITHMS)('%s: a signed token verifies and returns its claims', async (alg) => {
    const issued = claims()
    const token = await signAccessToken(issued, keys[alg])
    const result = await verifyAccessToken(token, options())
    expect(result.header).toEqual({ alg, kid: keys[alg].kid, typ: 'JWT' })
    expect(result.claims).toEqual(issued)
    expect(result.audience).toBe('platform')
  })

  it('emits the header {alg, kid, typ} and nothing else', async () => {
    const token = await signAccessToken(claims(), keys['ML-DSA-65'])
    const header = JSON.parse(
      new TextDecoder().decode(base64urlDecode(token.split('.')[0] ?? '') ?? new Uint8Array()),
    )
    expect(header).toEqual({ alg: 'ML-DSA-65', kid: keys['ML-DSA-65'].kid, typ: 'JWT' })
  })

  it('accepts a key set, a resolver function and a raw JWKS alike', async () => {
    const token = await signAccessToken(claims(), keys['ML-DSA-44'])
    const set = await createVerificationKeySet(jwks)
    await expect(verifyAccessToken(token, options({ keys: set }))).resolves.toBeTruthy()
    await expect(verifyAccessToken(token, options({ keys: (kid) => set.resolve(kid) }))).resolves.toBeTruthy()
    await expect(
      verifyAccessToken(token, options({ keys: JSON.parse(JSON.stringify(jwks)) })),
    ).resolves.toBeTruthy()
  })

  it('builds claims with iat now, exp after the TTL, a random jti and the tenant', () => {
    const a = buildAccessTokenClaims({
      sub: 's',
      aud: 'internal-service',
      iss: ISSUER,
      ttlSeconds: 900,
      tenantId: 't',
      now: NOW,
    })
    const b = buildAccessTokenClaims({
      sub: 's',
      aud: 'internal-service',
      iss: ISSUER,
      ttlSeconds: 900,
      now: NOW,
    })
    expect(a).toMatchObject({ iat: NOW_S, exp: NOW_S + 900, tenant_id: 't', aud: 'internal-service' })
    expect(b.tenant_id).toBeUndefined()
    expect(a.jti).not.toBe(b.jti)
  })

  it('refuses to sign invalid claims', async () => {
    const key = keys.EdDSA
    for (const bad of [
      claims({ exp: NOW_S - 1, iat: NOW_S }),
      { ...claims(), role: 'admin' } as AccessTokenClaims,
      { ...claims(), scope: '' } as AccessTokenClaims,
      claims({ aud: 'https://api.example.com/mcp#fragment' }),
      claims({ aud: 'everyone' as AccessTokenClaims['aud'] }),
    ]) {
      await expect(signAccessToken(bad, key)).rejects.toMatchObject({
        status: 500,
        code: 'token_claims_invalid',
      })
    }
  })
})

describe('interoperability', () => {
  it.each(ML_DSA_ALGORITHMS)(
    '%s tokens verify with noble directly over the header.payload bytes',
    async (alg) => {
      const token = await signAccessToken(claims(), keys[alg])
      const [header, payload, signature] = token.split('.') as [string, string, string]
      const signatureBytes = base64urlDecode(signature)
      const jwk = keys[alg].publicJwk
      if (!signatureBytes || jwk.kty !== 'AKP') throw new Error('unexpected token shape')
      expect(signatureBytes.length).toBe(SIGNATURE_BYTES[alg])
      const publicKey = base64urlDecode(jwk.pub) ?? new Uint8Array()
      const noble = { 'ML-DSA-44': ml_dsa44, 'ML-DSA-65': ml_dsa65, 'ML-DSA-87': ml_dsa87 }[alg]
      // Pure ML-DSA with the empty context, exactly as RFC 9964 specifies.
      expect(noble.verify(signatureBytes, utf8.encode(`${header}.${payload}`), publicKey)).toBe(true)
      expect(noble.verify(signatureBytes, utf8.encode(`${header}.${payload}x`), publicKey)).toBe(false)
      expect(
        noble.verify(signatureBytes, utf8.encode(`${header}.${payload}`), publicKey, {
          context: utf8.encode('x'),
        }),
      ).toBe(false)
    },
  )

  it('EdDSA tokens verify with jose jwtVerify', async () => {
    const issued = claims()
    const token = await signAccessToken(issued, keys.EdDSA)
    const okpOnly = { keys: jwks.keys.filter((k) => k.kty === 'OKP') }
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(okpOnly), {
      algorithms: ['EdDSA'],
      audience: 'platform',
      issuer: ISSUER,
      currentDate: NOW,
    })
    expect(payload).toEqual(issued)
    expect(protectedHeader).toEqual({ alg: 'EdDSA', kid: keys.EdDSA.kid, typ: 'JWT' })
  })

  it('EdDSA tokens made by jose SignJWT verify here', async () => {
    const privateJwk = keys.EdDSA.exportPrivateJwk()
    const joseKey = await importJWK(privateJwk, 'EdDSA')
    const issued = claims()
    const token = await new SignJWT({ ...issued })
      .setProtectedHeader({ alg: 'EdDSA', kid: keys.EdDSA.kid, typ: 'JWT' })
      .sign(joseKey)
    const result = await verifyAccessToken(token, options())
    expect(result.claims).toEqual(issued)
  })
})

describe('attacks and invalid tokens are refused', () => {
  it('alg none, in any spelling, with or without a signature', async () => {
    for (const alg of ['none', 'None', 'NONE']) {
      const header = { alg, kid: keys['ML-DSA-65'].kid, typ: 'JWT' }
      for (const token of [
        await craft(header, claims()),
        await craft(header, claims(), undefined, new Uint8Array(3309)),
      ]) {
        const error = await refusal(token)
        expect(error).toMatchObject({ status: 401, code: 'token_algorithm_not_allowed' })
        expect(error.headers['www-authenticate']).toBe('Bearer error="invalid_token"')
      }
    }
  })

  it('HS256 signed with the public key bytes (or the JWK text) as the HMAC secret', async () => {
    const target = keys['ML-DSA-65']
    const jwk = target.publicJwk
    if (jwk.kty !== 'AKP') throw new Error('expected AKP')
    const header = { alg: 'HS256', kid: target.kid, typ: 'JWT' }
    const input = `${segment(header)}.${segment(claims())}`
    for (const secret of [base64urlDecode(jwk.pub) ?? new Uint8Array(), utf8.encode(JSON.stringify(jwk))]) {
      const hmacKey = await crypto.subtle.importKey('raw', secret, { name: 'HMAC', hash: 'SHA-256' }, false, [
        'sign',
      ])
      const mac = new Uint8Array(await crypto.subtle.sign('HMAC', hmacKey, utf8.encode(input)))
      const error = await refusal(`${input}.${base64urlEncode(mac)}`)
      expect(error).toMatchObject({ status: 401, code: 'token_algorithm_not_allowed' })
      expect(error.message).toContain('"HS256"')
    }
  })

  it('RS256, ES256 and other algorithms outside the allow-list', async () => {
    for (const alg of ['RS256', 'ES256', 'PS256', 'Ed25519', 'ml-dsa-65']) {
      const token = await craft({ alg, kid: keys['ML-DSA-65'].kid, typ: 'JWT' }, claims(), keys['ML-DSA-65'])
      expect(await refusal(token)).toMatchObject({ status: 401, code: 'token_algorithm_not_allowed' })
    }
  })

  it('a supported algorithm that the caller (tenant policy) does not allow', async () => {
    const token = await signAccessToken(claims(), keys.EdDSA)
    const error = await refusal(token, options({ allowedAlgorithms: ['ML-DSA-65', 'ML-DSA-87'] }))
    expect(error).toMatchObject({ code: 'token_algorithm_not_allowed' })
    expect(error.message).toContain('ML-DSA-65, ML-DSA-87')
  })

  it('a swapped kid pointing at a key of another algorithm', async () => {
    const signer = keys['ML-DSA-65']
    for (const other of [keys['ML-DSA-44'], keys.EdDSA]) {
      const token = await craft({ alg: 'ML-DSA-65', kid: other.kid, typ: 'JWT' }, claims(), signer)
      const error = await refusal(token)
      expect(error).toMatchObject({ status: 401, code: 'token_key_mismatch' })
      expect(error.message).toContain(other.alg)
    }
  })

  it('a swapped kid pointing at another key of the same algorithm', async () => {
    const token = await craft(
      { alg: 'ML-DSA-65', kid: secondMlDsa65.kid, typ: 'JWT' },
      claims(),
      keys['ML-DSA-65'],
    )
    expect(await refusal(token)).toMatchObject({ status: 401, code: 'token_signature_invalid' })
  })

  it('an unknown kid', async () => {
    const token = await craft({ alg: 'ML-DSA-65', kid: 'not-a-key', typ: 'JWT' }, claims(), keys['ML-DSA-65'])
    expect(await refusal(token)).toMatchObject({ status: 401, code: 'token_unknown_kid' })
  })

  it.each(JWS_ALGORITHMS)('%s: a tampered payload or signature', async (alg) => {
    const token = await signAccessToken(claims(), keys[alg])
    const [header, , signature] = token.split('.') as [string, string, string]
    const forged = `${header}.${segment(claims({ sub: 'admin' }))}.${signature}`
    expect(await refusal(forged)).toMatchObject({ code: 'token_signature_invalid' })

    const sigBytes = base64urlDecode(signature) ?? new Uint8Array()
    sigBytes[10] = (sigBytes[10] as number) ^ 0x40
    const flipped = `${token.split('.').slice(0, 2).join('.')}.${base64urlEncode(sigBytes)}`
    expect(await refusal(flipped)).toMatchObject({ code: 'token_signature_invalid' })
  })

  it('a signature of the wrong length', async () => {
    const token = await signAccessToken(claims(), keys['ML-DSA-65'])
    const [header, payload, signature] = token.split('.') as [string, string, string]
    const truncated = (base64urlDecode(signature) ?? new Uint8Array()).subarray(0, 3308)
    const error = await refusal(`${header}.${payload}.${base64urlEncode(truncated)}`)
    expect(error).toMatchObject({ code: 'token_signature_invalid' })
    expect(error.message).toContain('3309 bytes')
    expect(error.message).toContain('3308')
  })

  it('an expired token, but not within the leeway', async () => {
    const expired = await signAccessToken(claims({ iat: NOW_S - 700, exp: NOW_S - 31 }), keys['ML-DSA-65'])
    expect(await refusal(expired)).toMatchObject({ status: 401, code: 'token_expired' })
    const withinLeeway = await signAccessToken(
      claims({ iat: NOW_S - 700, exp: NOW_S - 10 }),
      keys['ML-DSA-65'],
    )
    await expect(verifyAccessToken(withinLeeway, options())).resolves.toBeTruthy()
    expect(await refusal(withinLeeway, options({ leewaySeconds: 0 }))).toMatchObject({
      code: 'token_expired',
    })
  })

  it('nbf or iat in the future', async () => {
    const notYet = await signAccessToken(claims({ nbf: NOW_S + 120 }), keys.EdDSA)
    expect(await refusal(notYet)).toMatchObject({ status: 401, code: 'token_not_yet_valid' })
    const issuedLater = await signAccessToken(claims({ iat: NOW_S + 120, exp: NOW_S + 600 }), keys.EdDSA)
    expect(await refusal(issuedLater)).toMatchObject({ status: 401, code: 'token_not_yet_valid' })
  })

  it('a genuine token for another audience is a 403, distinguishable from invalid tokens', async () => {
    const token = await signAccessToken(claims({ aud: 'external-api' }), keys['ML-DSA-65'])
    const error = await refusal(token, options({ audience: 'internal-service' }))
    expect(error).toMatchObject({ status: 403, code: 'token_wrong_audience', type: 'permission_error' })
    expect(error.message).toContain('"external-api"')
    const ok = await verifyAccessToken(token, options({ audience: ['internal-service', 'external-api'] }))
    expect(ok.audience).toBe('external-api')
  })

  it('an expired token for another audience is reported as expired (401), not as a wrong audience', async () => {
    const token = await signAccessToken(
      claims({ aud: 'external-api', iat: NOW_S - 700, exp: NOW_S - 100 }),
      keys.EdDSA,
    )
    expect(await refusal(token, options({ audience: 'platform' }))).toMatchObject({
      status: 401,
      code: 'token_expired',
    })
  })

  it('a lifetime longer than the issuer grants (plus leeway), however genuine the signature', async () => {
    const header = { alg: 'ML-DSA-65', kid: keys['ML-DSA-65'].kid, typ: 'JWT' }
    const forever = await craft(header, { ...claims(), exp: 1e300 }, keys['ML-DSA-65'])
    const error = await refusal(forever, options({ maxLifetimeSeconds: 900 }))
    expect(error).toMatchObject({ status: 401, code: 'token_lifetime_too_long' })
    expect(error.message).toContain('900 s')
    // Two hours declared, issued an hour and a half ago: still longer than the issuer's maximum.
    const long = await signAccessToken(claims({ iat: NOW_S - 5400, exp: NOW_S + 1800 }), keys.EdDSA)
    expect(await refusal(long, options({ maxLifetimeSeconds: 900 }))).toMatchObject({
      code: 'token_lifetime_too_long',
    })
    // Exactly the maximum, and within the leeway beyond it, pass.
    for (const lifetime of [900, 930]) {
      const token = await signAccessToken(claims({ iat: NOW_S, exp: NOW_S + lifetime }), keys.EdDSA)
      await expect(verifyAccessToken(token, options({ maxLifetimeSeconds: 900 }))).resolves.toBeTruthy()
    }
    const justOver = await signAccessToken(claims({ iat: NOW_S, exp: NOW_S + 931 }), keys.EdDSA)
    expect(await refusal(justOver, options({ maxLifetimeSeconds: 900 }))).toMatchObject({
      code: 'token_lifetime_too_long',
    })
  })

  it('a token from another issuer', async () => {
    const token = await signAccessToken(claims({ iss: 'https://evil.test' }), keys.EdDSA)
    expect(await refusal(token)).toMatchObject({ status: 401, code: 'token_issuer_invalid' })
  })

  it('a signed token with unusable claims', async () => {
    const token = await craft(
      { alg: 'EdDSA', kid: keys.EdDSA.kid, typ: 'JWT' },
      { sub: 'x', aud: 'platform' },
      keys.EdDSA,
    )
    const error = await refusal(token)
    expect(error).toMatchObject({ code: 'token_claims_invalid' })
    expect(error.message).toMatch(/exp/)
  })

  it('wrong typ, critical extensions and a missing kid', async () => {
    const signer = keys.EdDSA
    const base = { alg: 'EdDSA', kid: signer.kid }
    for (const header of [
      { ...base },
      { ...base, typ: 'at+jwt' },
      { ...base, typ: 'JWT', crit: ['exp'] },
      { alg: 'EdDSA', typ: 'JWT' },
    ]) {
      const error = await refusal(await craft(header, claims(), signer))
      expect(error, JSON.stringify(header)).toMatchObject({ status: 401, code: 'token_malformed' })
    }
  })

  it('malformed tokens', async () => {
    const token = await signAccessToken(claims(), keys.EdDSA)
    const [header, payload, signature] = token.split('.') as [string, string, string]
    const malformed = [
      '',
      'abc',
      `${header}.${payload}`,
      `${token}.extra`,
      `.${payload}.${signature}`,
      `${header}=.${payload}.${signature}`,
      `${base64urlEncode(utf8.encode('not json'))}.${payload}.${signature}`,
      `${header}.${payload}.${signature}+`,
      'a'.repeat(20_000),
    ]
    for (const bad of malformed) {
      expect(await refusal(bad), bad.slice(0, 40)).toMatchObject({ status: 401, code: 'token_malformed' })
    }
  })

  it('a misconfigured verifier is a server error, never an open door', async () => {
    const token = await signAccessToken(claims(), keys.EdDSA)
    for (const allowedAlgorithms of [[], ['HS256'], ['none']] as unknown as JwsAlgorithm[][]) {
      expect(await refusal(token, options({ allowedAlgorithms }))).toMatchObject({
        status: 500,
        code: 'token_verifier_misconfigured',
      })
    }
    expect(await refusal(token, options({ leewaySeconds: 3600 }))).toMatchObject({
      code: 'token_verifier_misconfigured',
    })
    for (const maxLifetimeSeconds of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(await refusal(token, options({ maxLifetimeSeconds }))).toMatchObject({
        code: 'token_verifier_misconfigured',
      })
    }
  })
})
