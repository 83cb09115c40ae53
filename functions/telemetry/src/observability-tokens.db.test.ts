/**
 * Observability-token administration as the gateway calls it, against Postgres (their use at the
 * gateway is test/e2e/telemetry.e2e.test.ts): who may manage them, what is stored and shown.
 */
import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { hashObservabilityToken } from '../../../shared/auth/observability-tokens'
import { observabilityTokens } from '../../../shared/db/schema'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv, withTestDatabase } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily, errorOf } from '../../../test/unit/family-call'
import TelemetryWorker from './index'

const BASE = '/platform/v1/observability-tokens'
const call = (identity: Identity, method: string, path: string, body?: unknown) =>
  callFamily(TelemetryWorker, databaseEnv, path, {
    method,
    identity,
    ...(body === undefined ? {} : { body }),
  })

describe('observability tokens', () => {
  it('stores only the SHA-256, shows the value once, and rotates to a new value', async () => {
    const owner = apiKeyIdentity({ tenantId: await createTenant() })
    const res = await call(owner, 'POST', BASE, { name: '  edge collector ' })
    expect(res.status).toBe(201)
    const created = (await res.json()) as { id: string; name: string; token: string; suffix: string }
    expect(created.name).toBe('edge collector')
    const [row] = await withTestDatabase((db) =>
      db.select().from(observabilityTokens).where(eq(observabilityTokens.id, created.id)),
    )
    expect(row!.tokenHash).toBe(hashObservabilityToken(created.token))
    expect(JSON.stringify(row)).not.toContain(created.token)

    const rotated = (await (await call(owner, 'POST', `${BASE}/${created.id}/rotate`, {})).json()) as {
      token: string
      suffix: string
    }
    expect(rotated.token).not.toBe(created.token)
    const [after] = await withTestDatabase((db) =>
      db.select().from(observabilityTokens).where(eq(observabilityTokens.id, created.id)),
    )
    expect(after!.tokenHash).toBe(hashObservabilityToken(rotated.token))
    expect(after!.rotatedAt).not.toBeNull()

    expect((await call(owner, 'DELETE', `${BASE}/${created.id}`)).status).toBe(200)
    const again = await call(owner, 'DELETE', `${BASE}/${created.id}`)
    expect(again.status).toBe(404)
    expect((await errorOf(again)).code).toBe('observability_token_not_found')
    const rotateRevoked = await call(owner, 'POST', `${BASE}/${created.id}/rotate`, {})
    expect(rotateRevoked.status).toBe(404)
  })

  it('is for owners and admins only, and names what is wrong in a bad request', async () => {
    const tenantId = await createTenant()
    const member = apiKeyIdentity({ tenantId, role: 'member' })
    for (const [method, path, body] of [
      ['GET', BASE, undefined],
      ['POST', BASE, { name: 'x' }],
    ] as const) {
      const res = await call(member, method, path, body)
      expect(res.status).toBe(403)
      expect((await errorOf(res)).code).toBe('insufficient_role')
    }
    const owner = apiKeyIdentity({ tenantId })
    for (const [body, param] of [
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(121) }, 'name'],
      [{ name: 'x', scopes: ['all'] }, null],
    ] as const) {
      const res = await call(owner, 'POST', BASE, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      if (param) expect((await errorOf(res)).param).toBe(param)
    }
    const badId = await call(owner, 'DELETE', `${BASE}/not-a-uuid`)
    expect(badId.status).toBe(400)
    expect(((await (await call(owner, 'GET', BASE)).json()) as { data: unknown[] }).data).toEqual([])
  })
})

describe('observability tokens: the creator is the ceiling', () => {
  it('only a live credential that may ingest itself creates or rotates one', async () => {
    const tenantId = await createTenant()
    const owner = apiKeyIdentity({ tenantId })
    const created = (await (await call(owner, 'POST', BASE, { name: 'collector' })).json()) as { id: string }
    const platformOnly = apiKeyIdentity({ tenantId, scopes: ['platform:write'] })
    const testKey = apiKeyIdentity({
      tenantId,
      principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
    })
    for (const [who, part] of [
      [platformOnly, 'scope telemetry:write'],
      [testKey, 'mode live'],
    ] as const) {
      for (const [path, body] of [
        [BASE, { name: 'x' }],
        [`${BASE}/${created.id}/rotate`, {}],
      ] as const) {
        const res = await call(who, 'POST', path, body)
        expect(res.status, path).toBe(403)
        const error = await errorOf(res)
        expect(error.code).toBe('credential_ceiling_exceeded')
        expect(error.message).toContain(part)
      }
    }
    const ingesting = apiKeyIdentity({ tenantId, scopes: ['platform:write', 'telemetry:write'] })
    expect((await call(ingesting, 'POST', BASE, { name: 'y' })).status).toBe(201)
  })
})
