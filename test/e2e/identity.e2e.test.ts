/**
 * Identity end to end, through the real gateway of a stack started with `npm start`: service
 * tokens, logins, refresh-token rotation, the JWKS, interop with independent verifiers, attacks on
 * the token verifier, and the service-account admin API.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose'
import { beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { ensureWorkspace } from '../../scripts/db/seed.ts'
import { setUserPassword } from '../../scripts/db/user-passwords.ts'
import { generateApiKey } from '../../shared/auth/api-keys.ts'
import { buildAccessTokenClaims, signAccessToken } from '../../shared/crypto/access-token.ts'
import { base64urlEncode, utf8 } from '../../shared/crypto/encoding.ts'
import { importSigningKey, type SigningKey } from '../../shared/crypto/jwk.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack({ login: true })
const url = (p: string) => `${stack.baseUrl}${p}`

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string }
}
interface TokenBody {
  access_token: string
  token_type: string
  expires_in: number
  tenant_id: string
  audience: string
  alg: string
  refresh_token?: string
  refresh_token_expires_in?: number
}

/**
 * Each request comes from its own client address (CF-Connecting-IP, which Miniflare sets only when
 * the client has not), so the per-address login counters of different tests never interfere.
 */
const address = () => `2001:db8::${crypto.randomUUID().slice(0, 4)}:${crypto.randomUUID().slice(0, 4)}`

async function post(p: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url(p), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'cf-connecting-ip': address(), ...headers },
    body: JSON.stringify(body),
  })
}

async function errorOf(res: Response): Promise<ErrorBody['error']> {
  return ((await res.json()) as ErrorBody).error
}

async function serviceToken(body: Record<string, unknown> = {}): Promise<TokenBody> {
  const res = await post('/auth/service-token', {
    client_id: stack.tenantA.serviceAccountId,
    client_secret: stack.tenantA.serviceAccountSecret,
    ...body,
  })
  expect(res.status, await res.clone().text()).toBe(200)
  return (await res.json()) as TokenBody
}

async function login(body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return post(
    '/auth/login',
    { email: stack.tenantA.ownerEmail, password: stack.tenantA.ownerPassword, ...body },
    headers,
  )
}

const get = (p: string, token: string, headers: Record<string, string> = {}) =>
  fetch(url(p), { headers: { authorization: `Bearer ${token}`, ...headers } })

/** The stack's own signing keys (DATA_DIR/signing-keys.json): lets tests mint tokens an attacker could not. */
let signers: Record<string, SigningKey>
const memberKey = generateApiKey('live')

beforeAll(async () => {
  const jwks = JSON.parse(readFileSync(path.join(stack.dataDir, 'signing-keys.json'), 'utf8')) as unknown[]
  const keys = await Promise.all(jwks.map((k) => importSigningKey(k)))
  signers = Object.fromEntries(keys.map((k) => [k.alg, k]))
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(stack.database, { max: 1 })
  try {
    await ensureWorkspace(database.db, {
      tenantId: stack.tenantA.id,
      tenantName: 'Identity workspace',
      planId: 'team',
      ownerEmail: stack.tenantA.ownerEmail,
      keys: [{ name: 'member key', key: memberKey, role: 'member' }],
    })
  } finally {
    await database.close()
  }
})

function mint(
  claims: Partial<ReturnType<typeof buildAccessTokenClaims>> & { ttlSeconds?: number; now?: Date },
) {
  const base = buildAccessTokenClaims({
    sub: `sa:${stack.tenantA.serviceAccountId}`,
    aud: 'external-api',
    iss: 'svc',
    ttlSeconds: claims.ttlSeconds ?? 600,
    tenantId: stack.tenantA.id,
    ...(claims.now ? { now: claims.now } : {}),
  })
  const { ttlSeconds: _t, now: _n, ...rest } = claims
  return signAccessToken({ ...base, ...rest }, signers['ML-DSA-65']!)
}

