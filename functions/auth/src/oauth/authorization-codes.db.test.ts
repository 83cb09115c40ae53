/**
 * Authorization codes and OAuth refresh families against Postgres, with the clock injected: what
 * expiry does (the e2e tests cannot wait 60 seconds), and the checks that decide which RFC error
 * a client gets.
 */
import { describe, expect, it } from 'vitest'
import { members, users } from '../../../../shared/db/schema'
import { createTenant, withTestDatabase } from '../../../../test/unit/database'
import { rotateRefreshToken, startRefreshFamily } from '../refresh-tokens'
import {
  AUTHORIZATION_CODE_TTL_SECONDS,
  issueAuthorizationCode,
  pkceChallengeOf,
  spendAuthorizationCode,
} from './authorization-codes'
import type { AuthorizationRequest } from './authorization-request'
import { registerClient } from './clients'

const RESOURCE = 'https://api.example.com/mcp'
const REDIRECT = 'http://127.0.0.1:4000/cb'

async function fixture() {
  const tenantId = await createTenant()
  return withTestDatabase(async (db) => {
    const [user] = await db
      .insert(users)
      .values({ email: `oauth-${crypto.randomUUID()}@example.test` })
      .returning({ id: users.id })
    await db.insert(members).values({ tenantId, userId: user!.id, role: 'member' })
    const client = await registerClient(db, { redirect_uris: [REDIRECT], client_name: 'unit' }, 86_400)
    const verifier = 'v'.repeat(43) + crypto.randomUUID().replaceAll('-', '')
    const request: AuthorizationRequest = {
      client: { id: client.client_id, clientName: 'unit', redirectUris: [REDIRECT] },
      redirectUri: REDIRECT,
      state: undefined,
      codeChallenge: await pkceChallengeOf(verifier),
      resource: RESOURCE,
      scope: 'mcp:tools',
    }
    return { tenantId, userId: user!.id, clientId: client.client_id, verifier, request }
  })
}

describe('authorization codes', () => {
  it(`expire after ${AUTHORIZATION_CODE_TTL_SECONDS} s: invalid_grant, and the code is not spent by the attempt`, async () => {
    const f = await fixture()
    const issuedAt = new Date('2026-11-20T10:00:00Z')
    await withTestDatabase(async (db) => {
      const code = await issueAuthorizationCode(db, f.request, f, issuedAt)
      const input = { code, clientId: f.clientId, codeVerifier: f.verifier, redirectUri: REDIRECT }
      const late = new Date(issuedAt.getTime() + AUTHORIZATION_CODE_TTL_SECONDS * 1000)
      await expect(spendAuthorizationCode(db, input, late)).rejects.toMatchObject({
        status: 400,
        code: 'invalid_grant',
      })
      const inTime = new Date(late.getTime() - 1)
      await expect(spendAuthorizationCode(db, input, inTime)).resolves.toMatchObject({
        resource: RESOURCE,
        scope: 'mcp:tools',
      })
    })
  })

  it('are bound to the client, the redirect URI, the verifier and the resource', async () => {
    const f = await fixture()
    const other = await fixture()
    await withTestDatabase(async (db) => {
      const code = await issueAuthorizationCode(db, f.request, f)
      const base = { code, clientId: f.clientId, codeVerifier: f.verifier, redirectUri: REDIRECT }
      const refusal = (input: Partial<typeof base> & { resource?: string }) =>
        spendAuthorizationCode(db, { ...base, ...input }).catch((e: { code: string }) => e.code)
      expect(await refusal({ clientId: other.clientId })).toBe('invalid_grant')
      expect(await refusal({ redirectUri: 'http://127.0.0.1:4000/other' })).toBe('invalid_grant')
      expect(await refusal({ codeVerifier: other.verifier })).toBe('invalid_grant')
      expect(await refusal({ codeVerifier: 'short' })).toBe('invalid_grant')
      expect(await refusal({ resource: 'https://api.example.com/other' })).toBe('invalid_target')
      expect(await refusal({ code: 'svc_ac_not-a-code' })).toBe('invalid_grant')
      await expect(spendAuthorizationCode(db, base)).resolves.toBeTruthy()
    })
  })
})

describe('OAuth refresh families', () => {
  it('an expired refresh token is refused; the family belongs to its client only', async () => {
    const f = await fixture()
    await withTestDatabase(async (db) => {
      const started = new Date()
      const { refreshToken } = await startRefreshFamily(db, {
        tenantId: f.tenantId,
        userId: f.userId,
        ttlSeconds: 60,
        oauth: { clientId: f.clientId, resource: RESOURCE, scope: 'mcp:tools' },
      })
      const later = new Date(started.getTime() + 61_000)
      await expect(
        rotateRefreshToken(db, refreshToken, 60, later, undefined, f.clientId),
      ).rejects.toMatchObject({
        code: 'refresh_token_expired',
      })
      await expect(rotateRefreshToken(db, refreshToken, 60, started, undefined, null)).rejects.toMatchObject({
        code: 'refresh_token_invalid',
      })
      const rotated = await rotateRefreshToken(db, refreshToken, 60, started, undefined, f.clientId)
      expect(rotated.oauth).toEqual({ clientId: f.clientId, resource: RESOURCE, scope: 'mcp:tools' })
    })
  })
})
