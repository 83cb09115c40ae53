/**
 * A key's own limits through the platform API, against Postgres and the tenant's real AuditLog
 * (docs/plans.md, "Per-key limits"): set on create, changed by PATCH (owners and admins, never on a
 * key of a higher role), audited, kept by a rotation, and read back with the key's spend at list
 * price in the current period. (That the limits hold under load: test/e2e/key-limits.e2e.test.ts.)
 */
import { describe, expect, it } from 'vitest'
import { usageLedger } from '../../../shared/db/schema'
import { listCostUnits } from '../../../shared/metering/key-spend'
import { PLAN_CATALOG } from '../../../shared/plans/plan-catalog'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv, withTestDatabase } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily } from '../../../test/unit/family-call'
import PlatformWorker from './index'

interface Key {
  id: string
  allowed_models: string[] | null
  spend_limit: { amount_usd: number; period: string } | null
  rate_limit: Record<string, number> | null
  spend: {
    period: string
    amount_usd: number
    used_usd: number
    remaining_usd: number
    resets_at: string | null
  } | null
  replaced_by: string | null
  key?: string
}

const BASE = '/platform/v1/api-keys'
const call = (identity: Identity, method: string, path: string, body?: unknown) =>
  callFamily(PlatformWorker, databaseEnv, path, { method, identity, ...(body === undefined ? {} : { body }) })

async function create(identity: Identity, body: Record<string, unknown>): Promise<Key> {
  const res = await call(identity, 'POST', BASE, { name: 'limited', mode: 'live', ...body })
  expect(res.status, await res.clone().text()).toBe(201)
  return (await res.json()) as Key
}

async function limitEvents(identity: Identity): Promise<Record<string, unknown>[]> {
  const res = await call(identity, 'GET', '/platform/v1/audit-log/entries')
  const body = (await res.json()) as { data: { event: Record<string, unknown> }[] }
  return body.data.map((e) => e.event).filter((e) => e.kind === 'api_key.changed')
}

const usage = { promptTokens: 1_000, completionTokens: 400, cachedTokens: 0 }