describe(`service tokens (${stack.kind})`, () => {
  it('exchanges a service account id and secret for an ML-DSA-65 token in OAuth shape', async () => {
    const token = await serviceToken({ audience: 'external-api' })
    expect(token).toMatchObject({
      token_type: 'Bearer',
      expires_in: 900,
      tenant_id: stack.tenantA.id,
      audience: 'external-api',
      alg: 'ML-DSA-65',
    })
    expect(decodeProtectedHeader(token.access_token)).toMatchObject({ alg: 'ML-DSA-65', typ: 'JWT' })
    const claims = decodeJwt(token.access_token)
    expect(Object.keys(claims).sort()).toEqual(['aud', 'exp', 'iat', 'iss', 'jti', 'sub', 'tenant_id'])
    expect(claims).toMatchObject({
      sub: `sa:${stack.tenantA.serviceAccountId}`,
      aud: 'external-api',
      iss: 'svc',
      tenant_id: stack.tenantA.id,
    })
    expect(claims.exp! - claims.iat!).toBe(900)
    const res = await get('/svc/memories', token.access_token)
    expect(res.status).toBe(200)
  })

  it('defaults to the first audience of the account and refuses one it does not hold', async () => {
    expect((await serviceToken()).audience).toBe('internal-service')
    const res = await post('/auth/service-token', {
      client_id: stack.tenantA.serviceAccountId,
      client_secret: stack.tenantA.serviceAccountSecret,
      audience: 'platform',
    })
    // A valid audience of the spec that service accounts never hold: platform tokens are for people.
    expect(res.status).toBe(403)
    const error = await errorOf(res)
    expect(error).toMatchObject({ code: 'audience_not_allowed', param: 'audience', type: 'permission_error' })
    expect(error.message).toContain('POST /auth/login')
    const unknown = await post('/auth/service-token', {
      client_id: stack.tenantA.serviceAccountId,
      client_secret: stack.tenantA.serviceAccountSecret,
      audience: 'everything',
    })
    expect(unknown.status).toBe(400)
    expect((await errorOf(unknown)).param).toBe('audience')
  })

  it('answers a wrong secret and an unknown client id alike: 401 invalid_client', async () => {
    const wrong = await post('/auth/service-token', {
      client_id: stack.tenantA.serviceAccountId,
      client_secret: `svc_sa_${'x'.repeat(43)}`,
    })
    const unknown = await post('/auth/service-token', {
      client_id: crypto.randomUUID(),
      client_secret: stack.tenantA.serviceAccountSecret,
    })
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401)
      expect(await errorOf(res)).toMatchObject({
        code: 'invalid_client',
        message: 'The client_id or client_secret is wrong.',
      })
    }
  })

  it('checks audiences per route: 401 without a token, 403 for the wrong audience (OTLP needs internal-service)', async () => {
    const external = await serviceToken({ audience: 'external-api' })
    const internal = await serviceToken({ audience: 'internal-service' })
    const missing = await fetch(url('/otlp/v1/traces'), { method: 'POST' })
    expect(missing.status).toBe(401)
    const wrongAudience = await fetch(url('/otlp/v1/traces'), {
      method: 'POST',
      headers: { authorization: `Bearer ${external.access_token}`, 'content-type': 'application/json' },
      body: '{}',
    })
    expect(wrongAudience.status).toBe(403)
    expect((await errorOf(wrongAudience)).code).toBe('token_wrong_audience')
    const rightAudience = await fetch(url('/otlp/v1/traces'), {
      method: 'POST',
      headers: { authorization: `Bearer ${internal.access_token}`, 'content-type': 'application/json' },
      body: '{}',
    })
    expect(rightAudience.status).not.toBe(401)
    expect(rightAudience.status).not.toBe(403)
    // internal-service tokens do not open the model API; platform reads accept them.
    expect((await get('/svc/memories', internal.access_token)).status).toBe(403)
    expect((await get('/platform/v1/crypto/policy', internal.access_token)).status).toBe(200)
  })
})

