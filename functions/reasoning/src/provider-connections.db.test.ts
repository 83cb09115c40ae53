/**
 * Provider connections as the gateway calls them, against Postgres and the tenant's real AuditLog.
 * (Testing a connection against the provider: test/e2e/provider-connections.e2e.test.ts; jobs that
 * use one: test/e2e/reasoning-qpu.e2e.test.ts, byopa_managed.)
 */
import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { openConnectionAccount } from '../../../durable-objects/reasoning-job/quantum/providers/provider-connections.store'
import { generateCredentialKey } from '../../../durable-objects/reasoning-job/quantum/providers/provider-credentials'
import { qpuProviderConnections } from '../../../shared/db/schema'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv, withTestDatabase } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily } from '../../../test/unit/family-call'
import PlatformWorker from '../../platform/src/index'
import ReasoningWorker from './index'

const KEYS = JSON.stringify([generateCredentialKey('test-1')])
const env = {
  ...databaseEnv,
  PROVIDER_CREDENTIAL_KEYS: KEYS,
  // A closed port: the connection test meets a provider that does not answer.
  QPU_PROVIDER_BASE_URLS: 'https://api.ionq.co/v0.3,http://127.0.0.1:9/v0.3',
}
const BASE = '/svc/quantum-reasoning/provider-connections'
const SECRET = 'ionq-secret-key-0123456789'

const call = (identity: Identity, method: string, path: string, body?: unknown, e: object = env) =>
  callFamily(ReasoningWorker, e as never, path, { method, identity, ...(body === undefined ? {} : { body }) })

async function owner(): Promise<Identity> {
  return apiKeyIdentity({ tenantId: await createTenant('team') })
}

async function create(identity: Identity, body: Record<string, unknown> = {}) {
  const res = await call(identity, 'POST', BASE, { name: 'ours', kind: 'ionq', api_key: SECRET, ...body })
  expect(res.status, await res.clone().text()).toBe(201)
  return (await res.json()) as {
    id: string
    name: string
    base_url: string
    target: string
    last_test: unknown
  }
}

async function auditEvents(identity: Identity): Promise<Record<string, unknown>[]> {
  const res = await callFamily(PlatformWorker, databaseEnv as never, '/platform/v1/audit-log/entries', {
    identity,
  })
  expect(res.status).toBe(200)
  const body = (await res.json()) as { data: { event: Record<string, unknown> }[] }
  return body.data.map((e) => e.event).filter((e) => e.kind === 'provider_connection.changed')
}

