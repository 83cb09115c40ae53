/**
 * QPU provider connections through the gateway of a stack started with `npm start` (Miniflare,
 * with the QPU queue bindings), tested against the fake IonQ v0.3 (test/e2e/fakes/ionq.fake.ts).
 */
import { describe, expect, it } from 'vitest'
import { fileStack } from './file-stack.ts'

const stack = await fileStack()
const ionq = stack.fakes.ionq as { baseUrl: string; keys: { tenant: string; tenantNoQpu: string } }
const BASE = `${stack.baseUrl}/svc/quantum-reasoning/provider-connections`

const call = (key: string, method: string, path = '', body?: unknown) =>
  fetch(`${BASE}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })

async function memberKey(): Promise<string> {
  const res = await fetch(`${stack.baseUrl}/platform/v1/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.tenantA.liveKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `member ${crypto.randomUUID()}`, mode: 'live', role: 'member' }),
  })
  expect(res.status, await res.clone().text()).toBe(201)
  return ((await res.json()) as { key: string }).key
}

describe('provider connections through the gateway', () => {
  it('an owner connects its own IonQ account, tests it against the provider, and deletes it', async () => {
    const owner = stack.tenantA.liveKey
    const name = `lab ${crypto.randomUUID()}`
    const res = await call(owner, 'POST', '', {
      name,
      kind: 'ionq',
      api_key: ionq.keys.tenant,
      base_url: ionq.baseUrl,
    })
    expect(res.status, await res.clone().text()).toBe(201)
    const text = await res.text()
    expect(text).not.toContain(ionq.keys.tenant)
    const connection = JSON.parse(text) as { id: string; base_url: string; target: string }
    expect(connection).toMatchObject({ base_url: ionq.baseUrl, target: 'qpu.aria-1' })

    const tested = await call(owner, 'POST', `/${connection.id}/test`)
    expect(tested.status).toBe(200)
    expect(((await tested.json()) as { test: unknown }).test).toMatchObject({ ok: true, error: null })

    const listed = await (await call(owner, 'GET')).text()
    expect(listed).toContain(connection.id)
    expect(listed).not.toContain(ionq.keys.tenant)

    expect((await call(owner, 'DELETE', `/${connection.id}`)).status).toBe(200)
    expect((await call(owner, 'GET', `/${connection.id}`)).status).toBe(404)
  })

  it('a key the provider refuses tests as provider_rejected_credentials', async () => {
    const owner = stack.tenantA.liveKey
    const res = await call(owner, 'POST', '', {
      name: `bad ${crypto.randomUUID()}`,
      kind: 'ionq',
      api_key: 'not-an-ionq-key',
      base_url: ionq.baseUrl,
    })
    const { id } = (await res.json()) as { id: string }
    const tested = (await (await call(owner, 'POST', `/${id}/test`)).json()) as {
      test: { ok: boolean; error: { code: string } }
    }
    expect(tested.test).toMatchObject({ ok: false, error: { code: 'provider_rejected_credentials' } })
  })

  it('a base URL the deployment does not allow is refused: a connection cannot point the workers elsewhere', async () => {
    const res = await call(stack.tenantA.liveKey, 'POST', '', {
      name: 'x',
      kind: 'ionq',
      api_key: ionq.keys.tenant,
      base_url: 'http://169.254.169.254/v0.3',
    })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: { code: 'base_url_not_allowed', param: 'base_url' } })
  })

  it('a member is refused (403) and another tenant sees nothing (404)', async () => {
    const owner = stack.tenantA.liveKey
    const res = await call(owner, 'POST', '', {
      name: `shared ${crypto.randomUUID()}`,
      kind: 'ionq',
      api_key: ionq.keys.tenant,
      base_url: ionq.baseUrl,
    })
    const { id } = (await res.json()) as { id: string }
    const member = await memberKey()
    expect((await call(member, 'GET')).status).toBe(403)
    expect((await call(member, 'POST', `/${id}/test`)).status).toBe(403)
    const other = stack.tenantB.liveKey
    expect((await call(other, 'GET', `/${id}`)).status).toBe(404)
    expect((await call(other, 'DELETE', `/${id}`)).status).toBe(404)
    const list = (await (await call(other, 'GET')).json()) as { data: { id: string }[] }
    expect(list.data.map((c) => c.id)).not.toContain(id)
    expect((await call(owner, 'GET', `/${id}`)).status).toBe(200)
  })
})
