import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  buildAccessTokenClaims,
  generateSigningKey,
  type SigningKey,
  signAccessToken,
  type VerificationKey,
} from '../../../shared/crypto'
import { base64urlEncode, utf8 } from '../../../shared/crypto/encoding'
import { AppError } from '../../../shared/http/errors'
import {
  clearAccessTokenCaches,
  type PrincipalRecord,
  type SessionState,
  type TokenAuthDeps,
  verifyBearerToken,
} from './access-token-auth'

const TENANT = '4ea944f0-8111-43b6-ba0d-e9b3260311bb'
const USER = 'user:2801e294-e86e-4719-a1e3-1539ee592c00'
const SA = 'sa:9af1df20-5dc0-4d1e-82bc-c3d4991ce873'

let mlDsa: SigningKey
let ed: SigningKey

beforeAll(async () => {
  mlDsa = await generateSigningKey('ML-DSA-65')
  ed = await generateSigningKey('EdDSA')
})

/**
 * Deps over an in-memory key set, principal table and refresh-token families (by id; absent:
 * unknown), counting signature verifications and lookups.
 */
function deps(
  principals: Record<string, PrincipalRecord | null> = {},
  sessions: Record<string, SessionState> = {},
) {
  const counts = { verifies: 0, lookups: 0, sessionLookups: 0 }
  const counted = (key: SigningKey): VerificationKey => ({
    ...key,
    verify: (data, signature) => {
      counts.verifies++
      return key.verify(data, signature)
    },
  })
  const value: TokenAuthDeps = {
    resolveKey: async (kid) => [mlDsa, ed].map(counted).find((k) => k.kid === kid),
    lookupPrincipal: async (tenantId, subject) => {
      counts.lookups++
      const sub = subject.kind === 'user' ? `user:${subject.id}` : `sa:${subject.id}`
      return principals[`${tenantId} ${sub}`] ?? null
    },
    lookupSession: async (_tenantId, _subject, sessionId) => {
      counts.sessionLookups++
      return sessions[sessionId] ?? { revoked: true, reason: null }
    },
    issuer: 'svc',
    leewaySeconds: 30,
    maxLifetimeSeconds: 900,
    principalTtlMs: 30_000,
  }
  return { value, counts }
}

const member = { role: 'owner' as const, planId: 'team', scopes: [] }

async function token(
  key: SigningKey,
  overrides: {
    sub?: string
    aud?: 'platform' | 'internal-service' | 'external-api'
    tenantId?: string
    ttl?: number
    now?: Date
    sessionId?: string
    /** An OAuth token bound to this resource (its `aud`). */
    resource?: string
  } = {},
) {
  return signAccessToken(
    buildAccessTokenClaims({
      sub: overrides.sub ?? USER,
      aud: overrides.resource ?? overrides.aud ?? 'platform',
      iss: 'svc',
      ttlSeconds: overrides.ttl ?? 600,
      ...(overrides.tenantId === '' ? {} : { tenantId: overrides.tenantId ?? TENANT }),
      ...(overrides.now ? { now: overrides.now } : {}),
      ...(overrides.sessionId ? { sessionId: overrides.sessionId } : {}),
      ...(overrides.resource ? { scope: 'mcp:tools', clientId: 'svc_oc_test' } : {}),
    }),
    key,
  )
}

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => new Error('accepted'),
    (e: unknown) => e,
  )
  if (!(error instanceof AppError)) throw error
  return error
}

beforeEach(() => clearAccessTokenCaches())

