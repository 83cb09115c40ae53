/**
 * Postgres access for workers and scripts: always the Neon serverless driver (WebSocket
 * Pool) wrapped by drizzle. In production `DATABASE_URL` points at Neon and the driver uses
 * Neon's own WebSocket proxy. Locally `DATABASE_WS_PROXY` names our WebSocket-to-TCP bridge
 * (scripts/db/ws-bridge.ts) that fronts PGlite or a real PostgreSQL server.
 *
 * Workers cannot share I/O objects across requests, so a `Database` belongs to one request:
 * open it lazily, and close it with `waitUntil(db.close())`.
 *
 * No query can hold a request (or a connection) for good: the server cancels a statement after
 * DATABASE_STATEMENT_TIMEOUT_MS (the database default the migrate command sets, so it holds
 * through any pooler), and the client gives up CLIENT_GRACE_MS later when the server has not
 * answered at all (a wedged or unreachable server): the query fails with `Query read timeout`
 * and its connection is destroyed on the spot, never handed out again. Connecting has the same
 * deadline. shared/db/errors.ts turns both into a clear 503.
 */
import { Client, neonConfig, Pool, type PoolClient } from '@neondatabase/serverless'
import { drizzle, type NeonDatabase } from 'drizzle-orm/neon-serverless'
import { z } from 'zod'
import { envReader, wholeNumberVar } from '../config/worker-env'
import { AppError } from '../http/errors'
import * as schema from './schema'

export interface DatabaseEnv {
  DATABASE_URL?: string
  /** host:port[/path] of a local WebSocket-to-TCP bridge; unset in production (Neon). */
  DATABASE_WS_PROXY?: string
  /** Longest a statement may run, in milliseconds (default 10000). */
  DATABASE_STATEMENT_TIMEOUT_MS?: string
}

export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000

/**
 * How much longer than the statement timeout the client waits for an answer: enough for the
 * server's own cancellation (a clean error, the connection stays usable) to arrive first.
 */
export const CLIENT_GRACE_MS = 2_000

/** The env every worker with data reads, beside its own (its part of each worker's env schema). */
export const DATABASE_VARS = {
  DATABASE_STATEMENT_TIMEOUT_MS: wholeNumberVar(DEFAULT_STATEMENT_TIMEOUT_MS),
}
const databaseSettings = envReader('database', z.object(DATABASE_VARS))

/**
 * DATABASE_STATEMENT_TIMEOUT_MS in milliseconds: a positive whole number, default 10000; any other
 * value is a 503 naming it (shared/config/worker-env.ts), never the default.
 */
export function statementTimeoutMs(env: Pick<DatabaseEnv, 'DATABASE_STATEMENT_TIMEOUT_MS'>): number {
  return databaseSettings(env).DATABASE_STATEMENT_TIMEOUT_MS
}

/** The driver's message for a query that missed the client deadline (node-postgres `query_timeout`). */
export const QUERY_READ_TIMEOUT = 'Query read timeout'

type QueryMethod = Client['query']

/**
 * The driver's client, except that a query which misses its deadline takes its connection with
 * it: the connection is destroyed, so the statement still stuck on it can never delay (or be
 * mistaken for the answer of) a later query, and the pool drops it (it is no longer queryable).
 */
class DeadlineClient extends Client {
  constructor(config?: ConstructorParameters<typeof Client>[0]) {
    super(config)
    // The pool listens for errors only on idle clients. A server that drops a connection while it
    // is handed out (an idle-connection timeout, a restart) must not raise an unhandled 'error'
    // event: the connection's next query fails instead ("not queryable"), as a 503.
    this.on('error', () => {})
  }
}

const baseQuery: QueryMethod = Client.prototype.query
DeadlineClient.prototype.query = function query(this: DeadlineClient, ...args: unknown[]) {
  const giveUpOnTimeout = (err: unknown) => {
    if (err instanceof Error && err.message === QUERY_READ_TIMEOUT) void this.end().catch(() => {})
  }
  const last = args[args.length - 1]
  if (typeof last === 'function') {
    args[args.length - 1] = (err: unknown, result: unknown) => {
      giveUpOnTimeout(err)
      return (last as (err: unknown, result: unknown) => unknown)(err, result)
    }
  }
  const result: unknown = Reflect.apply(baseQuery, this, args)
  if (result instanceof Promise) result.catch(giveUpOnTimeout)
  return result
} as QueryMethod

class DeadlinePool extends Pool {
  override Client = DeadlineClient
}

export type Drizzle = NeonDatabase<typeof schema>

export interface Database {
  db: Drizzle
  pool: Pool
  close(): Promise<void>
}

let configuredProxy: string | undefined | null = null

function configureDriver(proxy: string | undefined): void {
  if (configuredProxy === proxy) return
  configuredProxy = proxy
  if (proxy) {
    const base = proxy.replace(/^wss?:\/\//, '').replace(/\/$/, '')
    neonConfig.wsProxy = (host, port) => `${base}?address=${host}:${port}`
    neonConfig.useSecureWebSocket = false
    neonConfig.pipelineConnect = false
    neonConfig.pipelineTLS = false
  }
}

/** Lets Node scripts supply `ws` as the WebSocket implementation. */
export function useWebSocketConstructor(ctor: unknown): void {
  neonConfig.webSocketConstructor = ctor as typeof neonConfig.webSocketConstructor
}

export function openDatabase(env: DatabaseEnv, options: { max?: number } = {}): Database {
  if (!env.DATABASE_URL) {
    throw new AppError(503, 'database_not_configured', 'The service database is not configured.', {
      internalMessage: 'DATABASE_URL is not set',
    })
  }
  configureDriver(env.DATABASE_WS_PROXY)
  const deadline = statementTimeoutMs(env) + CLIENT_GRACE_MS
  const pool = new DeadlinePool({
    connectionString: env.DATABASE_URL,
    max: options.max ?? 4,
    query_timeout: deadline,
    connectionTimeoutMillis: deadline,
  })
  // An idle client that errors (network drop) must not crash the isolate.
  pool.on('error', () => {})
  // Clients handed out and not yet given back. drizzle's transaction() never gives its client back
  // when `begin` itself fails (a timeout, a dropped connection), and the pool's end() waits for
  // every client it handed out: close() gives those back, as failed, so it always finishes.
  const checkedOut = new Set<PoolClient>()
  pool.on('acquire', (client: PoolClient) => checkedOut.add(client))
  pool.on('release', (_err: unknown, client: PoolClient) => checkedOut.delete(client))
  const db = drizzle({ client: pool, schema })
  let closed = false
  return {
    db,
    pool,
    async close() {
      if (closed) return
      closed = true
      for (const client of checkedOut)
        client.release(new Error('the request that used this connection is over'))
      await pool.end().catch(() => {})
    },
  }
}

export { schema }