describe('provider connections', () => {
  it('creates a connection whose key is stored encrypted and never returned, lists and reads it', async () => {
    const me = await owner()
    const res = await call(me, 'POST', BASE, { name: ' lab ', kind: 'ionq', api_key: SECRET })
    expect(res.status).toBe(201)
    const text = await res.text()
    expect(text).not.toContain(SECRET)
    const created = JSON.parse(text)
    expect(created).toMatchObject({
      object: 'provider_connection',
      name: 'lab',
      kind: 'ionq',
      base_url: 'https://api.ionq.co/v0.3',
      target: 'qpu.aria-1',
      last_test: null,
    })
    const stored = await withTestDatabase((db) =>
      db.select().from(qpuProviderConnections).where(eq(qpuProviderConnections.id, created.id)),
    )
    expect(stored[0]!.credential).toMatch(/^v1\.test-1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/)
    expect(stored[0]!.credential).not.toContain(SECRET)
    // The workers that run jobs get the key back; bound to its tenant and connection.
    const account = await withTestDatabase((db) =>
      openConnectionAccount(db, KEYS, { tenantId: me.tenantId, mode: me.mode }, created.id),
    )
    expect(account).toEqual({
      kind: 'ionq',
      baseUrl: 'https://api.ionq.co/v0.3',
      apiKey: SECRET,
      target: 'qpu.aria-1',
    })
    const list = await call(me, 'GET', BASE)
    const listText = await list.text()
    expect(listText).not.toContain(SECRET)
    expect(JSON.parse(listText).data.map((c: { id: string }) => c.id)).toEqual([created.id])
    const one = await call(me, 'GET', `${BASE}/${created.id}`)
    expect(await one.json()).toEqual(created)
  })

  it('refuses a base URL the deployment does not allow, an unknown kind, extra fields and a duplicate name', async () => {
    const me = await owner()
    const bad = await call(me, 'POST', BASE, {
      name: 'x',
      kind: 'ionq',
      api_key: SECRET,
      base_url: 'https://evil.example/v0.3',
    })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { code: 'base_url_not_allowed', param: 'base_url' } })
    expect((await call(me, 'POST', BASE, { name: 'x', kind: 'braket', api_key: SECRET })).status).toBe(400)
    expect(
      (await call(me, 'POST', BASE, { name: 'x', kind: 'ionq', api_key: SECRET, token: 1 })).status,
    ).toBe(400)
    await create(me, { name: 'dup' })
    const dup = await call(me, 'POST', BASE, { name: 'dup', kind: 'ionq', api_key: SECRET })
    expect(dup.status).toBe(409)
    expect(await dup.json()).toMatchObject({ error: { code: 'provider_connection_name_taken' } })
  })

  it('is for owners and admins only: a member gets 403 on every route', async () => {
    const me = await owner()
    const { id } = await create(me)
    const member = { ...me, role: 'member' as const }
    for (const [method, path, body] of [
      ['GET', BASE],
      ['POST', BASE, { name: 'm', kind: 'ionq', api_key: SECRET }],
      ['GET', `${BASE}/${id}`],
      ['POST', `${BASE}/${id}/test`],
      ['DELETE', `${BASE}/${id}`],
    ] as const) {
      const res = await call(member, method, path, body)
      expect(res.status, `${method} ${path}`).toBe(403)
      expect(await res.json()).toMatchObject({ error: { code: 'insufficient_role' } })
    }
    const admin = { ...me, role: 'admin' as const }
    expect((await call(admin, 'GET', `${BASE}/${id}`)).status).toBe(200)
  })

  it('another tenant sees nothing: list empty, read, test and delete 404; a non-uuid is 404', async () => {
    const me = await owner()
    const { id } = await create(me)
    const other = await owner()
    expect(((await (await call(other, 'GET', BASE)).json()) as { data: unknown[] }).data).toEqual([])
    for (const [method, path] of [
      ['GET', `${BASE}/${id}`],
      ['POST', `${BASE}/${id}/test`],
      ['DELETE', `${BASE}/${id}`],
      ['GET', `${BASE}/not-a-uuid`],
    ] as const) {
      const res = await call(other, method, path)
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(await res.json()).toMatchObject({ error: { code: 'provider_connection_not_found' } })
    }
    // Still there for its owner.
    expect((await call(me, 'GET', `${BASE}/${id}`)).status).toBe(200)
  })

  it("the tenant's other mode sees nothing either, and may use the same name", async () => {
    const live = await owner()
    const { id } = await create(live)
    const test = apiKeyIdentity({
      tenantId: live.tenantId,
      principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
    })
    expect(((await (await call(test, 'GET', BASE)).json()) as { data: unknown[] }).data).toEqual([])
    for (const [method, path] of [
      ['GET', `${BASE}/${id}`],
      ['POST', `${BASE}/${id}/test`],
      ['DELETE', `${BASE}/${id}`],
    ] as const) {
      const res = await call(test, method, path)
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(await res.json()).toMatchObject({ error: { code: 'provider_connection_not_found' } })
    }
    const own = await create(test)
    expect(own.name).toBe('ours')
    const stored = await withTestDatabase((db) =>
      db.select().from(qpuProviderConnections).where(eq(qpuProviderConnections.tenantId, live.tenantId)),
    )
    expect(Object.fromEntries(stored.map((row) => [row.id, row.mode]))).toEqual({
      [id]: 'live',
      [own.id]: 'test',
    })
  })
  it('test records what the provider answered: an unreachable provider is ok=false provider_unreachable', async () => {
    const me = await owner()
    const { id } = await create(me, { base_url: 'http://127.0.0.1:9/v0.3' })
    const res = await call(me, 'POST', `${BASE}/${id}/test`)
    expect(res.status).toBe(200)
    const body = (await res.json()) as {
      test: { ok: boolean; error: { code: string } }
      connection: { last_test: unknown }
    }
    expect(body.test).toMatchObject({ ok: false, error: { code: 'provider_unreachable' } })
    expect(body.connection.last_test).toEqual(body.test)
  })

  it('deletes the connection and its credential; creation and deletion are in the audit log', async () => {
    const me = await owner()
    const { id } = await create(me)
    const del = await call(me, 'DELETE', `${BASE}/${id}`)
    expect(await del.json()).toEqual({ id, object: 'provider_connection', deleted: true })
    expect((await call(me, 'GET', `${BASE}/${id}`)).status).toBe(404)
    const rows = await withTestDatabase((db) =>
      db.select().from(qpuProviderConnections).where(eq(qpuProviderConnections.id, id)),
    )
    expect(rows).toEqual([])
    const events = await auditEvents(me)
    expect(events.map((e) => [e.action, e.connection_id, e.provider])).toEqual(
      expect.arrayContaining([
        ['created', id, 'ionq'],
        ['deleted', id, 'ionq'],
      ]),
    )
    expect(JSON.stringify(events)).not.toContain(SECRET)
  })

  it('without PROVIDER_CREDENTIAL_KEYS the deployment says so (503), and stores nothing', async () => {
    const me = await owner()
    const { PROVIDER_CREDENTIAL_KEYS: _, ...bare } = env
    const res = await call(me, 'POST', BASE, { name: 'nokeys', kind: 'ionq', api_key: SECRET }, bare)
    expect(res.status).toBe(503)
    expect(await res.json()).toMatchObject({ error: { code: 'provider_credentials_unavailable' } })
    expect(((await (await call(me, 'GET', BASE)).json()) as { data: unknown[] }).data).toEqual([])
  })
})