describe(`user login and refresh rotation (${stack.kind})`, () => {
  it('logs in with email and password: a platform token and a refresh token', async () => {
    const res = await login()
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const body = (await res.json()) as TokenBody
    expect(body).toMatchObject({
      token_type: 'Bearer',
      audience: 'platform',
      alg: 'ML-DSA-65',
      tenant_id: stack.tenantA.id,
    })
    expect(body.refresh_token).toMatch(/^svc_rt_[0-9A-Za-z]{43}$/)
    expect(body.refresh_token_expires_in).toBe(2_592_000)
    const claims = decodeJwt(body.access_token)
    expect(claims.sub).toMatch(/^user:[0-9a-f-]{36}$/)
    const policy = await get('/platform/v1/crypto/policy', body.access_token)
    expect(policy.status).toBe(200)
  })

  it('gives an unknown email and a wrong password the same answer', async () => {
    const wrong = await login({ password: 'not the password at all' })
    const unknown = await login({ email: `nobody-${crypto.randomUUID()}@example.test` })
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401)
      expect(await errorOf(res)).toMatchObject({
        code: 'invalid_credentials',
        message: 'The email or password is wrong.',
      })
    }
  })

  it("locks the stranger's address out of an account after 5 failures (429 with Retry-After, even for the right password); the owner signs in from another address", async () => {
    const email = `throttled-${crypto.randomUUID().slice(0, 8)}@example.test`
    const password = 'correct horse battery staple'
    const database = openDatabase(stack.database, { max: 1 })
    try {
      await ensureWorkspace(database.db, {
        tenantName: 'Throttle test',
        planId: 'free',
        ownerEmail: email,
        keys: [],
      })
      await setUserPassword(database.db, email, password)
    } finally {
      await database.close()
    }
    const stranger = { 'cf-connecting-ip': address() }
    for (let i = 0; i < 5; i++) {
      const res = await post('/auth/login', { email, password: `wrong ${i}` }, stranger)
      expect(res.status).toBe(401)
    }
    const locked = await post('/auth/login', { email, password }, stranger)
    expect(locked.status).toBe(429)
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(800)
    expect(await errorOf(locked)).toMatchObject({
      code: 'login_throttled',
      message: expect.stringMatching(
        /^Too many failed sign-ins to this account from your address; try again in \d+ s\.$/,
      ),
    })
    // The owner, from their own address, is not locked out by a stranger's guesses.
    expect((await post('/auth/login', { email, password })).status).toBe(200)
  })

  it('locks a client address after 20 failures across accounts', async () => {
    const from = address()
    for (let i = 0; i < 20; i++) {
      const res = await post(
        '/auth/login',
        { email: `spray-${i}@example.test`, password: 'guess' },
        { 'cf-connecting-ip': from },
      )
      expect(res.status).toBe(401)
    }
    const locked = await login({}, { 'cf-connecting-ip': from })
    expect(locked.status).toBe(429)
    expect((await login()).status).toBe(200) // another address is not affected
  })

  it('rotates refresh tokens; reusing a spent one revokes the whole family', async () => {
    const first = (await (await login()).json()) as TokenBody
    const rotated = await post('/auth/token/refresh', { refresh_token: first.refresh_token })
    expect(rotated.status).toBe(200)
    const second = (await rotated.json()) as TokenBody
    expect(second.refresh_token).not.toBe(first.refresh_token)
    expect(second.access_token).not.toBe(first.access_token)
    expect((await get('/platform/v1/crypto/policy', second.access_token)).status).toBe(200)

    const reuse = await post('/auth/token/refresh', { refresh_token: first.refresh_token })
    expect(reuse.status).toBe(401)
    expect((await errorOf(reuse)).code).toBe('refresh_token_reused')
    const descendant = await post('/auth/token/refresh', { refresh_token: second.refresh_token })
    expect(descendant.status).toBe(401)
    const revoked = await errorOf(descendant)
    expect(revoked.code).toBe('refresh_token_revoked')
    expect(revoked.message).toMatch(/used twice/)

    const garbage = await post('/auth/token/refresh', { refresh_token: 'svc_rt_nope' })
    expect((await errorOf(garbage)).code).toBe('refresh_token_invalid')
  })

  it('lets only one of two concurrent refreshes with the same token win', async () => {
    const start = (await (await login()).json()) as TokenBody
    const results = await Promise.all([
      post('/auth/token/refresh', { refresh_token: start.refresh_token }),
      post('/auth/token/refresh', { refresh_token: start.refresh_token }),
    ])
    expect(results.map((r) => r.status).sort()).toEqual([200, 401])
  })
})

