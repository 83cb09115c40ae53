import type { Context } from 'hono'
import { type Drizzle, openDatabase } from '../../../shared/db/client'
import { AppError } from '../../../shared/http/errors'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import type { AuthEnv } from './auth.context'

/** Runs `work` with a request-scoped database; closes it after the response. */
export async function withDatabase<T>(
  c: Context<FamilyEnv<AuthEnv>>,
  work: (db: Drizzle) => Promise<T>,
): Promise<T> {
  const database = openDatabase(c.env, { max: 1 })
  try {
    return await work(database.db)
  } catch (err) {
    if (err instanceof AppError) throw err
    throw new AppError(
      503,
      'identity_store_unavailable',
      'The identity store is unavailable; retry shortly.',
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
