/**
 * API-key management as the gateway calls it, against Postgres and the tenant's real AuditLog.
 * (That the gateway then accepts, refuses and forgets keys: test/e2e/console.e2e.test.ts.)
 */
import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../../shared/auth/api-keys'
import { apiKeys } from '../../../shared/db/schema'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv, withTestDatabase } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily, errorOf } from '../../../test/unit/family-call'
import PlatformWorker from './index'

interface Key {
  id: string
  tenant_id: string
  name: string
  mode: 'live' | 'test'
  prefix: string
  suffix: string
  redacted_value: string
  role: string
  scopes: string[]
  status: string
  created_by: string | null
  expires_at: string | null
  replaced_by: string | null
  revoked_at: string | null
  key?: string
}

const BASE = '/platform/v1/api-keys'
const call = (identity: Identity, method: string, path: string, body?: unknown) =>
  callFamily(PlatformWorker, databaseEnv, path, { method, identity, ...(body === undefined ? {} : { body }) })

async function owner(): Promise<Identity> {
  return apiKeyIdentity({ tenantId: await createTenant() })
}

async function create(identity: Identity, body: Record<string, unknown> = {}): Promise<Key> {
  const res = await call(identity, 'POST', BASE, { name: 'backend', mode: 'live', ...body })
  expect(res.status, await res.clone().text()).toBe(201)
  return (await res.json()) as Key
}

async function list(identity: Identity, query = ''): Promise<Key[]> {
  const res = await call(identity, 'GET', `${BASE}${query}`)
  expect(res.status, await res.clone().text()).toBe(200)
  return ((await res.json()) as { data: Key[] }).data
}

async function auditEvents(identity: Identity): Promise<Record<string, unknown>[]> {
  const res = await call(identity, 'GET', '/platform/v1/audit-log/entries')
  expect(res.status).toBe(200)
  const body = (await res.json()) as { data: { event: Record<string, unknown> }[] }
  return body.data.map((e) => e.event).filter((e) => e.kind === 'api_key.changed')
}