describe(`OpenAPI (${stack.kind})`, () => {
  it('documents the token endpoints with OAuth field names, and the admin API', async () => {
    const doc = (await (await fetch(url('/openapi.json'))).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> }
    }
    for (const path of ['/auth/service-token', '/auth/login', '/auth/token/refresh']) {
      expect(doc.paths[path]?.post?.responses).toHaveProperty('200')
    }
    expect(doc.paths['/.well-known/jwks.json']?.get).toBeDefined()
    expect(Object.keys(doc.components.schemas.UserTokenResponse?.properties ?? {})).toEqual(
      expect.arrayContaining(['access_token', 'token_type', 'expires_in', 'refresh_token']),
    )
    expect(Object.keys(doc.paths['/platform/v1/crypto/policy'] ?? {}).sort()).toEqual(['get', 'patch', 'put'])
    expect(doc.paths['/platform/v1/service-accounts/{serviceAccountId}/rotate']?.post).toBeDefined()
    expect(doc.paths['/platform/v1/crypto/algorithms']?.get).toBeDefined()
  })
})

describe(`JWKS and interoperability (${stack.kind})`, () => {
  it('publishes ML-DSA-65, ML-DSA-87 and Ed25519 public keys with kids, and no private members', async () => {
    const res = await fetch(url('/.well-known/jwks.json'))
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toContain('max-age')
    const jwks = (await res.json()) as { keys: Record<string, string>[] }
    expect(jwks.keys.map((k) => k.alg).sort()).toEqual(['EdDSA', 'ML-DSA-65', 'ML-DSA-87'])
    for (const key of jwks.keys) {
      expect(key.kid).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(key.use).toBe('sig')
      expect(key).not.toHaveProperty('priv')
      expect(key).not.toHaveProperty('d')
    }
    expect(jwks.keys.find((k) => k.alg === 'ML-DSA-65')).toMatchObject({ kty: 'AKP' })
  })

  it('an ML-DSA-65 token verifies with an independent implementation (OpenSSL via Python cryptography)', async () => {
    const token = (await serviceToken()).access_token
    const jwks = (await (await fetch(url('/.well-known/jwks.json'))).json()) as {
      keys: Record<string, string>[]
    }
    const { kid } = decodeProtectedHeader(token)
    const jwk = jwks.keys.find((k) => k.kid === kid)!
    const verifier = `
import base64, json, sys
from cryptography.hazmat.primitives.asymmetric import mldsa
data = json.load(sys.stdin)
b64 = lambda s: base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))
h, p, s = data['token'].split('.')
key = mldsa.MLDSA65PublicKey.from_public_bytes(b64(data['pub']))
key.verify(b64(s), (h + '.' + p).encode())
try:
    key.verify(b64(s), (h + '.' + p + 'x').encode())
    print('TAMPERED-ACCEPTED')
except Exception:
    print('VERIFIED')
`
    const result = spawnSync('python3', ['-c', verifier], {
      input: JSON.stringify({ token, pub: jwk.pub }),
      encoding: 'utf8',
    })
    expect(result.stderr).toBe('')
    expect(result.stdout.trim()).toBe('VERIFIED')
  })

  it('an EdDSA token (where the policy allows classical) verifies with jose against the published JWKS', async () => {
    const token = await serviceToken({ alg: 'EdDSA', audience: 'external-api' })
    expect(token.alg).toBe('EdDSA')
    const jwks = (await (await fetch(url('/.well-known/jwks.json'))).json()) as Parameters<
      typeof createLocalJWKSet
    >[0]
    const { payload, protectedHeader } = await jwtVerify(token.access_token, createLocalJWKSet(jwks), {
      issuer: 'svc',
      audience: 'external-api',
      algorithms: ['EdDSA'],
    })
    expect(protectedHeader.alg).toBe('EdDSA')
    expect(payload.tenant_id).toBe(stack.tenantA.id)
    expect((await get('/svc/memories', token.access_token)).status).toBe(200)
  })
})

