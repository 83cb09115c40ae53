/**
 * The API-key management API end to end, through the gateway of a stack started with `npm start`:
 * a key made through the API works at once, a revoked one is refused at once (by the isolate that
 * served the revocation), a rotated one keeps working for its grace period only, scopes narrow a
 * key, and another workspace's keys are out of reach.
 */
import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { apiKeySuffix, generateApiKey, hashApiKey } from '../../shared/auth/api-keys.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { apiKeys } from '../../shared/db/schema.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack()
const url = (p: string) => `${stack.baseUrl}${p}`

interface Key {
  id: string
  key?: string
  status: string
  replaced_by: string | null
}

async function api(credential: string, method: string, path: string, body?: unknown) {
  return fetch(url(path), {
    method,
    headers: {
      authorization: `Bearer ${credential}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
}

async function createKey(body: Record<string, unknown>, as = stack.tenantA.liveKey): Promise<Key> {
  const res = await api(as, 'POST', '/platform/v1/api-keys', body)
  expect(res.status, await res.clone().text()).toBe(201)
  return (await res.json()) as Key
}

const useKey = (key: string) => api(key, 'GET', '/svc/memories')
const codeOf = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code

describe('API keys through the gateway', () => {
  it('a created key works at once; revoked, it is refused at once', async () => {
    const made = await createKey({ name: 'e2e revoke', mode: 'test' })
    expect((await useKey(made.key!)).status).toBe(200)
    const revoked = await api(stack.tenantA.liveKey, 'DELETE', `/platform/v1/api-keys/${made.id}`)
    expect(revoked.status).toBe(200)
    const refused = await useKey(made.key!)
    expect(refused.status).toBe(401)
    expect(await codeOf(refused)).toBe('revoked_api_key')
  })

  it('a rotated key works during its grace period; with no grace it stops at once', async () => {
    const first = await createKey({ name: 'e2e rotate', mode: 'live' })
    expect((await useKey(first.key!)).status).toBe(200)
    const res = await api(stack.tenantA.liveKey, 'POST', `/platform/v1/api-keys/${first.id}/rotate`, {
      grace_period_seconds: 600,
    })
    expect(res.status).toBe(201)
    const { key: second } = (await res.json()) as { key: Key }
    expect((await useKey(first.key!)).status).toBe(200)
    expect((await useKey(second.key!)).status).toBe(200)

    const now = await api(stack.tenantA.liveKey, 'POST', `/platform/v1/api-keys/${second.id}/rotate`, {
      grace_period_seconds: 0,
    })
    expect(now.status).toBe(201)
    const { key: third } = (await now.json()) as { key: Key }
    const expired = await useKey(second.key!)
    expect(expired.status).toBe(401)
    expect(await codeOf(expired)).toBe('expired_api_key')
    expect((await useKey(third.key!)).status).toBe(200)
  })

  it('scopes narrow a key: a chat-only key cannot read or manage the workspace', async () => {
    const chatOnly = await createKey({
      name: 'e2e scoped',
      mode: 'test',
      scopes: ['chat:write'],
      role: 'owner',
    })
    const chat = await api(chatOnly.key!, 'POST', '/svc/chat/completions', {
      model: 'svc-cell',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(chat.status).toBe(200)
    for (const [method, path] of [
      ['GET', '/platform/v1/api-keys'],
      ['GET', '/svc/memories'],
    ] as const) {
      const res = await api(chatOnly.key!, method, path)
      expect(res.status, path).toBe(403)
      expect(await codeOf(res)).toBe('insufficient_scope')
    }
  })

  it("another workspace's keys are neither listed nor reachable", async () => {
    const mine = await createKey({ name: 'e2e tenant A', mode: 'test' })
    const listed = await api(stack.tenantB.liveKey, 'GET', '/platform/v1/api-keys')
    expect(listed.status).toBe(200)
    const ids = ((await listed.json()) as { data: Key[] }).data.map((k) => k.id)
    expect(ids).not.toContain(mine.id)
    for (const [method, path] of [
      ['GET', `/platform/v1/api-keys/${mine.id}`],
      ['DELETE', `/platform/v1/api-keys/${mine.id}`],
      ['POST', `/platform/v1/api-keys/${mine.id}/rotate`],
    ] as const) {
      expect((await api(stack.tenantB.liveKey, method, path)).status, `${method} ${path}`).toBe(404)
    }
    expect((await useKey(mine.key!)).status).toBe(200)
  })

  it('a key past its expiry is refused', async () => {
    // Written straight into the database with an expiry already past (no waiting on a clock).
    const key = generateApiKey('test')
    useWebSocketConstructor(WebSocket)
    const database = openDatabase(stack.database, { max: 1 })
    try {
      await database.db.insert(apiKeys).values({
        tenantId: stack.tenantA.id,
        name: 'e2e expired',
        mode: 'test',
        keyHash: await hashApiKey(key),
        suffix: apiKeySuffix(key),
        expiresAt: new Date(Date.now() - 1000),
      })
    } finally {
      await database.close()
    }
    const res = await useKey(key)
    expect(res.status).toBe(401)
    expect(await codeOf(res)).toBe('expired_api_key')
  })
})
