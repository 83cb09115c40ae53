/**
 * Revocation, red-team style: families of tokens (OAuth authorizations of MCP clients, and password
 * logins) are driven through random sequences of refreshes, uses, authorization-code replays and
 * refresh-token reuses (sequential and racing), and once a family is revoked every access token it
 * ever issued is refused on every route that accepts it, within the gateway's credential cache TTL
 * (the stack runs with a short API_KEY_CACHE_TTL_SECONDS, so the test waits one TTL, not 30 s).
 * Families that were never attacked keep working throughout: revocation reaches the family, not
 * the person or the client.
 *
 * The sequence is random but reproducible: the seed is in the test's name (REVOCATION_FUZZ_SEED
 * replays one).
 */
import { decodeJwt } from 'jose'
import { describe, expect, it } from 'vitest'
import { base64urlEncode, utf8 } from '../../shared/crypto/encoding.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack({ login: true })
const BASE = stack.baseUrl
const RESOURCE = `${BASE}/mcp`
const REDIRECT = 'http://127.0.0.1:33419/fuzz/callback'
/** The person whose logins and OAuth authorizations are attacked: the owner of this file's workspace. */
const owner = stack.tenantA
const SEED = Number(process.env.REVOCATION_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const FAMILIES = 8

/** mulberry32: a small seeded generator, so a failing sequence can be replayed. */
function generator(seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    below: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!,
  }
}

const address = () => `2001:db8:f::${crypto.randomUUID().slice(0, 4)}:${crypto.randomUUID().slice(0, 4)}`

async function postForm(pathname: string, body: Record<string, string>) {
  const res = await fetch(`${BASE}${pathname}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'cf-connecting-ip': address() },
    body: new URLSearchParams(body),
  })
  return res
}

async function postJson(pathname: string, body: unknown) {
  return fetch(`${BASE}${pathname}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'cf-connecting-ip': address() },
    body: JSON.stringify(body),
  })
}

interface Tokens {
  access: string
  refresh: string
}

/** One refresh-token family and every access token it issued. */
interface Family {
  kind: 'oauth' | 'login'
  accessTokens: string[]
  /** Refresh tokens already spent (presenting one again is a reuse). */
  spent: string[]
  current: string
  /** OAuth: the client and the code the family was started with (presenting it again is a replay). */
  clientId?: string
  code?: { code: string; verifier: string }
  revoked: boolean
  log: string[]
}

async function pkce() {
  const verifier = base64urlEncode(crypto.getRandomValues(new Uint8Array(48)))
  const challenge = base64urlEncode(
    new Uint8Array(await crypto.subtle.digest('SHA-256', utf8.encode(verifier))),
  )
  return { verifier, challenge }
}

async function register(): Promise<string> {
  const res = await postJson('/oauth/register', { client_name: 'revocation fuzz', redirect_uris: [REDIRECT] })
  expect(res.status, await res.clone().text()).toBe(201)
  return ((await res.json()) as { client_id: string }).client_id
}

/** The person allows the client at the consent page; the client gets a code. */
async function authorize(clientId: string) {
  const { verifier, challenge } = await pkce()
  const res = await postForm('/oauth/authorize', {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource: RESOURCE,
    scope: 'mcp:tools mcp:resources',
    state: 'fuzz',
    email: owner.ownerEmail,
    password: owner.ownerPassword,
    tenant_id: stack.tenantA.id,
    decision: 'allow',
  })
  expect(res.status, await res.clone().text()).toBe(302)
  const code = new URL(res.headers.get('location')!).searchParams.get('code')
  expect(code).toBeTruthy()
  return { code: code!, verifier }
}

async function exchangeCode(clientId: string, code: { code: string; verifier: string }) {
  return postForm('/oauth/token', {
    grant_type: 'authorization_code',
    client_id: clientId,
    code: code.code,
    code_verifier: code.verifier,
    redirect_uri: REDIRECT,
    resource: RESOURCE,
  })
}

async function tokensOf(res: Response): Promise<Tokens> {
  expect(res.status, await res.clone().text()).toBe(200)
  const body = (await res.json()) as { access_token: string; refresh_token: string }
  return { access: body.access_token, refresh: body.refresh_token }
}

async function startFamily(kind: Family['kind']): Promise<Family> {
  if (kind === 'oauth') {
    const clientId = await register()
    const code = await authorize(clientId)
    const tokens = await tokensOf(await exchangeCode(clientId, code))
    return {
      kind,
      clientId,
      code,
      accessTokens: [tokens.access],
      spent: [],
      current: tokens.refresh,
      revoked: false,
      log: ['start'],
    }
  }
  const tokens = await tokensOf(
    await postJson('/auth/login', {
      email: owner.ownerEmail,
      password: owner.ownerPassword,
      tenant_id: stack.tenantA.id,
    }),
  )
  return {
    kind,
    accessTokens: [tokens.access],
    spent: [],
    current: tokens.refresh,
    revoked: false,
    log: ['start'],
  }
}

function refreshRequest(family: Family, refreshToken: string) {
  return family.kind === 'oauth'
    ? postForm('/oauth/token', {
        grant_type: 'refresh_token',
        client_id: family.clientId!,
        refresh_token: refreshToken,
      })
    : postJson('/auth/token/refresh', { refresh_token: refreshToken })
}

/** The refusal of a refresh or code exchange: 400 invalid_grant (OAuth) or 401 (login refresh). */
function expectGrantRefused(family: Family, res: Response) {
  expect(res.status, `${family.log.join(' → ')}`).toBe(family.kind === 'oauth' ? 400 : 401)
}