describe('API keys: create and list', () => {
  it('creates test and live keys whose secret is in the 201 only, stored as its SHA-256', async () => {
    const me = await owner()
    const res = await call(me, 'POST', BASE, {
      name: '  ci  ',
      mode: 'test',
      scopes: ['chat:write'],
      expires_in_days: 30,
    })
    expect(res.status).toBe(201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const test = (await res.json()) as Key
    expect(test.key).toMatch(/^svc_sk_test_[0-9A-Za-z]{43}$/)
    expect(test).toMatchObject({
      name: 'ci',
      mode: 'test',
      prefix: 'svc_sk_test_',
      suffix: test.key!.slice(-4),
      redacted_value: `svc_sk_test_…${test.key!.slice(-4)}`,
      role: 'member',
      scopes: ['chat:write'],
      status: 'expiring',
      created_by: me.principal.kind === 'api_key' ? `key:${me.principal.keyId}` : null,
      revoked_at: null,
    })
    const days = (Date.parse(test.expires_at!) - Date.now()) / 86_400_000
    expect(days).toBeGreaterThan(29.9)
    expect(days).toBeLessThanOrEqual(30)
    const live = await create(me, { name: 'prod', role: 'admin' })
    expect(live.key).toMatch(/^svc_sk_live_/)
    expect(live).toMatchObject({ status: 'active', expires_at: null, role: 'admin' })

    const stored = await withTestDatabase((db) => db.select().from(apiKeys).where(eq(apiKeys.id, live.id)))
    expect(stored[0]!.keyHash).toBe(await hashApiKey(live.key!))
    const listed = await list(me)
    expect(listed.map((k) => k.id)).toEqual([live.id, test.id])
    expect(JSON.stringify(listed)).not.toContain(live.key!.slice(12))
    expect(JSON.stringify(listed)).not.toContain(test.key!.slice(12))
    expect(listed.every((k) => k.key === undefined)).toBe(true)
    expect((await list(me, '?mode=test')).map((k) => k.id)).toEqual([test.id])
  })

  it("names the entries' actors by the workspace's own names beside the entries", async () => {
    const me = await owner()
    const deployer = await create(me, { name: 'deploy bot' })
    const asDeployer = apiKeyIdentity({ tenantId: me.tenantId, keyId: deployer.id })
    await create(asDeployer, { name: 'made by the bot' })
    const res = await call(me, 'GET', '/platform/v1/audit-log/entries')
    const body = (await res.json()) as {
      data: { event: Record<string, unknown> }[]
      names: Record<string, string>
    }
    expect(body.data.map((e) => e.event.actor)).toContain(`key:${deployer.id}`)
    expect(body.names[`key:${deployer.id}`]).toBe('deploy bot')
    // The owner's identity is a key id with no row: unknown ids are simply not named.
    expect(Object.keys(body.names)).toEqual([`key:${deployer.id}`])
  })

  it('records every creation in the audit log, without the secret', async () => {
    const me = await owner()
    const created = await create(me, { name: 'audited', scopes: ['platform:read'] })
    const events = await auditEvents(me)
    expect(events).toEqual([
      expect.objectContaining({
        action: 'created',
        key_id: created.id,
        mode: 'live',
        suffix: created.suffix,
        name: 'audited',
        scopes: ['platform:read'],
        actor: `key:${me.principal.kind === 'api_key' ? me.principal.keyId : ''}`,
      }),
    ])
    expect(JSON.stringify(events)).not.toContain(created.key!)
  })

  it('refuses what a key cannot be, naming the field, and creates nothing', async () => {
    const me = await owner()
    const past = new Date(Date.now() - 60_000).toISOString()
    for (const [body, param] of [
      [{ name: '', mode: 'live' }, 'name'],
      [{ name: 'x', mode: 'prod' }, 'mode'],
      [{ name: 'x' }, 'mode'],
      [{ name: 'x', mode: 'live', scopes: ['everything'] }, 'scopes'],
      [{ name: 'x', mode: 'live', role: 'root' }, 'role'],
      [{ name: 'x', mode: 'live', expires_at: past }, 'expires_at'],
      [{ name: 'x', mode: 'live', expires_at: 'tomorrow' }, 'expires_at'],
      [{ name: 'x', mode: 'live', expires_at: '2999-01-01T00:00:00Z' }, 'expires_at'],
      [{ name: 'x', mode: 'live', expires_in_days: 0 }, 'expires_in_days'],
      [
        { name: 'x', mode: 'live', expires_in_days: 3, expires_at: '2030-01-01T00:00:00Z' },
        'expires_in_days',
      ],
      [{ name: 'x', mode: 'live', key: 'svc_sk_live_mine' }, 'key'],
    ] as const) {
      const res = await call(me, 'POST', BASE, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      const error = await errorOf(res)
      expect(error.param ?? error.message, JSON.stringify(body)).toMatch(new RegExp(`\\b${param}\\b`))
    }
    expect(await list(me)).toEqual([])
  })
})

describe('API keys: rotate and revoke', () => {
  it('rotates to a new secret with the same settings; the old key expires after the grace period', async () => {
    const me = await owner()
    const old = await create(me, { name: 'rotating', mode: 'test', scopes: ['chat:write'] })
    const before = Date.now()
    const res = await call(me, 'POST', `${BASE}/${old.id}/rotate`, { grace_period_seconds: 3600 })
    expect(res.status, await res.clone().text()).toBe(201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const { key, previous } = (await res.json()) as { key: Key; previous: Key }
    expect(key.key).toMatch(/^svc_sk_test_/)
    expect(key.key).not.toBe(old.key)
    expect(key).toMatchObject({ name: 'rotating', mode: 'test', scopes: ['chat:write'], status: 'active' })
    expect(previous).toMatchObject({ id: old.id, replaced_by: key.id, status: 'expiring' })
    const graceEnd = Date.parse(previous.expires_at!)
    expect(graceEnd - before).toBeGreaterThanOrEqual(3_599_000)
    expect(graceEnd - before).toBeLessThan(3_660_000)

    const again = await call(me, 'POST', `${BASE}/${old.id}/rotate`)
    expect(again.status).toBe(409)
    expect((await errorOf(again)).code).toBe('api_key_already_rotated')

    const rotatedEvent = (await auditEvents(me)).find((e) => e.action === 'rotated')
    expect(rotatedEvent).toMatchObject({ key_id: old.id, replaced_by: key.id, grace_period_seconds: 3600 })
  })

  it('a rotation without a body keeps the old key a day; grace 0 ends it at once', async () => {
    const me = await owner()
    const first = await create(me)
    const res = await call(me, 'POST', `${BASE}/${first.id}/rotate`)
    expect(res.status).toBe(201)
    const { previous, key } = (await res.json()) as { previous: Key; key: Key }
    expect(Date.parse(previous.expires_at!) - Date.now()).toBeGreaterThan(86_000_000)
    const now = await call(me, 'POST', `${BASE}/${key.id}/rotate`, { grace_period_seconds: 0 })
    expect(now.status).toBe(201)
    expect(((await now.json()) as { previous: Key }).previous.status).toBe('expired')
    expect((await list(me, '?include_inactive=false')).map((k) => k.id)).not.toContain(key.id)
    for (const grace of [-1, 30 * 86_400 + 1, 1.5]) {
      const bad = await call(me, 'POST', `${BASE}/${first.id}/rotate`, { grace_period_seconds: grace })
      expect(bad.status, String(grace)).toBe(400)
      expect((await errorOf(bad)).param).toBe('grace_period_seconds')
    }
  })

  it('revokes once, records it, and refuses to rotate a revoked key', async () => {
    const me = await owner()
    const key = await create(me)
    const res = await call(me, 'DELETE', `${BASE}/${key.id}`)
    expect(res.status).toBe(200)
    expect((await res.json()) as Key).toMatchObject({ id: key.id, status: 'revoked' })
    for (const [method, path] of [
      ['DELETE', `${BASE}/${key.id}`],
      ['POST', `${BASE}/${key.id}/rotate`],
    ] as const) {
      const again = await call(me, method, path)
      expect(again.status, `${method} ${path}`).toBe(409)
      expect((await errorOf(again)).code).toBe('api_key_revoked')
    }
    expect((await auditEvents(me)).map((e) => e.action)).toEqual(['created', 'revoked'])
  })

  it('refuses an id that is not a UUID with 400 naming it', async () => {
    const res = await call(await owner(), 'DELETE', `${BASE}/not-a-uuid`)
    expect(res.status).toBe(400)
    expect((await errorOf(res)).param).toBe('keyId')
  })
})

describe('API keys: tenancy and roles', () => {
  it("another workspace's keys are invisible and untouchable (404), and stay as they were", async () => {
    const me = await owner()
    const intruder = await owner()
    const key = await create(me)
    for (const [method, path] of [
      ['GET', `${BASE}/${key.id}`],
      ['POST', `${BASE}/${key.id}/rotate`],
      ['DELETE', `${BASE}/${key.id}`],
    ] as const) {
      const res = await call(intruder, method, path)
      expect(res.status, `${method} ${path}`).toBe(404)
      expect((await errorOf(res)).code).toBe('api_key_not_found')
    }
    expect(await list(intruder)).toEqual([])
    expect(await auditEvents(intruder)).toEqual([])
    expect((await list(me))[0]).toMatchObject({ id: key.id, status: 'active', replaced_by: null })
  })

  it('members only read their own keys; nobody manages a key above their role', async () => {
    const me = await owner()
    const admin = apiKeyIdentity({ tenantId: me.tenantId, role: 'admin' })
    const ownerKey = await create(me, { role: 'owner' })
    const memberKey = await create(admin, { name: 'for a member' })
    const member = apiKeyIdentity({ tenantId: me.tenantId, role: 'member', keyId: memberKey.id })
    const userId = crypto.randomUUID()
    const memberUser: Identity = {
      ...member,
      principal: {
        kind: 'access_token',
        subject: `user:${userId}`,
        audience: 'platform',
        tokenId: 'jti',
        algorithm: 'ML-DSA-65',
      },
    }

    // A member sees the key it calls with (and, as a user, keys it created), nothing else.
    expect((await list(member)).map((k) => k.id)).toEqual([memberKey.id])
    expect((await call(member, 'GET', `${BASE}/${memberKey.id}`)).status).toBe(200)
    expect((await call(member, 'GET', `${BASE}/${ownerKey.id}`)).status).toBe(404)
    expect(await list(memberUser)).toEqual([])
    for (const [method, path, body] of [
      ['POST', BASE, { name: 'sneaky', mode: 'live' }],
      ['POST', `${BASE}/${memberKey.id}/rotate`, undefined],
      ['DELETE', `${BASE}/${memberKey.id}`, undefined],
    ] as const) {
      const res = await call(member, method, path, body)
      expect(res.status, `${method} ${path}`).toBe(403)
      expect((await errorOf(res)).code).toBe('insufficient_role')
    }

    // An admin cannot mint, rotate or revoke an owner key; an owner can.
    const mint = await call(admin, 'POST', BASE, { name: 'escalate', mode: 'live', role: 'owner' })
    expect(mint.status).toBe(403)
    expect((await errorOf(mint)).param).toBe('role')
    for (const [method, path] of [
      ['POST', `${BASE}/${ownerKey.id}/rotate`],
      ['DELETE', `${BASE}/${ownerKey.id}`],
    ] as const) {
      expect((await call(admin, method, path)).status, `${method} ${path}`).toBe(403)
    }
    expect((await call(me, 'DELETE', `${BASE}/${ownerKey.id}`)).status).toBe(200)
    expect((await list(admin)).map((k) => k.id).sort()).toEqual([ownerKey.id, memberKey.id].sort())
  })
})

describe('API keys: the creator is the ceiling', () => {
  const ceilingRefusal = async (res: Response, parts: string[]) => {
    expect(res.status, await res.clone().text()).toBe(403)
    const error = await errorOf(res)
    expect(error.code).toBe('credential_ceiling_exceeded')
    for (const part of parts) expect(error.message).toContain(part)
  }

  it('a scoped or test key mints only keys within its scopes, role and mode', async () => {
    const tenantId = await createTenant()
    const scoped = apiKeyIdentity({ tenantId, role: 'admin', scopes: ['platform:write'] })
    const testKey = apiKeyIdentity({
      tenantId,
      principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
    })
    // The reproduction: an unscoped admin key, a live key and wider scopes from such keys.
    await ceilingRefusal(await call(scoped, 'POST', BASE, { name: 'x', mode: 'live', role: 'admin' }), [
      'scope chat:write',
      'scope telemetry:write',
    ])
    await ceilingRefusal(
      await call(scoped, 'POST', BASE, { name: 'x', mode: 'live', scopes: ['platform:write', 'chat:write'] }),
      ['scope chat:write'],
    )
    await ceilingRefusal(await call(testKey, 'POST', BASE, { name: 'x', mode: 'live' }), ['mode live'])
    // Within the ceiling: the same or fewer scopes (a write scope holds its read scope), test from test.
    expect((await create(scoped, { scopes: ['platform:read'], role: 'admin' })).scopes).toEqual([
      'platform:read',
    ])
    expect((await create(testKey, { mode: 'test', role: 'owner' })).mode).toBe('test')
    expect(await list(apiKeyIdentity({ tenantId }))).toHaveLength(2)
  })

  it('rotation is minting: a successor wider than the caller is refused, the key untouched', async () => {
    const me = await owner()
    const live = await create(me, { name: 'live backend' })
    const testKey = apiKeyIdentity({
      tenantId: me.tenantId,
      principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
    })
    const scoped = apiKeyIdentity({ tenantId: me.tenantId, scopes: ['platform:write'] })
    await ceilingRefusal(await call(testKey, 'POST', `${BASE}/${live.id}/rotate`, {}), ['mode live'])
    await ceilingRefusal(await call(scoped, 'POST', `${BASE}/${live.id}/rotate`, {}), ['scope chat:write'])
    expect((await call(me, 'GET', `${BASE}/${live.id}`)).status).toBe(200)
    expect(((await (await call(me, 'GET', `${BASE}/${live.id}`)).json()) as Key).replaced_by).toBeNull()
    const rotated = await call(me, 'POST', `${BASE}/${live.id}/rotate`, {})
    expect(rotated.status).toBe(201)
  })
})
