import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { feedback } from '../../../shared/db/schema'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv, withTestDatabase } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily, errorOf } from '../../../test/unit/family-call'
import KnowledgeWorker from './index'

const send = (identity: Identity | null, body: unknown, requestId?: string) =>
  callFamily(KnowledgeWorker, databaseEnv, '/svc/feedback', {
    identity,
    body,
    ...(requestId ? { requestId } : {}),
  })

const storedFor = (tenantId: string) =>
  withTestDatabase((db) => db.select().from(feedback).where(eq(feedback.tenantId, tenantId)))

describe('POST /svc/feedback', () => {
  it('stores any JSON object for the tenant with the key and request id, and returns a receipt', async () => {
    const identity = apiKeyIdentity({ tenantId: await createTenant() })
    const body = { rating: 2, comment: 'too slow', nested: { model: 'svc-cell', tags: ['latency'] } }
    const res = await send(identity, body, 'req_feedback_1')
    expect(res.status).toBe(200)
    const receipt = (await res.json()) as { id: string; object: string; status: string; created_at: string }
    expect(receipt).toMatchObject({ object: 'feedback', status: 'accepted' })
    const [row] = await storedFor(identity.tenantId)
    expect(row).toMatchObject({
      id: receipt.id,
      body,
      requestId: 'req_feedback_1',
      apiKeyId: identity.principal.kind === 'api_key' ? identity.principal.keyId : 'missing',
      subject: null,
    })
    expect(row?.createdAt.toISOString()).toBe(receipt.created_at)
  })

  it('records the token subject for a person, with no key', async () => {
    const tenantId = await createTenant()
    const subject = `user:${crypto.randomUUID()}`
    const res = await send(
      {
        tenantId,
        mode: 'live',
        principal: {
          kind: 'access_token',
          subject,
          audience: 'platform',
          tokenId: 't',
          algorithm: 'ML-DSA-65',
        },
        role: 'member',
        planId: 'pro',
        scopes: [],
      },
      { rating: 5 },
    )
    expect(res.status).toBe(200)
    expect(await storedFor(tenantId)).toEqual([expect.objectContaining({ subject, apiKeyId: null })])
  })

  it('stores it in the mode of the credential: a test key, and a person in test mode', async () => {
    const tenantId = await createTenant()
    const testKey = apiKeyIdentity({
      tenantId,
      principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
    })
    expect((await send(testKey, { from: 'key' })).status).toBe(200)
    const person: Identity = {
      ...apiKeyIdentity({ tenantId }),
      mode: 'test',
      principal: {
        kind: 'access_token',
        subject: 'user:x',
        audience: 'platform',
        tokenId: 't',
        algorithm: 'EdDSA',
      },
    }
    expect((await send(person, { from: 'person' })).status).toBe(200)
    expect((await send(apiKeyIdentity({ tenantId }), { from: 'live' })).status).toBe(200)
    const modes = Object.fromEntries(
      (await storedFor(tenantId)).map((row) => [(row.body as { from: string }).from, row.mode]),
    )
    expect(modes).toEqual({ key: 'test', person: 'test', live: 'live' })
  })

  it('refuses anything but a JSON object, and stores nothing', async () => {
    const identity = apiKeyIdentity({ tenantId: await createTenant() })
    for (const body of ['[1,2]', '"great"', '5', 'null', 'not json']) {
      const res = await send(identity, body)
      expect(res.status, body).toBe(400)
      expect((await errorOf(res)).type).toBe('invalid_request_error')
    }
    expect(await storedFor(identity.tenantId)).toEqual([])
  })

  it('refuses a request without a verified caller', async () => {
    const res = await send(null, { rating: 1 })
    expect(res.status).toBe(401)
    expect((await errorOf(res)).code).toBe('missing_credential')
  })
})