/** Rotates the current refresh token; after a revocation it must be refused and issue nothing. */
async function refresh(family: Family): Promise<void> {
  family.log.push('refresh')
  const res = await refreshRequest(family, family.current)
  if (family.revoked) return expectGrantRefused(family, res)
  const tokens = await tokensOf(res)
  family.spent.push(family.current)
  family.current = tokens.refresh
  family.accessTokens.push(tokens.access)
}

/** Presents a refresh token that was already spent: the family is revoked. */
async function reuseRefresh(family: Family, rng: ReturnType<typeof generator>): Promise<void> {
  if (family.spent.length === 0) await refresh(family)
  family.log.push('reuse-refresh')
  expectGrantRefused(family, await refreshRequest(family, rng.pick(family.spent)))
  family.revoked = true
}

/** Two refreshes with the same token at once: one wins (its tokens are of the family), one is a reuse. */
async function raceRefresh(family: Family): Promise<void> {
  family.log.push('race-refresh')
  const presented = family.current
  const answers = await Promise.all([refreshRequest(family, presented), refreshRequest(family, presented)])
  const won = answers.filter((r) => r.status === 200)
  if (!family.revoked) expect(won.length, family.log.join(' → ')).toBeLessThanOrEqual(1)
  else expect(won).toHaveLength(0)
  for (const res of won) {
    const tokens = await tokensOf(res)
    family.accessTokens.push(tokens.access)
    family.current = tokens.refresh
  }
  for (const res of answers) if (res.status !== 200) expectGrantRefused(family, res)
  family.spent.push(presented)
  // The loser presented a token the winner had spent: the family is revoked either way.
  family.revoked = true
}

/** Presents the family's authorization code again (OAuth only): the family is revoked. */
async function replayCode(family: Family): Promise<void> {
  family.log.push('replay-code')
  const res = await exchangeCode(family.clientId!, family.code!)
  expect(res.status).toBe(400)
  expect(((await res.json()) as { error: string }).error).toBe('invalid_grant')
  family.revoked = true
}

const mcpCall = (token: string) =>
  fetch(RESOURCE, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'models_list', arguments: {} },
    }),
  })

/** Every route kind an access token may be presented at, and what each answers a working token. */
const ROUTES: { name: string; call: (token: string) => Promise<Response>; takes: Family['kind'][] }[] = [
  { name: 'POST /mcp', call: mcpCall, takes: ['oauth', 'login'] },
  {
    name: 'GET /svc/memories',
    call: (t) => fetch(`${BASE}/svc/memories`, { headers: { authorization: `Bearer ${t}` } }),
    takes: ['login'],
  },
  {
    name: 'GET /platform/v1/crypto/policy',
    call: (t) => fetch(`${BASE}/platform/v1/crypto/policy`, { headers: { authorization: `Bearer ${t}` } }),
    takes: ['login'],
  },
]

/** A token of a standing family works where its kind is taken. */
async function use(family: Family, rng: ReturnType<typeof generator>): Promise<void> {
  family.log.push('use')
  const token = rng.pick(family.accessTokens)
  const route = rng.pick(ROUTES.filter((r) => r.takes.includes(family.kind)))
  const res = await route.call(token)
  if (!family.revoked) expect(res.status, `${route.name} ${family.log.join(' → ')}`).toBe(200)
}

const waitOneTtl = () =>
  new Promise((resolve) => setTimeout(resolve, stack.credentialCacheTtlSeconds * 1000 + 250))

describe(`revocation reaches every access token of a family (${stack.kind})`, () => {
  it(`random refreshes, uses, code replays and refresh reuses (seed ${SEED})`, async () => {
    const rng = generator(SEED)
    const bystanders = [await startFamily('oauth'), await startFamily('login')]
    const families: Family[] = []
    for (let i = 0; i < FAMILIES; i++) {
      const family = await startFamily(i % 2 === 0 ? 'oauth' : 'login')
      families.push(family)
      // Before: the family is used (the gateway caches it as standing) and rotated a few times.
      for (let step = rng.below(4); step > 0; step--) {
        await (rng.below(2) === 0 ? refresh(family) : use(family, rng))
      }
      await use(family, rng)
      // The attack that revokes it, in a random form.
      const attacks = family.kind === 'oauth' ? ['replay-code', 'reuse', 'race'] : ['reuse', 'race']
      const attack = rng.pick(attacks)
      if (attack === 'replay-code') await replayCode(family)
      else if (attack === 'reuse') await reuseRefresh(family, rng)
      else await raceRefresh(family)
      // After: more of the same, which must issue nothing.
      for (let step = rng.below(3); step > 0; step--) {
        const next = rng.below(3)
        if (next === 0) await refresh(family)
        else if (next === 1 && family.kind === 'oauth') await replayCode(family)
        else await reuseRefresh(family, rng)
      }
    }

    await waitOneTtl()
    for (const family of families) {
      for (const token of family.accessTokens) {
        expect(decodeJwt(token).sid, 'every token names its family').toBeTypeOf('string')
        for (const route of ROUTES) {
          const res = await route.call(token)
          const context = `${family.kind} family, ${route.name}, ${family.log.join(' → ')}`
          expect(res.status, context).toBe(401)
          expect(res.headers.get('www-authenticate'), context).toContain('error="invalid_token"')
          if (route.takes.includes(family.kind)) {
            expect(((await res.json()) as { error: { code: string } }).error.code, context).toBe(
              'token_revoked',
            )
          }
        }
      }
    }
    // The families nobody attacked: same person, same kind of client, untouched.
    for (const family of bystanders) {
      for (const route of ROUTES.filter((r) => r.takes.includes(family.kind))) {
        expect(
          (await route.call(family.accessTokens[0]!)).status,
          `bystander ${family.kind}, ${route.name}`,
        ).toBe(200)
      }
      await refresh(family)
    }
  }, 240_000)
})
