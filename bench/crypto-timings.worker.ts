/**
 * A worker for bench/crypto-timings.ts: runs the product's own crypto code inside workerd, N
 * operations per request, so the benchmark can time them from outside (workerd's clock does not
 * advance during pure computation in production, so the worker does not time itself).
 *   /sign?alg=&n=     signAccessToken n times      /verify?alg=&n=  verifyAccessToken n times
 *   /self-test        a fresh self-test suite      /argon2?op=hash|verify  one Argon2id operation
 */
import {
  buildAccessTokenClaims,
  buildJwks,
  createSelfTestSuite,
  generateSigningKey,
  hashPassword,
  JWS_ALGORITHMS,
  type JwsAlgorithm,
  type SigningKey,
  signAccessToken,
  verifyAccessToken,
  verifyPassword,
} from '../shared/crypto'

const ISSUER = 'https://auth.svc.test'
const keys = new Map<JwsAlgorithm, { key: SigningKey; token: string }>()
let storedPassword: string | undefined

const claims = () =>
  buildAccessTokenClaims({ sub: 'sa:bench', aud: 'platform', iss: ISSUER, ttlSeconds: 600, tenantId: 't' })

// Randomness is not available at global scope in workerd: keys are made on first use.
async function prepared(alg: JwsAlgorithm) {
  let entry = keys.get(alg)
  if (!entry) {
    const key = await generateSigningKey(alg)
    entry = { key, token: await signAccessToken(claims(), key) }
    keys.set(alg, entry)
  }
  return entry
}

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url)
    const n = Math.min(Number(url.searchParams.get('n') ?? '1'), 2000)
    const alg = (url.searchParams.get('alg') ?? 'ML-DSA-65') as JwsAlgorithm
    if (url.pathname === '/sign' || url.pathname === '/verify') {
      if (!JWS_ALGORITHMS.includes(alg)) return new Response(`unknown alg ${alg}`, { status: 400 })
      const { key, token } = await prepared(alg)
      const jwks = buildJwks([key])
      let length = 0
      for (let i = 0; i < n; i++) {
        if (url.pathname === '/sign') length = (await signAccessToken(claims(), key)).length
        else
          await verifyAccessToken(token, {
            keys: jwks,
            allowedAlgorithms: [alg],
            audience: 'platform',
            issuer: ISSUER,
          })
      }
      return Response.json({ n, length: length || token.length })
    }
    if (url.pathname === '/self-test') {
      const report = await createSelfTestSuite().run()
      return Response.json({ passed: report.passed, tests: report.tests.length })
    }
    if (url.pathname === '/argon2') {
      if (url.searchParams.get('op') === 'verify') {
        storedPassword ??= await hashPassword('correct horse battery staple')
        return Response.json({ ok: await verifyPassword('correct horse battery staple', storedPassword) })
      }
      return Response.json({ stored: await hashPassword('correct horse battery staple') })
    }
    return new Response('ok')
  },
}