describe(`attacks on the token verifier, through the gateway (${stack.kind})`, () => {
  const seg = (v: unknown) => base64urlEncode(utf8.encode(JSON.stringify(v)))

  async function refused(token: string, status: number, code: string, headers: Record<string, string> = {}) {
    const res = await get('/svc/memories', token, headers)
    expect(res.status, `${code}: ${await res.clone().text()}`).toBe(status)
    expect((await errorOf(res)).code).toBe(code)
  }

  it('alg none', async () => {
    const genuine = (await serviceToken({ audience: 'external-api' })).access_token
    const [, payload] = genuine.split('.')
    await refused(`${seg({ alg: 'none', typ: 'JWT' })}.${payload}.`, 401, 'token_algorithm_not_allowed')
  })

  it('HS256 signed with the public key as the HMAC secret', async () => {
    const jwks = (await (await fetch(url('/.well-known/jwks.json'))).json()) as {
      keys: Record<string, string>[]
    }
    const mlDsa = jwks.keys.find((k) => k.alg === 'ML-DSA-65')!
    const forged = await new SignJWT({ tenant_id: stack.tenantA.id })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: mlDsa.kid })
      .setSubject(`sa:${stack.tenantA.serviceAccountId}`)
      .setAudience('external-api')
      .setIssuer('svc')
      .setIssuedAt()
      .setExpirationTime('10m')
      .setJti(crypto.randomUUID())
      .sign(utf8.encode(mlDsa.pub!))
    await refused(forged, 401, 'token_algorithm_not_allowed')
  })

  it('a swapped kid (an Ed25519 header naming the ML-DSA key)', async () => {
    const token = (await serviceToken({ alg: 'EdDSA', audience: 'external-api' })).access_token
    const [header, payload, signature] = token.split('.') as [string, string, string]
    const decoded = decodeProtectedHeader(token)
    const swapped = seg({ ...decoded, kid: signers['ML-DSA-65']!.kid })
    expect(swapped).not.toBe(header)
    await refused(`${swapped}.${payload}.${signature}`, 401, 'token_key_mismatch')
  })

  it('a tampered payload (another tenant_id) under a genuine signature', async () => {
    const token = (await serviceToken({ audience: 'external-api' })).access_token
    const [header, , signature] = token.split('.') as [string, string, string]
    const claims = { ...decodeJwt(token), tenant_id: stack.tenantB.id }
    await refused(`${header}.${seg(claims)}.${signature}`, 401, 'token_signature_invalid')
  })

  it('an expired token (beyond the 30 s leeway)', async () => {
    const expired = await mint({ ttlSeconds: 60, now: new Date(Date.now() - 5 * 60_000) })
    await refused(expired, 401, 'token_expired')
  })

  it('a genuine token for another audience is 403', async () => {
    const internal = (await serviceToken({ audience: 'internal-service' })).access_token
    await refused(internal, 403, 'token_wrong_audience')
  })

  it("another tenant's token used on this tenant is 403", async () => {
    const token = (await serviceToken({ audience: 'external-api' })).access_token
    await refused(token, 403, 'tenant_mismatch', { 'x-svc-tenant': stack.tenantB.id })
    const viaQuery = await fetch(url(`/svc/memories?tenantId=${stack.tenantB.id}`), {
      headers: { authorization: `Bearer ${token}` },
    })
    expect(viaQuery.status).toBe(403)
  })

  it('a genuinely signed token that lives longer than the issuer grants (exp 1e300, or two hours)', async () => {
    const signer = signers['ML-DSA-65']!
    const signed = async (claims: Record<string, unknown>) => {
      const input = `${seg({ alg: signer.alg, kid: signer.kid, typ: 'JWT' })}.${seg(claims)}`
      return `${input}.${base64urlEncode(await signer.sign(utf8.encode(input)))}`
    }
    const base = buildAccessTokenClaims({
      sub: `sa:${stack.tenantA.serviceAccountId}`,
      aud: 'external-api',
      iss: 'svc',
      ttlSeconds: 600,
      tenantId: stack.tenantA.id,
    })
    expect((await get('/svc/memories', await signed(base))).status).toBe(200)
    await refused(await signed({ ...base, exp: 1e300 }), 401, 'token_lifetime_too_long')
    await refused(await signed({ ...base, exp: base.iat + 7200 }), 401, 'token_lifetime_too_long')
  })

  it('a token from another issuer, and one for a principal that does not exist', async () => {
    await refused(await mint({ iss: 'https://evil.example' }), 401, 'token_issuer_invalid')
    await refused(await mint({ sub: `sa:${crypto.randomUUID()}` }), 401, 'token_principal_revoked')
  })
})

