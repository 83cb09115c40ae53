/**
 * A request-scoped database for family handlers: opened lazily, closed after the response with
 * `waitUntil`. Failures that are not already an AppError become a 503 naming the family's store
 * (`<store>_store_unavailable`) with Retry-After, saying so when a statement ran out of time, or
 * a 400 `invalid_character` for text Postgres cannot store (shared/db/errors.ts); the driver's
 * detail goes to logs only.
 */
import { type DatabaseEnv, type Drizzle, openDatabase } from '../db/client'
import { databaseFailure } from '../db/errors'
import { AppError } from '../http/errors'

interface RequestScope {
  env: DatabaseEnv
  executionCtx: { waitUntil(promise: Promise<unknown>): void }
}

export async function withRequestDatabase<T>(
  c: RequestScope,
  store: string,
  work: (db: Drizzle) => Promise<T>,
): Promise<T> {
  const database = openDatabase(c.env, { max: 1 })
  try {
    return await work(database.db)
  } catch (err) {
    if (err instanceof AppError) throw err
    throw databaseFailure(err, store, c.env)
  } finally {
    c.executionCtx.waitUntil(database.close())
  }
}
