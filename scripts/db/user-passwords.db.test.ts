/**
 * setUserPassword against Postgres: PGlite with every migration applied, as `npm run db:migrate`
 * applies them (statement by statement, in order), through drizzle.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { eq } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyPassword } from '../../shared/crypto/password.ts'
import type { Drizzle } from '../../shared/db/client.ts'
import * as schema from '../../shared/db/schema.ts'
import { users } from '../../shared/db/schema.ts'
import { MIGRATIONS_FOLDER } from './migrate.ts'
import { setUserPassword } from './user-passwords.ts'

const client = new PGlite()
// The same query builder over another driver: setUserPassword only builds and runs queries.
const database = drizzle(client, { schema }) as unknown as Drizzle
afterAll(() => client.close())

beforeAll(async () => {
  const files = readdirSync(MIGRATIONS_FOLDER)
    .filter((f) => f.endsWith('.sql'))
    .sort()
  for (const file of files) {
    const sql = readFileSync(path.join(MIGRATIONS_FOLDER, file), 'utf8')
    for (const statement of sql.split('--> statement-breakpoint')) {
      if (statement.trim()) await client.exec(statement)
    }
  }
}, 60_000)

const withTestDatabase = <T>(work: (db: Drizzle) => Promise<T>): Promise<T> => work(database)

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
