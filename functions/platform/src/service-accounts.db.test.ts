/**
 * Service-account administration as the gateway calls it, against Postgres. (The exchange of a
 * secret for a token is the auth family's: test/e2e/identity.e2e.test.ts.)
 */
import { describe, expect, it } from 'vitest'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily, errorOf } from '../../../test/unit/family-call'
import PlatformWorker from './index'

interface Account {
  id: string
  name: string
  audiences: string[]
  scopes: string[]
  created_by: string | null
  rotated_at: string | null
  revoked_at: string | null
  secret?: string
}

const call = (identity: Identity, method: string, path: string, body?: unknown) =>
  callFamily(PlatformWorker, databaseEnv, path, { method, identity, ...(body === undefined ? {} : { body }) })

const BASE = '/platform/v1/service-accounts'

async function owner(): Promise<Identity> {
  return apiKeyIdentity({ tenantId: await createTenant() })
}

async function create(identity: Identity, body: unknown = { name: 'deployer' }): Promise<Account> {
  const res = await call(identity, 'POST', BASE, body)
  expect(res.status, await res.clone().text()).toBe(201)
  return (await res.json()) as Account
}

async function list(identity: Identity): Promise<Account[]> {
  const res = await call(identity, 'GET', BASE)
  expect(res.status).toBe(200)
  return ((await res.json()) as { data: Account[] }).data
}

describe('service accounts: create and list', () => {
  it('creates with 201, shows the secret in that answer only, never cached', async () => {
    const me = await owner()
    const res = await call(me, 'POST', BASE, { name: '  ci deployer  ', scopes: ['models:read'] })
    expect(res.status).toBe(201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const created = (await res.json()) as Account
    expect(created).toMatchObject({
      name: 'ci deployer',
      audiences: ['internal-service'],
      scopes: ['models:read'],
      created_by: me.principal.kind === 'api_key' ? `key:${me.principal.keyId}` : '',
      revoked_at: null,
    })
    expect(created.secret).toMatch(/^svc_sa_[0-9A-Za-z]{43}$/)
    const listed = await list(me)
    expect(listed.map((a) => a.id)).toEqual([created.id])
    expect(JSON.stringify(listed)).not.toContain(created.secret)
  })

  it('refuses what an account cannot be, naming the field', async () => {
    const me = await owner()
    for (const [body, param] of [
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(121) }, 'name'],
      [{ name: 'people', audiences: ['platform'] }, 'audiences'],
      [{ name: 'none', audiences: [] }, 'audiences'],
    ] as const) {
      const res = await call(me, 'POST', BASE, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect((await errorOf(res)).param, JSON.stringify(body)).toMatch(new RegExp(`^${param}\\b`))
    }
    const unknownField = await call(me, 'POST', BASE, { name: 'x', role: 'owner' })
    expect(unknownField.status).toBe(400)
    expect(await list(me)).toEqual([])
  })
})

describe('service accounts: rotate and revoke', () => {
  it('rotates to a new secret (never cached) and revokes once', async () => {
    const me = await owner()
    const account = await create(me)
    const rotated = await call(me, 'POST', `${BASE}/${account.id}/rotate`)
    expect(rotated.status).toBe(200)
    expect(rotated.headers.get('cache-control')).toBe('no-store')
    const fresh = (await rotated.json()) as Account
    expect(fresh.secret).toMatch(/^svc_sa_/)
    expect(fresh.secret).not.toBe(account.secret)
    expect(fresh.rotated_at).not.toBeNull()

    const revoked = await call(me, 'DELETE', `${BASE}/${account.id}`)
    expect(revoked.status).toBe(200)
    expect(((await revoked.json()) as Account).revoked_at).not.toBeNull()
    expect((await list(me))[0]?.revoked_at).not.toBeNull()
    for (const [method, path] of [
      ['DELETE', `${BASE}/${account.id}`],
      ['POST', `${BASE}/${account.id}/rotate`],
    ] as const) {
      const again = await call(me, method, path)
      expect(again.status).toBe(404)
      expect((await errorOf(again)).code).toBe('service_account_not_found')
    }
  })

  it("answers 404 for another workspace's account and leaves it alone", async () => {
    const me = await owner()
    const intruder = await owner()
    const account = await create(me)
    for (const [method, path] of [
      ['POST', `${BASE}/${account.id}/rotate`],
      ['DELETE', `${BASE}/${account.id}`],
    ] as const) {
      const res = await call(intruder, method, path)
      expect(res.status).toBe(404)
    }
    expect(await list(intruder)).toEqual([])
    expect((await list(me))[0]).toMatchObject({ id: account.id, rotated_at: null, revoked_at: null })
  })

  it('refuses an id that is not a UUID with 400 naming it', async () => {
    const res = await call(await owner(), 'DELETE', `${BASE}/not-a-uuid`)
    expect(res.status).toBe(400)
    expect((await errorOf(res)).param).toBe('serviceAccountId')
  })
})

describe('service accounts: who may manage them', () => {
  it('owners and admins; members are refused on every route', async () => {
    const me = await owner()
    const admin = apiKeyIdentity({ tenantId: me.tenantId, role: 'admin' })
    const member = apiKeyIdentity({ tenantId: me.tenantId, role: 'member' })
    const account = await create(admin)
    for (const [method, path, body] of [
      ['GET', BASE, undefined],
      ['POST', BASE, { name: 'sneaky' }],
      ['POST', `${BASE}/${account.id}/rotate`, undefined],
      ['DELETE', `${BASE}/${account.id}`, undefined],
    ] as const) {
      const res = await call(member, method, path, body)
      expect(res.status, `${method} ${path}`).toBe(403)
      expect((await errorOf(res)).code).toBe('insufficient_role')
    }
    expect((await list(me)).map((a) => a.name)).toEqual(['deployer'])
  })
})

describe('service accounts: the creator is the ceiling', () => {
  it('a scoped credential creates or rotates only accounts within its scopes; a test key none', async () => {
    const me = await owner()
    const scoped = apiKeyIdentity({
      tenantId: me.tenantId,
      role: 'admin',
      scopes: ['platform:write', 'chat:write'],
    })
    const testKey = apiKeyIdentity({
      tenantId: me.tenantId,
      principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
    })
    for (const [who, body, parts] of [
      [scoped, { name: 'wide' }, ['scope agents:write', 'scope knowledge:write']],
      [scoped, { name: 'wider', scopes: ['chat:write', 'reasoning:write'] }, ['scope reasoning:write']],
      [testKey, { name: 'live', scopes: ['chat:write'] }, ['mode live']],
    ] as const) {
      const res = await call(who, 'POST', BASE, body)
      expect(res.status, JSON.stringify(body)).toBe(403)
      const error = await errorOf(res)
      expect(error.code).toBe('credential_ceiling_exceeded')
      for (const part of parts) expect(error.message).toContain(part)
    }
    expect((await create(scoped, { name: 'chat', scopes: ['chat:write'] })).scopes).toEqual(['chat:write'])

    const unscoped = await create(me, { name: 'everything' })
    for (const who of [scoped, testKey]) {
      const res = await call(who, 'POST', `${BASE}/${unscoped.id}/rotate`)
      expect(res.status).toBe(403)
      expect((await errorOf(res)).code).toBe('credential_ceiling_exceeded')
    }
    expect((await call(me, 'POST', `${BASE}/${unscoped.id}/rotate`)).status).toBe(200)
  })
})
