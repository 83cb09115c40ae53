/**
 * The workspace crypto policy routes as the gateway calls them, against Postgres: what each
 * change leaves stored, who may change it, that one workspace's policy is its own, and the
 * violation log. (test/e2e/crypto.e2e.test.ts covers the presets, contradictions and checks
 * through the whole stack.)
 */
import { describe, expect, it, vi } from 'vitest'
import { checkAlgorithm, POLICY_PRESETS } from '../../../shared/crypto-policy'
import { recordViolations } from '../../../shared/crypto-policy/policy-store'
import { apiKeys, cryptoPolicies, members, serviceAccounts, users } from '../../../shared/db/schema'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv, withTestDatabase } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily, errorOf } from '../../../test/unit/family-call'
import PlatformWorker from './index'

interface PolicyView {
  tenant_id: string
  preset: string | null
  customized: boolean
  source: 'default' | 'stored'
  policy: Record<string, unknown> & { mode: string; allowedSignatureAlgorithms: string[] }
  updated_by: string | null
  updated_at: string | null
}

const call = (identity: Identity, method: string, path: string, body?: unknown) =>
  callFamily(PlatformWorker, databaseEnv, path, { method, identity, ...(body === undefined ? {} : { body }) })

async function view(res: Response): Promise<PolicyView> {
  expect(res.status, await res.clone().text()).toBe(200)
  return (await res.json()) as PolicyView
}

const policyOf = async (identity: Identity) => view(await call(identity, 'GET', '/platform/v1/crypto/policy'))
const put = (identity: Identity, body: unknown) => call(identity, 'PUT', '/platform/v1/crypto/policy', body)
const patch = (identity: Identity, body: unknown) =>
  call(identity, 'PATCH', '/platform/v1/crypto/policy', body)

async function owner(): Promise<Identity> {
  return apiKeyIdentity({ tenantId: await createTenant() })
}

