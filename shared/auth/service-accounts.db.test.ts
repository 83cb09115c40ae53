import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { createTenant, withTestDatabase } from '../../test/unit/database'
import { verifyPassword } from '../crypto/password'
import { serviceAccounts } from '../db/schema'
import { AppError } from '../http/errors'
import {
  createServiceAccount,
  listServiceAccounts,
  revokeServiceAccount,
  rotateServiceAccountSecret,
} from './service-accounts'

const storedHash = (id: string) =>
  withTestDatabase(async (db) => {
    const [row] = await db
      .select({ secretHash: serviceAccounts.secretHash })
      .from(serviceAccounts)
      .where(eq(serviceAccounts.id, id))
    return row!.secretHash
  })

async function refusal(work: Promise<unknown>): Promise<AppError> {
  const error = await work.then(
    () => new Error('accepted'),
    (e: unknown) => e,
  )
  if (!(error instanceof AppError)) throw error
  return error
}

describe('service accounts', () => {
  it('returns the secret once at creation and stores only its Argon2id hash', async () => {
    const tenantId = await createTenant()
    const { account, secret } = await withTestDatabase((db) =>
      createServiceAccount(db, {
        tenantId,
        name: 'ci deployer',
        audiences: ['external-api', 'internal-service', 'external-api'],
        scopes: ['models:read'],
        createdBy: 'key:test',
      }),
    )
    expect(secret).toMatch(/^svc_sa_[0-9A-Za-z]{43}$/)
    expect(account).toMatchObject({
      object: 'service_account',
      tenant_id: tenantId,
      name: 'ci deployer',
      audiences: ['external-api', 'internal-service'],
      scopes: ['models:read'],
      created_by: 'key:test',
      rotated_at: null,
      revoked_at: null,
    })
    expect(JSON.stringify(account)).not.toContain(secret)
    const hash = await storedHash(account.id)
    expect(hash).toMatch(/^\$argon2id\$/)
    expect(hash).not.toContain(secret)
    expect(await verifyPassword(secret, hash)).toBe(true)
  })

  it("lists a tenant's accounts newest first, and never another tenant's", async () => {
    const tenantId = await createTenant()
    const other = await createTenant()
    await withTestDatabase(async (db) => {
      for (const name of ['first', 'second']) {
        await createServiceAccount(db, { tenantId, name, audiences: ['internal-service'], createdBy: null })
      }
      await createServiceAccount(db, {
        tenantId: other,
        name: 'theirs',
        audiences: ['internal-service'],
        createdBy: null,
      })
      const listed = await listServiceAccounts(db, tenantId)
      expect(listed.map((a) => a.name)).toEqual(['second', 'first'])
      expect(listed.every((a) => !('secret' in a))).toBe(true)
    })
  })

  it('rotates the secret: the new one verifies, the old one no longer does', async () => {
    const tenantId = await createTenant()
    const { account, secret: old } = await withTestDatabase((db) =>
      createServiceAccount(db, {
        tenantId,
        name: 'rotating',
        audiences: ['internal-service'],
        createdBy: null,
      }),
    )
    const rotated = await withTestDatabase((db) => rotateServiceAccountSecret(db, tenantId, account.id))
    expect(rotated.secret).not.toBe(old)
    expect(rotated.account.rotated_at).not.toBeNull()
    const hash = await storedHash(account.id)
    expect(await verifyPassword(rotated.secret, hash)).toBe(true)
    expect(await verifyPassword(old, hash)).toBe(false)
  })

  it('revokes once; a revoked account can be neither rotated nor revoked again', async () => {
    const tenantId = await createTenant()
    const { account } = await withTestDatabase((db) =>
      createServiceAccount(db, { tenantId, name: 'leaving', audiences: ['external-api'], createdBy: null }),
    )
    const revoked = await withTestDatabase((db) => revokeServiceAccount(db, tenantId, account.id))
    expect(revoked.revoked_at).not.toBeNull()
    for (const again of [
      withTestDatabase((db) => revokeServiceAccount(db, tenantId, account.id)),
      withTestDatabase((db) => rotateServiceAccountSecret(db, tenantId, account.id)),
    ]) {
      expect(await refusal(again)).toMatchObject({
        status: 404,
        code: 'service_account_not_found',
        param: 'serviceAccountId',
      })
    }
  })

  it("refuses to rotate or revoke another tenant's account, as if it did not exist", async () => {
    const owner = await createTenant()
    const intruder = await createTenant()
    const { account, secret } = await withTestDatabase((db) =>
      createServiceAccount(db, {
        tenantId: owner,
        name: 'mine',
        audiences: ['internal-service'],
        createdBy: null,
      }),
    )
    const rotate = await refusal(
      withTestDatabase((db) => rotateServiceAccountSecret(db, intruder, account.id)),
    )
    const revoke = await refusal(withTestDatabase((db) => revokeServiceAccount(db, intruder, account.id)))
    expect(rotate.code).toBe('service_account_not_found')
    expect(revoke.code).toBe('service_account_not_found')
    expect(await verifyPassword(secret, await storedHash(account.id))).toBe(true)
    const [listed] = await withTestDatabase((db) => listServiceAccounts(db, owner))
    expect(listed?.revoked_at).toBeNull()
  })
})
