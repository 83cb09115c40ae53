/**
 * The creator is the ceiling, attacked as a hostile tenant would: keys with random scope subsets,
 * roles and modes (and keys those keys minted, and a person's session) try to mint random
 * credentials through every path that mints one (API keys, their rotation, service accounts and
 * their new secrets, observability tokens and their new values). Each answer must be what an
 * independent model of the rule says: the gateway's insufficient_scope, insufficient_role, 403
 * credential_ceiling_exceeded naming exactly the exceeding parts, or success. Afterwards what was
 * stored is checked from the workspace's own records (the keys' creators, the audit log): no
 * credential in the workspace can do more than the credential that minted it. Seeded, so a
 * failure replays (CEILING_FUZZ_SEED picks another run).
 */
import { beforeAll, describe, expect, inject, it } from 'vitest'
import WebSocket from 'ws'
import { ensureWorkspace } from '../../scripts/db/seed.ts'
import { setUserPassword } from '../../scripts/db/user-passwords.ts'
import { generateApiKey } from '../../shared/auth/api-keys.ts'
import { SCOPE_NAMES } from '../../shared/auth/scopes.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'

const stack = inject('stack')
const url = (p: string) => `${stack.baseUrl}${p}`
const SEED = Number(process.env.CEILING_FUZZ_SEED ?? 27_02)

type Role = 'owner' | 'admin' | 'member'
type Mode = 'test' | 'live'
interface Powers {
  scopes: string[]
  role: Role
  mode: Mode
}
interface Creator {
  label: string
  credential: string
  powers: Powers
}
type Outcome = { status: number; code?: string; parts?: string[] }

/** Deterministic pseudo-random numbers (mulberry32). */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const next = random(SEED)
const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!
const chance = (p: number) => next() < p

// ---- The rule, modelled here from the words (not imported from the product) ----

const RANK: Record<Role, number> = { member: 0, admin: 1, owner: 2 }
/** A held scope covers itself and, for a write scope, its read scope. */
const covers = (held: string[], scope: string) =>
  held.includes(scope) || (scope.endsWith(':read') && held.includes(scope.replace(/:read$/, ':write')))

function exceeding(creator: Powers, minted: Powers): string[] {
  const parts: string[] = []
  if (creator.scopes.length > 0) {
    const wanted = minted.scopes.length === 0 ? [...SCOPE_NAMES] : minted.scopes
    for (const s of wanted) if (!covers(creator.scopes, s)) parts.push(`scope ${s}`)
  }
  if (RANK[minted.role] > RANK[creator.role]) parts.push(`role ${minted.role}`)
  if (creator.mode === 'test' && minted.mode === 'live') parts.push('mode live')
  return parts
}

/** What the stack must answer `creator` minting `minted` on an admin route (success: `ok`). */
function expected(creator: Powers, minted: Powers, ok: number): Outcome {
  // The gateway first: minting is a platform write, then an administrator's action.
  if (creator.scopes.length > 0 && !creator.scopes.includes('platform:write'))
    return { status: 403, code: 'insufficient_scope' }
  if (creator.role === 'member') return { status: 403, code: 'insufficient_role' }
  const parts = exceeding(creator, minted)
  return parts.length > 0 ? { status: 403, code: 'credential_ceiling_exceeded', parts } : { status: ok }
}

const SERVICE_ACCOUNT = (scopes: string[]): Powers => ({ scopes, role: 'member', mode: 'live' })
const OBSERVABILITY_TOKEN: Powers = { scopes: ['telemetry:write'], role: 'member', mode: 'live' }

// ---- Random powers ----

function randomScopes(bias: string[] = []): string[] {
  if (chance(0.25)) return []
  const chosen = new Set<string>()
  const count = 1 + Math.floor(next() * 3)
  while (chosen.size < count) chosen.add(bias.length > 0 && chance(0.7) ? pick(bias) : pick(SCOPE_NAMES))
  return [...chosen]
}

function randomCreatorPowers(): Powers {
  const scopes = randomScopes()
  // Mostly creators that may reach the minting routes at all, some that may not.
  if (scopes.length > 0 && chance(0.8) && !scopes.includes('platform:write')) scopes.push('platform:write')
  return {
    scopes,
    role: pick(['owner', 'owner', 'admin', 'admin', 'member'] as const),
    mode: pick(['test', 'live']),
  }
}

function randomRequest(creator: Powers): Powers {
  return {
    scopes: randomScopes(creator.scopes),
    role: pick(['owner', 'admin', 'member'] as const),
    mode: chance(0.5) ? creator.mode : pick(['test', 'live']),
  }
}

// ---- HTTP ----

