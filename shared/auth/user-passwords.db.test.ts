import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { withTestDatabase } from '../../test/unit/database'
import { verifyPassword } from '../crypto/password'
import { users } from '../db/schema'
import { setUserPassword } from './user-passwords'

async function newUser(): Promise<{ id: string; email: string }> {
  const email = `person-${crypto.randomUUID()}@example.test`
  return withTestDatabase(async (db) => {
    const [row] = await db.insert(users).values({ email }).returning({ id: users.id })
    return { id: row!.id, email }
  })
}

const hashOf = (id: string) =>
  withTestDatabase(async (db) => {
    const [row] = await db.select({ hash: users.passwordHash }).from(users).where(eq(users.id, id))
    return row?.hash ?? null
  })

describe('setUserPassword', () => {
  it('finds the user by email in any case and stores an Argon2id hash that verifies the password', async () => {
    const user = await newUser()
    const password = 'a long enough passphrase'
    expect(await withTestDatabase((db) => setUserPassword(db, user.email.toUpperCase(), password))).toBe(
      user.id,
    )
    const hash = await hashOf(user.id)
    expect(hash).toMatch(/^\$argon2id\$/)
    expect(await verifyPassword(password, hash!)).toBe(true)
    expect(await verifyPassword('another long passphrase', hash!)).toBe(false)
  })

  it('refuses a short password before touching the stored one', async () => {
    const user = await newUser()
    await withTestDatabase((db) => setUserPassword(db, user.email, 'the first passphrase'))
    const before = await hashOf(user.id)
    await expect(
      withTestDatabase((db) => setUserPassword(db, user.email, 'too short')),
    ).rejects.toMatchObject({
      status: 400,
      code: 'password_too_short',
    })
    expect(await hashOf(user.id)).toBe(before)
  })

  it('answers 404 naming the email when nobody has it', async () => {
    const email = `nobody-${crypto.randomUUID()}@example.test`
    const error = await withTestDatabase((db) =>
      setUserPassword(db, email, 'a long enough passphrase'),
    ).catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 404, code: 'user_not_found', param: 'email' })
    expect((error as Error).message).toContain(email)
  })
})