describe(`service-account admin API (${stack.kind})`, () => {
  const owner = { authorization: `Bearer ${stack.tenantA.liveKey}` }
  const admin = { ...owner, 'content-type': 'application/json' }

  it('creates, lists, rotates and revokes; the secret is shown once and stored only as a hash', async () => {
    const created = await fetch(url('/platform/v1/service-accounts'), {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ name: 'ci deployer', audiences: ['external-api'] }),
    })
    expect(created.status).toBe(201)
    const account = (await created.json()) as { id: string; secret: string; audiences: string[] }
    expect(account.secret).toMatch(/^svc_sa_[0-9A-Za-z]{43}$/)
    expect(account.audiences).toEqual(['external-api'])

    const list = (await (await fetch(url('/platform/v1/service-accounts'), { headers: admin })).json()) as {
      data: Record<string, unknown>[]
    }
    const listed = list.data.find((a) => a.id === account.id)!
    expect(listed).toMatchObject({ name: 'ci deployer', revoked_at: null })
    expect(JSON.stringify(list)).not.toContain(account.secret)

    const exchange = (secret: string) =>
      post('/auth/service-token', { client_id: account.id, client_secret: secret })
    const first = await exchange(account.secret)
    expect(first.status).toBe(200)
    const token = ((await first.json()) as TokenBody).access_token
    expect((await get('/svc/memories', token)).status).toBe(200)

    const rotated = await fetch(url(`/platform/v1/service-accounts/${account.id}/rotate`), {
      method: 'POST',
      headers: admin,
      body: '{}',
    })
    expect(rotated.status).toBe(200)
    const { secret: newSecret } = (await rotated.json()) as { secret: string }
    expect((await exchange(account.secret)).status).toBe(401)
    expect((await exchange(newSecret)).status).toBe(200)

    const revoked = await fetch(url(`/platform/v1/service-accounts/${account.id}`), {
      method: 'DELETE',
      headers: owner,
    })
    expect(revoked.status).toBe(200)
    expect(((await revoked.json()) as { revoked_at: string | null }).revoked_at).not.toBeNull()
    const afterRevoke = await exchange(newSecret)
    expect(afterRevoke.status).toBe(401)
    expect((await errorOf(afterRevoke)).code).toBe('service_account_revoked')
    const oldToken = await get('/svc/memories', token)
    expect(oldToken.status).toBe(401)
    expect((await errorOf(oldToken)).code).toBe('token_principal_revoked')
  })

  it('refuses members (403 insufficient_role) and unknown accounts (404)', async () => {
    const asMember = await fetch(url('/platform/v1/service-accounts'), {
      method: 'POST',
      headers: { authorization: `Bearer ${memberKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'sneaky' }),
    })
    expect(asMember.status).toBe(403)
    expect((await errorOf(asMember)).code).toBe('insufficient_role')
    const missing = await fetch(url(`/platform/v1/service-accounts/${crypto.randomUUID()}`), {
      method: 'DELETE',
      headers: owner,
    })
    expect(missing.status).toBe(404)
    expect((await errorOf(missing)).code).toBe('service_account_not_found')
  })
})