describe('gateway access-token authentication', () => {
  it('turns a verified token into the identity families receive', async () => {
    const d = deps({ [`${TENANT} ${USER}`]: member })
    const identity = await verifyBearerToken(await token(mlDsa), ['platform', 'internal-service'], d.value)
    expect(identity).toMatchObject({
      tenantId: TENANT,
      role: 'owner',
      planId: 'team',
      principal: { kind: 'access_token', subject: USER, audience: 'platform', algorithm: 'ML-DSA-65' },
    })
  })

  it('verifies a hot token once: later requests hit the per-isolate cache', async () => {
    const d = deps({ [`${TENANT} ${USER}`]: member })
    const jwt = await token(mlDsa)
    for (let i = 0; i < 5; i++) await verifyBearerToken(jwt, ['platform'], d.value)
    expect(d.counts).toEqual({ verifies: 1, lookups: 1, sessionLookups: 0 })
  })

  it('checks the audience per route: 403 token_wrong_audience for a genuine token of another audience', async () => {
    const d = deps({ [`${TENANT} ${SA}`]: { role: 'member', planId: 'team', scopes: [] } })
    const jwt = await token(mlDsa, { sub: SA, aud: 'external-api' })
    await expect(verifyBearerToken(jwt, ['external-api', 'platform'], d.value)).resolves.toMatchObject({
      principal: { audience: 'external-api' },
    })
    const wrong = await refusal(verifyBearerToken(jwt, ['internal-service'], d.value))
    expect(wrong).toMatchObject({ status: 403, code: 'token_wrong_audience' })
    expect(wrong.message).toContain('"internal-service"')
  })

  it('refuses an expired token, also once it is cached', async () => {
    const d = deps({ [`${TENANT} ${USER}`]: member })
    const old = await token(mlDsa, { ttl: 60, now: new Date(Date.now() - 10 * 60_000) })
    expect(await refusal(verifyBearerToken(old, ['platform'], d.value))).toMatchObject({
      status: 401,
      code: 'token_expired',
    })
    // A token verified (and cached) while valid, checked again on a clock moved past its exp.
    const issuedAt = new Date('2026-01-01T00:00:00Z')
    const short = await token(mlDsa, { ttl: 60, now: issuedAt })
    let clock = issuedAt.getTime()
    const cached = deps({ [`${TENANT} ${USER}`]: member })
    const strict = { ...cached.value, leewaySeconds: 0, now: () => clock }
    await verifyBearerToken(short, ['platform'], strict)
    clock += 59_000
    await expect(verifyBearerToken(short, ['platform'], strict)).resolves.toMatchObject({ tenantId: TENANT })
    clock += 1_000
    expect(await refusal(verifyBearerToken(short, ['platform'], strict))).toMatchObject({
      code: 'token_expired',
    })
    expect(cached.counts.verifies).toBe(1) // the expiry was found in the cache, not by verifying again
  })

  it('tolerates JWT_LEEWAY_SECONDS of clock skew past exp, not more', async () => {
    const d = deps({ [`${TENANT} ${USER}`]: member })
    const issuedAt = new Date('2026-01-01T00:00:00Z')
    const jwt = await token(mlDsa, { ttl: 60, now: issuedAt })
    const at = (ms: number) => ({ ...d.value, now: () => issuedAt.getTime() + ms })
    await expect(verifyBearerToken(jwt, ['platform'], at(60_000 + 29_000))).resolves.toBeDefined()
    clearAccessTokenCaches()
    expect(await refusal(verifyBearerToken(jwt, ['platform'], at(60_000 + 30_000)))).toMatchObject({
      code: 'token_expired',
    })
  })

  it('looks a principal up again once its cache entry is older than principalTtlMs', async () => {
    const principals: Record<string, PrincipalRecord | null> = { [`${TENANT} ${USER}`]: member }
    const d = deps(principals)
    let clock = Date.now()
    const timed = { ...d.value, now: () => clock }
    const jwt = await token(mlDsa)
    await verifyBearerToken(jwt, ['platform'], timed)
    principals[`${TENANT} ${USER}`] = null // removed from the workspace
    clock += 29_000
    await expect(verifyBearerToken(jwt, ['platform'], timed)).resolves.toBeDefined()
    clock += 1_000
    expect(await refusal(verifyBearerToken(jwt, ['platform'], timed))).toMatchObject({
      code: 'token_principal_revoked',
    })
    expect(d.counts.lookups).toBe(2)
  })

  it("refuses a genuine token that lives longer than the issuer's configured maximum", async () => {
    const d = deps({ [`${TENANT} ${USER}`]: member })
    const long = await refusal(verifyBearerToken(await token(mlDsa, { ttl: 3600 }), ['platform'], d.value))
    expect(long).toMatchObject({ status: 401, code: 'token_lifetime_too_long' })
    await expect(
      verifyBearerToken(await token(mlDsa, { ttl: 3600 }), ['platform'], {
        ...d.value,
        maxLifetimeSeconds: 3600,
      }),
    ).resolves.toMatchObject({ tenantId: TENANT })
  })

  it('refuses a token without tenant_id and a subject that is neither a user nor a service account', async () => {
    const d = deps()
    expect(
      await refusal(verifyBearerToken(await token(mlDsa, { tenantId: '' }), ['platform'], d.value)),
    ).toMatchObject({ status: 401, code: 'token_claims_invalid' })
    expect(
      await refusal(verifyBearerToken(await token(mlDsa, { sub: 'admin' }), ['platform'], d.value)),
    ).toMatchObject({ status: 401, code: 'token_claims_invalid' })
  })

  it('refuses tokens of a removed member or a revoked service account', async () => {
    const d = deps()
    const removed = await refusal(verifyBearerToken(await token(ed), ['platform'], d.value))
    expect(removed).toMatchObject({ status: 401, code: 'token_principal_revoked' })
    expect(removed.message).toMatch(/no longer a member/)
    const revoked = await refusal(verifyBearerToken(await token(ed, { sub: SA }), ['platform'], d.value))
    expect(revoked.message).toMatch(/service account .* revoked/)
  })

  it('remembers a refused token briefly, so a flood of it costs no signature checks', async () => {
    const d = deps({ [`${TENANT} ${USER}`]: member })
    const jwt = await token(mlDsa)
    const [h, p, s] = jwt.split('.') as [string, string, string]
    const tampered = `${h}.${p.slice(0, -2)}${p.slice(-2) === 'fQ' ? 'fX' : 'fQ'}.${s}`
    for (let i = 0; i < 3; i++) {
      const err = await refusal(verifyBearerToken(tampered, ['platform'], d.value))
      expect(err.status).toBe(401)
    }
    expect(d.counts.verifies).toBeLessThanOrEqual(1)
  })

  describe('tokens issued from a refresh-token family (sid)', () => {
    const SESSION = '6f1d4c52-8d7e-4b43-9a55-3c1f0b2f7e10'
    const RESOURCE = 'https://api.example.com/mcp'

    it('are refused once the family is revoked, within principalTtlMs, naming why', async () => {
      const sessions: Record<string, SessionState> = { [SESSION]: { revoked: false } }
      const d = deps({ [`${TENANT} ${USER}`]: member }, sessions)
      let clock = Date.now()
      const timed = { ...d.value, now: () => clock }
      const jwt = await token(mlDsa, { sessionId: SESSION })
      await expect(verifyBearerToken(jwt, ['platform'], timed)).resolves.toMatchObject({ tenantId: TENANT })
      sessions[SESSION] = { revoked: true, reason: 'reuse_detected' }
      clock += 29_000
      await expect(verifyBearerToken(jwt, ['platform'], timed)).resolves.toBeDefined()
      clock += 1_000
      const refused = await refusal(verifyBearerToken(jwt, ['platform'], timed))
      expect(refused).toMatchObject({ status: 401, code: 'token_revoked' })
      expect(refused.message).toBe(
        'The login session this token was issued from has been revoked because one of its refresh tokens was used twice; log in again.',
      )
      expect(refused.headers['www-authenticate']).toContain('error="invalid_token"')
      expect(d.counts.sessionLookups).toBe(2)
    })

    it('an OAuth token of a revoked authorization is refused at its resource, every other token of the family too', async () => {
      const d = deps(
        { [`${TENANT} ${USER}`]: member },
        { [SESSION]: { revoked: true, reason: 'authorization_code_reused' } },
      )
      const first = await token(mlDsa, { sessionId: SESSION, resource: RESOURCE })
      const second = await token(ed, { sessionId: SESSION, resource: RESOURCE })
      for (const jwt of [first, second]) {
        const refused = await refusal(verifyBearerToken(jwt, ['platform'], d.value, RESOURCE))
        expect(refused).toMatchObject({ status: 401, code: 'token_revoked' })
        expect(refused.message).toBe(
          'The authorization this token was issued from has been revoked because its authorization code was used twice; authorize again.',
        )
      }
      // One lookup for the family, whatever the number of its tokens.
      expect(d.counts.sessionLookups).toBe(1)
    })

    it('a family the lookup does not find (another user, or deleted) is revoked', async () => {
      const d = deps({ [`${TENANT} ${USER}`]: member }, {})
      const jwt = await token(mlDsa, { sessionId: SESSION })
      expect(await refusal(verifyBearerToken(jwt, ['platform'], d.value))).toMatchObject({
        code: 'token_revoked',
        message: 'The login session this token was issued from has been revoked; log in again.',
      })
    })

    it('tokens without sid (service accounts) never ask for a family', async () => {
      const d = deps({ [`${TENANT} ${SA}`]: { role: 'member', planId: 'team', scopes: [] } })
      await verifyBearerToken(await token(mlDsa, { sub: SA, aud: 'external-api' }), ['external-api'], d.value)
      expect(d.counts.sessionLookups).toBe(0)
    })

    it('a sid that is not a family id is refused before any lookup', async () => {
      const d = deps({ [`${TENANT} ${USER}`]: member })
      // Signed by hand: the issuer's own schema would refuse to sign it.
      const claims = {
        ...buildAccessTokenClaims({
          sub: USER,
          aud: 'platform',
          iss: 'svc',
          ttlSeconds: 600,
          tenantId: TENANT,
        }),
        sid: "x' or 1=1",
      }
      const input = `${base64urlEncode(utf8.encode(JSON.stringify({ alg: mlDsa.alg, kid: mlDsa.kid, typ: 'JWT' })))}.${base64urlEncode(utf8.encode(JSON.stringify(claims)))}`
      const jwt = `${input}.${base64urlEncode(await mlDsa.sign(utf8.encode(input)))}`
      expect(await refusal(verifyBearerToken(jwt, ['platform'], d.value))).toMatchObject({
        status: 401,
        code: 'token_claims_invalid',
      })
      expect(d.counts.sessionLookups).toBe(0)
    })
  })
})
