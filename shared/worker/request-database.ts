/**
 * A request-scoped database for family handlers: opened lazily, closed after the response with
 * `waitUntil`. Failures that are not already an AppError become a 503 naming the family's store
 * (`<store>_store_unavailable`) with Retry-After; the driver's detail goes to logs only.
 */
import { type DatabaseEnv, type Drizzle, openDatabase } from '../db/client'
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
    throw new AppError(
      503,
      `${store}_store_unavailable`,
      `The ${store} store is unavailable; retry shortly.`,
      {
        internalMessage: `${String(err)}${err instanceof Error && err.cause ? ` (cause: ${String(err.cause)})` : ''}`,
        cause: err,
        headers: { 'retry-after': '2' },
      },
    )
  } finally {
    c.executionCtx.waitUntil(database.close())
  }
}
