/**
 * One write of a Durable Object to its Postgres index (reasoning_jobs, agent_runs): a connection of
 * its own, the write, and on failure a warning and `false` instead of a throw. The object keeps the
 * write as due work until this returns true, so Postgres being down delays the index and loses
 * nothing; writes carry a version that only grows, so a repeated or late one is harmless.
 */
import { type DatabaseEnv, type Drizzle, openDatabase } from '../shared/db/client'
import { errorFields, log } from '../shared/worker/log'

/** The first retry of a failed index write, and the longest wait between two. */
export const INDEX_RETRY_MIN_MS = 5_000
export const INDEX_RETRY_MAX_MS = 300_000

/**
 * When to try a failed index write again: 5 s after the change, then about as long again as the
 * index has already lagged (so the waits double), at most 5 minutes. A long Postgres outage then
 * wakes each waiting object about a dozen times an hour instead of 720.
 */
export function indexRetryDelayMs(now: number, changedAt: number): number {
  return Math.min(INDEX_RETRY_MAX_MS, Math.max(INDEX_RETRY_MIN_MS, now - changedAt))
}

export async function writeIndex(
  env: DatabaseEnv,
  /** What the log line names: the event and the object's id. */
  what: { event: string; ref: Record<string, string> },
  write: (db: Drizzle) => Promise<void>,
): Promise<boolean> {
  let database: ReturnType<typeof openDatabase> | undefined
  try {
    database = openDatabase(env, { max: 1 })
    await write(database.db)
    return true
  } catch (err) {
    log('warn', what.event, { ...what.ref, ...errorFields(err) })
    return false
  } finally {
    await database?.close()
  }
}