describe('crypto policy: changes', () => {
  it("changes only the caller's workspace", async () => {
    const mine = await owner()
    const theirs = await owner()
    await view(await put(mine, { preset: 'maximum' }))
    expect((await policyOf(mine)).preset).toBe('maximum')
    expect(await policyOf(theirs)).toMatchObject({ preset: 'default', source: 'default', customized: false })
  })

  it('keeps the preset through a PATCH and says whether the policy still equals it', async () => {
    const me = await owner()
    await view(await put(me, { preset: 'strict' }))
    const audited = await view(await patch(me, { mode: 'audit' }))
    expect(audited).toMatchObject({ preset: 'strict', customized: true, policy: { mode: 'audit' } })
    const back = await view(await patch(me, { mode: 'enforce' }))
    expect(back).toMatchObject({ preset: 'strict', customized: false })
    expect(back.policy).toEqual(POLICY_PRESETS.strict)
  })

  it('stores a policy written field by field under registry ids, with no preset', async () => {
    const me = await owner()
    const written = await view(
      await put(me, {
        ...POLICY_PRESETS.maximum,
        allowedSignatureAlgorithms: ['ML-DSA-87'],
        mode: 'audit',
      }),
    )
    expect(written).toMatchObject({ preset: null, customized: true, source: 'stored' })
    expect(written.policy.allowedSignatureAlgorithms).toEqual(['dilithium-5'])
    expect(await policyOf(me)).toEqual(written)
  })

  it('records who changed it: the key, or the person behind a token', async () => {
    const me = await owner()
    const byKey = await view(await put(me, { preset: 'strict' }))
    expect(byKey.updated_by).toBe(me.principal.kind === 'api_key' ? `key:${me.principal.keyId}` : '')
    expect(Number.isNaN(Date.parse(byKey.updated_at ?? ''))).toBe(false)
    const subject = `user:${crypto.randomUUID()}`
    const person: Identity = {
      ...me,
      role: 'admin',
      principal: {
        kind: 'access_token',
        subject,
        audience: 'platform',
        tokenId: 't',
        algorithm: 'ML-DSA-65',
      },
    }
    expect((await view(await patch(person, { mode: 'audit' }))).updated_by).toBe(subject)
  })

  it("names who changed it only from this workspace's keys, accounts and members", async () => {
    const me = await owner()
    const theirs = await owner()
    const email = `policy-${crypto.randomUUID()}@example.test`
    const { userId, keyId, otherKeyId, accountId } = await withTestDatabase(async (db) => {
      const [user] = await db.insert(users).values({ email }).returning({ id: users.id })
      // A member of the other workspace only, for now.
      await db.insert(members).values({ tenantId: theirs.tenantId, userId: user!.id, role: 'admin' })
      const key = (tenantId: string, name: string) =>
        db
          .insert(apiKeys)
          .values({ tenantId, name, mode: 'live', keyHash: crypto.randomUUID(), suffix: 'abcd' })
          .returning({ id: apiKeys.id })
      const [mine] = await key(me.tenantId, 'ci deploy key')
      const [other] = await key(theirs.tenantId, 'their key')
      const [account] = await db
        .insert(serviceAccounts)
        .values({ tenantId: me.tenantId, name: 'policy bot', secretHash: 'x', audiences: ['platform'] })
        .returning({ id: serviceAccounts.id })
      return { userId: user!.id, keyId: mine!.id, otherKeyId: other!.id, accountId: account!.id }
    })
    const asToken = (subject: string): Identity => ({
      ...me,
      principal: {
        kind: 'access_token',
        subject,
        audience: 'platform',
        tokenId: 't',
        algorithm: 'ML-DSA-65',
      },
    })
    const nameAfter = async (identity: Identity) =>
      (await view(await patch(identity, { mode: 'audit' }))) as PolicyView & {
        updated_by_name: string | null
      }

    expect((await nameAfter(apiKeyIdentity({ tenantId: me.tenantId, keyId }))).updated_by_name).toBe(
      'ci deploy key',
    )
    expect((await nameAfter(asToken(`sa:${accountId}`))).updated_by_name).toBe('policy bot')
    // Ids of another workspace's key or member name nothing here.
    expect(
      (await nameAfter(apiKeyIdentity({ tenantId: me.tenantId, keyId: otherKeyId }))).updated_by_name,
    ).toBeNull()
    expect((await nameAfter(asToken(`user:${userId}`))).updated_by_name).toBeNull()
    await withTestDatabase((db) =>
      db.insert(members).values({ tenantId: me.tenantId, userId, role: 'admin' }),
    )
    expect((await policyOf(me)) as PolicyView & { updated_by_name: string | null }).toMatchObject({
      updated_by: `user:${userId}`,
      updated_by_name: email,
    })
  })

  it('lets owners and admins change it; a member is refused and nothing changes', async () => {
    const me = await owner()
    const admin = { ...me, role: 'admin' as const }
    const member = apiKeyIdentity({ tenantId: me.tenantId, role: 'member' })
    await view(await put(admin, { preset: 'strict' }))
    for (const refused of [
      await put(member, { preset: 'default' }),
      await patch(member, { mode: 'audit' }),
    ]) {
      expect(refused.status).toBe(403)
      expect((await errorOf(refused)).code).toBe('insufficient_role')
    }
    expect(await policyOf(member)).toMatchObject({ preset: 'strict', customized: false })
  })

  it('answers 500 naming the fix when the stored policy cannot be read (the detail goes to the log), and a PUT repairs it', async () => {
    const me = await owner()
    const log = vi.spyOn(console, 'error').mockImplementation(() => {})
    await withTestDatabase((db) =>
      db
        .insert(cryptoPolicies)
        .values({ tenantId: me.tenantId, preset: 'strict', policy: { mode: 'sometimes' } }),
    )
    const broken = await call(me, 'GET', '/platform/v1/crypto/policy')
    expect(broken.status).toBe(500)
    const error = await errorOf(broken)
    expect(error.code).toBe('crypto_policy_unreadable')
    expect(error.message).toContain('PUT /platform/v1/crypto/policy')
    expect(error.message).not.toContain('sometimes')
    expect(log).toHaveBeenCalledWith(expect.stringContaining(`crypto_policies row for ${me.tenantId}`))
    log.mockRestore()
    await view(await put(me, { preset: 'default' }))
    expect((await policyOf(me)).preset).toBe('default')
  })
})