describe('API keys: per-key limits', () => {
  it("sets limits on create, shows the spend of today's requests at list price, and audits them", async () => {
    const me = apiKeyIdentity({ tenantId: await createTenant() })
    const key = await create(me, {
      allowed_models: ['svc-cell', 'svc-brood'],
      spend_limit: { amount_usd: 2.5, period: 'day' },
      rate_limit: { requests_per_minute: 10 },
    })
    expect(key).toMatchObject({
      allowed_models: ['svc-cell', 'svc-brood'],
      spend_limit: { amount_usd: 2.5, period: 'day' },
      rate_limit: { requests_per_minute: 10 },
      spend: { period: 'day', amount_usd: 2.5, used_usd: 0, remaining_usd: 2.5 },
    })
    const now = new Date()
    const yesterday = new Date(now.getTime() - 86_400_000)
    const row = (principal: string, createdAt: Date, mode: 'live' | 'test' = 'live') => ({
      tenantId: me.tenantId,
      requestId: crypto.randomUUID(),
      principal,
      mode,
      endpoint: 'chat.completions',
      model: 'svc-cell',
      provider: 'fake',
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      quantity: usage.promptTokens + usage.completionTokens,
      creditsCents: '0',
      createdAt,
    })
    await withTestDatabase((db) =>
      db.insert(usageLedger).values([
        row(`key:${key.id}`, now),
        row(`key:${key.id}`, now),
        // Not today's, another key's, another mode's: none is this key's spend today.
        row(`key:${key.id}`, yesterday),
        row(`key:${crypto.randomUUID()}`, now),
        row(`key:${key.id}`, now, 'test'),
      ]),
    )
    const cost = listCostUnits(PLAN_CATALOG, { model: 'svc-cell', ...usage, quantity: 0 })
    const read = (await (await call(me, 'GET', `${BASE}/${key.id}`)).json()) as Key
    expect(read.spend).toMatchObject({ used_usd: (2 * cost) / 1e6 })
    expect(read.spend?.remaining_usd).toBeCloseTo(2.5 - (2 * cost) / 1e6, 6)
    expect(read.spend?.resets_at).toBe(
      new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString(),
    )
    expect((await limitEvents(me))[0]).toMatchObject({
      action: 'created',
      allowed_models: ['svc-cell', 'svc-brood'],
      spend_limit: { amount_usd: 2.5, period: 'day' },
      rate_limit: { requests_per_minute: 10 },
    })
  })

  it('PATCH changes only the fields given (null removes one), is audited, and refuses a rate above the plan', async () => {
    const me = apiKeyIdentity({ tenantId: await createTenant() })
    const key = await create(me, { allowed_models: ['svc-cell'], rate_limit: { tokens_per_minute: 1_000 } })
    const res = await call(me, 'PATCH', `${BASE}/${key.id}`, {
      spend_limit: { amount_usd: 10, period: 'week' },
      allowed_models: null,
    })
    expect(res.status, await res.clone().text()).toBe(200)
    expect(await res.json()).toMatchObject({
      allowed_models: null,
      spend_limit: { amount_usd: 10, period: 'week' },
      rate_limit: { tokens_per_minute: 1_000 },
      spend: { period: 'week', used_usd: 0 },
    })
    expect((await limitEvents(me)).map((e) => e.action)).toEqual(['created', 'limits_changed'])
    const tooFast = await call(me, 'PATCH', `${BASE}/${key.id}`, {
      rate_limit: { requests_per_minute: 1_000_000 },
    })
    expect(tooFast.status).toBe(400)
    expect(await tooFast.json()).toMatchObject({ error: { param: 'rate_limit.requests_per_minute' } })
    const zero = await call(me, 'PATCH', `${BASE}/${key.id}`, {
      spend_limit: { amount_usd: 0, period: 'day' },
    })
    expect(zero.status).toBe(400)
  })

  it('members may not change limits, admins not on an owner key, another workspace not at all', async () => {
    const tenantId = await createTenant()
    const me = apiKeyIdentity({ tenantId })
    const ownerKey = await create(me, { role: 'owner', spend_limit: { amount_usd: 1, period: 'month' } })
    const patch = { spend_limit: { amount_usd: 100, period: 'month' } }
    const member = apiKeyIdentity({ tenantId, role: 'member' })
    expect((await call(member, 'PATCH', `${BASE}/${ownerKey.id}`, patch)).status).toBe(403)
    const admin = apiKeyIdentity({ tenantId, role: 'admin' })
    const outranked = await call(admin, 'PATCH', `${BASE}/${ownerKey.id}`, patch)
    expect(outranked.status).toBe(403)
    expect(await outranked.json()).toMatchObject({ error: { code: 'insufficient_role' } })
    const intruder = apiKeyIdentity({ tenantId: await createTenant() })
    expect((await call(intruder, 'PATCH', `${BASE}/${ownerKey.id}`, patch)).status).toBe(404)
    const unchanged = (await (await call(me, 'GET', `${BASE}/${ownerKey.id}`)).json()) as Key
    expect(unchanged.spend_limit).toEqual({ amount_usd: 1, period: 'month' })
  })

  it("a rotation's successor keeps the limits", async () => {
    const me = apiKeyIdentity({ tenantId: await createTenant() })
    const key = await create(me, {
      allowed_models: ['svc-cell'],
      spend_limit: { amount_usd: 3, period: 'total' },
    })
    const res = await call(me, 'POST', `${BASE}/${key.id}/rotate`, {})
    const rotated = (await res.json()) as { key: Key }
    expect(rotated.key).toMatchObject({
      allowed_models: ['svc-cell'],
      spend_limit: { amount_usd: 3, period: 'total' },
      spend: { period: 'total', used_usd: 0, resets_at: null },
    })
  })
})
