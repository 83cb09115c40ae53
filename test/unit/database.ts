/**
 * Database fixtures for the `unit-db` project (files named `*.db.test.ts`): the throw-away
 * Postgres that test/support/unit-database.setup.ts starts is bound as DATABASE_URL and
 * DATABASE_WS_PROXY. Every test makes its own tenants, so tests never see each other's rows.
 */
import { env } from 'cloudflare:test'
import { type DatabaseEnv, type Drizzle, openDatabase } from '../../shared/db/client'
import { tenants } from '../../shared/db/schema'

export const databaseEnv = env as unknown as Required<DatabaseEnv>

/** Runs `work` on a connection of its own, closed afterwards. */
export async function withTestDatabase<T>(work: (db: Drizzle) => Promise<T>): Promise<T> {
  const database = openDatabase(databaseEnv, { max: 1 })
  try {
    return await work(database.db)
  } finally {
    await database.close()
  }
}

/** A new tenant on the given plan; returns its id. */
export function createTenant(planId = 'pro'): Promise<string> {
  return withTestDatabase(async (db) => {
    const [row] = await db
      .insert(tenants)
      .values({ name: `unit ${crypto.randomUUID()}`, planId })
      .returning({ id: tenants.id })
    return row!.id
  })
}