describe('crypto policy: checks follow the stored policy', () => {
  const check = (identity: Identity, query: string) =>
    call(identity, 'GET', `/platform/v1/crypto/policy/check?${query}`).then(view) as Promise<
      PolicyView & Record<string, unknown>
    >

  it('blocks under an enforcing policy, logs under audit, allows when the policy is disabled', async () => {
    const me = await owner()
    const eddsa = 'algorithm=EdDSA&context=token_signature'
    await view(await put(me, { preset: 'strict' }))
    expect(await check(me, eddsa)).toMatchObject({ allowed: false, enforced: true, outcome: 'blocked' })
    await view(await patch(me, { mode: 'audit' }))
    expect(await check(me, eddsa)).toMatchObject({
      enforced: false,
      outcome: 'logged',
      in_enforce_mode: 'blocked',
    })
    await view(await patch(me, { enabled: false }))
    expect(await check(me, eddsa)).toMatchObject({ allowed: true, outcome: 'allowed' })
  })
})

describe('GET /platform/v1/crypto/violations', () => {
  async function record(tenantId: string, count: number): Promise<void> {
    const check = checkAlgorithm(POLICY_PRESETS.strict, 'EdDSA', 'token_signature')
    for (let i = 0; i < count; i++) {
      await withTestDatabase((db) =>
        recordViolations(db, [
          {
            tenantId,
            check,
            principal: 'key:k',
            requestId: `req_${i}`,
            method: 'GET',
            path: `/svc/memories/${i}`,
          },
        ]),
      )
    }
  }

  it('lists what was recorded for the workspace, newest first, with the rules that failed', async () => {
    const me = await owner()
    await record(me.tenantId, 3)
    await record((await owner()).tenantId, 2)
    const res = await call(me, 'GET', '/platform/v1/crypto/violations')
    expect(res.status).toBe(200)
    const list = (await res.json()) as {
      data: { request_id: string; algorithm: string; blocked: boolean; rules: { rule: string }[] }[]
      has_more: boolean
    }
    expect(list.data.map((v) => v.request_id)).toEqual(['req_2', 'req_1', 'req_0'])
    expect(list.has_more).toBe(false)
    expect(list.data[0]).toMatchObject({
      algorithm: 'ed25519',
      blocked: true,
      principal: 'key:k',
      method: 'GET',
    })
    expect(list.data[0]!.rules.map((r) => r.rule)).toContain('classical_fallback')
  })

  it('pages with limit, has_more and before', async () => {
    const me = await owner()
    await record(me.tenantId, 3)
    const first = (await (await call(me, 'GET', '/platform/v1/crypto/violations?limit=2')).json()) as {
      data: { id: string; request_id: string; created_at: string }[]
      has_more: boolean
    }
    expect(first.data.map((v) => v.request_id)).toEqual(['req_2', 'req_1'])
    expect(first.has_more).toBe(true)
    const before = first.data.at(-1)!.id
    const rest = (await (
      await call(me, 'GET', `/platform/v1/crypto/violations?limit=2&before=${before}`)
    ).json()) as {
      data: { request_id: string }[]
      has_more: boolean
    }
    expect(rest).toMatchObject({ data: [{ request_id: 'req_0' }], has_more: false })
    const tooMany = await call(me, 'GET', '/platform/v1/crypto/violations?limit=201')
    expect(tooMany.status).toBe(400)
    expect((await errorOf(tooMany)).param).toBe('limit')
  })
})