async function send(credential: string, method: string, path: string, body?: unknown) {
  const res = await fetch(url(path), {
    method,
    headers: {
      authorization: `Bearer ${credential}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  return { status: res.status, body: (text ? JSON.parse(text) : null) as Record<string, unknown> }
}

/** The exceeding parts a refusal names: "... would exceed this credential in <parts> (this credential: ...". */
function namedParts(message: string): string[] {
  const m = / would exceed this credential in (.+?) \(this credential: /.exec(message)
  return m ? m[1]!.split(', ') : []
}

let root: Creator
let person: Creator
let tenantId: string
const checked: { path: string; outcome: Outcome }[] = []

/** Sends the request and holds its answer to the model; returns the body on success. */
async function attempt(
  creator: Creator,
  method: string,
  path: string,
  body: unknown,
  want: Outcome,
): Promise<Record<string, unknown> | null> {
  const res = await send(creator.credential, method, path, body)
  const what = `seed ${SEED}: ${creator.label} ${JSON.stringify(creator.powers)} ${method} ${path} ${JSON.stringify(body)} → ${res.status} ${JSON.stringify(res.body)}`
  expect(res.status, what).toBe(want.status)
  checked.push({ path, outcome: want })
  if (want.code) {
    const error = res.body.error as { code: string; message: string }
    expect(error.code, what).toBe(want.code)
    if (want.parts) expect(namedParts(error.message), what).toEqual(want.parts)
    return null
  }
  return res.body
}

async function mintKey(by: Creator, powers: Powers, label: string): Promise<Creator> {
  const res = await send(by.credential, 'POST', '/platform/v1/api-keys', { name: label, ...powers })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return { label, credential: res.body.key as string, powers }
}

beforeAll(async () => {
  const rootKey = generateApiKey('live')
  const email = `ceiling-${crypto.randomUUID().slice(0, 8)}@example.test`
  const password = 'a long passphrase for the ceiling'
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(stack.database, { max: 1 })
  try {
    ;({ tenantId } = await ensureWorkspace(database.db, {
      tenantName: 'Ceiling fuzz',
      planId: 'team',
      ownerEmail: email,
      keys: [{ name: 'root', key: rootKey, role: 'owner' }],
    }))
    await setUserPassword(database.db, email, password)
  } finally {
    await database.close()
  }
  root = { label: 'root', credential: rootKey, powers: { scopes: [], role: 'owner', mode: 'live' } }
  const login = await send('', 'POST', '/auth/login', { email, password, tenant_id: tenantId })
  expect(login.status, JSON.stringify(login.body)).toBe(200)
  person = {
    label: 'person session',
    credential: login.body.access_token as string,
    powers: { scopes: [], role: 'owner', mode: 'live' },
  }
}, 60_000)

describe(`the creator is the ceiling, fuzzed (${stack.kind})`, () => {
  it('every minting path answers as the rule says, for random creators and random requests', {
    timeout: 600_000,
  }, async () => {
    const observabilityToken = await send(root.credential, 'POST', '/platform/v1/observability-tokens', {
      name: 'rotation target',
    })
    expect(observabilityToken.status).toBe(201)
    const serviceAccountTargets: { id: string; scopes: string[] }[] = []
    for (const scopes of [[], ['chat:write'], ['platform:write', 'telemetry:write'], ['knowledge:read']]) {
      const made = await send(root.credential, 'POST', '/platform/v1/service-accounts', {
        name: 'target',
        scopes,
      })
      expect(made.status).toBe(201)
      serviceAccountTargets.push({ id: made.body.id as string, scopes })
    }

    let creators: Creator[] = [root, person]
    for (let i = 0; i < 20; i++) creators.push(await mintKey(root, randomCreatorPowers(), `creator ${i}`))

    // Two rounds: in the second, keys minted in the first are the creators (a chain of mints).
    for (let round = 1; round <= 2; round++) {
      const minted: Creator[] = []
      for (const creator of creators) {
        const c = creator.powers
        // An API key.
        for (let n = 0; n < 2; n++) {
          const request = randomRequest(c)
          const created = await attempt(
            creator,
            'POST',
            '/platform/v1/api-keys',
            { name: `by ${creator.label}`, ...request },
            expected(c, request, 201),
          )
          if (created) {
            expect(created).toMatchObject({ mode: request.mode, role: request.role, scopes: request.scopes })
            expect(created.key as string).toMatch(new RegExp(`^svc_sk_${request.mode}_`))
            minted.push({
              label: `${creator.label} → key ${minted.length}`,
              credential: created.key as string,
              powers: request,
            })
          }
        }
        // The rotation of a key (made by root with random powers): its successor has the same powers.
        const target = randomRequest({ scopes: [], role: 'owner', mode: 'live' })
        const targetKey = await send(root.credential, 'POST', '/platform/v1/api-keys', {
          name: 'rotation target',
          ...target,
        })
        expect(targetKey.status).toBe(201)
        const rotated = await attempt(
          creator,
          'POST',
          `/platform/v1/api-keys/${targetKey.body.id}/rotate`,
          { grace_period_seconds: 0 },
          expected(c, target, 201),
        )
        if (rotated)
          expect(rotated.key).toMatchObject({ mode: target.mode, role: target.role, scopes: target.scopes })
        // A service account, and a new secret for one.
        const accountScopes = randomScopes(c.scopes)
        await attempt(
          creator,
          'POST',
          '/platform/v1/service-accounts',
          { name: `by ${creator.label}`, scopes: accountScopes },
          expected(c, SERVICE_ACCOUNT(accountScopes), 201),
        )
        const account = pick(serviceAccountTargets)
        await attempt(
          creator,
          'POST',
          `/platform/v1/service-accounts/${account.id}/rotate`,
          undefined,
          expected(c, SERVICE_ACCOUNT(account.scopes), 200),
        )
        // An observability token, and a new value for one.
        await attempt(
          creator,
          'POST',
          '/platform/v1/observability-tokens',
          { name: `by ${creator.label}` },
          expected(c, OBSERVABILITY_TOKEN, 201),
        )
        await attempt(
          creator,
          'POST',
          `/platform/v1/observability-tokens/${observabilityToken.body.id}/rotate`,
          undefined,
          expected(c, OBSERVABILITY_TOKEN, 200),
        )
      }
      creators = minted.slice(0, 16)
    }

    // The fuzz reached every kind of answer on every path.
    expect(checked.length).toBeGreaterThan(220)
    for (const path of [
      '/platform/v1/api-keys',
      '/platform/v1/service-accounts',
      '/platform/v1/observability-tokens',
    ]) {
      const outcomes = checked.filter((x) => x.path === path).map((x) => x.outcome.code ?? 'ok')
      for (const kind of ['ok', 'credential_ceiling_exceeded', 'insufficient_scope', 'insufficient_role'])
        expect(outcomes, `${path}: ${kind}`).toContain(kind)
    }
    for (const part of ['scope ', 'role ', 'mode live'])
      expect(
        checked.some((x) => x.outcome.parts?.some((p) => p.startsWith(part))),
        part,
      ).toBe(true)
  })

  it("what was minted cannot exceed its minter: the workspace's records agree", async () => {
    const keys = (await send(root.credential, 'GET', '/platform/v1/api-keys')).body.data as {
      id: string
      created_by: string
      mode: Mode
      role: Role
      scopes: string[]
    }[]
    const byActor = new Map(keys.map((k) => [`key:${k.id}`, k]))
    let viaKeys = 0
    for (const key of keys) {
      const minter = byActor.get(key.created_by)
      if (!minter) continue
      viaKeys++
      expect(exceeding(minter, key), `${key.created_by} minted ${key.id}`).toEqual([])
    }
    expect(viaKeys).toBeGreaterThan(20)

    // Every service account and observability token created or given a new secret, by whom.
    const accounts = (await send(root.credential, 'GET', '/platform/v1/service-accounts')).body.data as {
      id: string
      scopes: string[]
    }[]
    const accountScopes = new Map(accounts.map((a) => [a.id, a.scopes]))
    let events = 0
    for (let start = 0; ; start += 256) {
      const page = await send(root.credential, 'GET', `/platform/v1/audit-log/entries?start=${start}`)
      expect(page.status).toBe(200)
      const data = page.body.data as { event: Record<string, unknown> }[]
      for (const { event } of data) {
        const minter = byActor.get(event.actor as string)
        if (!minter || (event.action !== 'created' && event.action !== 'rotated')) continue
        if (event.kind === 'service_account.changed') {
          events++
          const scopes = accountScopes.get(event.service_account_id as string)!
          expect(exceeding(minter, SERVICE_ACCOUNT(scopes)), JSON.stringify(event)).toEqual([])
        } else if (event.kind === 'observability_token.changed') {
          events++
          expect(exceeding(minter, OBSERVABILITY_TOKEN), JSON.stringify(event)).toEqual([])
        }
      }
      if (start + 256 >= (page.body.tree_size as number)) break
    }
    expect(events).toBeGreaterThan(10)
  })

  it('what a service account or observability token can do is what the ceiling assumed: it mints nothing', async () => {
    // A service account acts as a member (so any minter's role covers it): its token reaches the
    // admin API (audience internal-service) and is refused there as a member.
    const account = await send(root.credential, 'POST', '/platform/v1/service-accounts', {
      name: 'acts as member',
      scopes: ['platform:write'],
      audiences: ['internal-service'],
    })
    expect(account.status).toBe(201)
    const token = await send('', 'POST', '/auth/service-token', {
      client_id: account.body.id,
      client_secret: account.body.secret,
      audience: 'internal-service',
    })
    expect(token.status, JSON.stringify(token.body)).toBe(200)
    const bySa = await send(token.body.access_token as string, 'POST', '/platform/v1/api-keys', {
      name: 'escalate',
      mode: 'live',
      role: 'member',
      scopes: ['platform:read'],
    })
    expect(bySa.status).toBe(403)
    expect((bySa.body.error as { code: string }).code).toBe('insufficient_role')
    // An observability token only ingests.
    const ot = await send(root.credential, 'POST', '/platform/v1/observability-tokens', {
      name: 'acts alone',
    })
    const byOt = await send(ot.body.token as string, 'POST', '/platform/v1/observability-tokens', {
      name: 'x',
    })
    expect(byOt.status).toBe(403)
    expect((byOt.body.error as { code: string }).code).toBe('observability_token_not_accepted')
  })
})
