import type { Context } from 'hono'
import type { Drizzle } from '../../../shared/db/client'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import type { AuthEnv } from './auth.context'

/** Runs `work` with a request-scoped database (see shared/worker/request-database.ts). */
export function withDatabase<T>(
  c: Context<FamilyEnv<AuthEnv>>,
  work: (db: Drizzle) => Promise<T>,
): Promise<T> {
  return withRequestDatabase(c, 'identity', work)
}
