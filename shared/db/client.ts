/**
 * Postgres access for workers and scripts: always the Neon serverless driver (WebSocket
 * Pool) wrapped by drizzle. In production `DATABASE_URL` points at Neon and the driver uses
 * Neon's own WebSocket proxy. Locally `DATABASE_WS_PROXY` names our WebSocket-to-TCP bridge
 * (scripts/db/ws-bridge.ts) that fronts PGlite or a real PostgreSQL server.
 *
 * Workers cannot share I/O objects across requests, so a `Database` belongs to one request:
 * open it lazily, and close it with `waitUntil(db.close())`.
 */
import { neonConfig, Pool } from '@neondatabase/serverless'
import { drizzle, type NeonDatabase } from 'drizzle-orm/neon-serverless'
import { AppError } from '../http/errors'
import * as schema from './schema'

export interface DatabaseEnv {
  DATABASE_URL?: string
  /** host:port[/path] of a local WebSocket-to-TCP bridge; unset in production (Neon). */
  DATABASE_WS_PROXY?: string
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
  const pool = new Pool({ connectionString: env.DATABASE_URL, max: options.max ?? 4 })
  // An idle client that errors (network drop) must not crash the isolate.
  pool.on('error', () => {})
  const db = drizzle({ client: pool, schema })
  let closed = false
  return {
    db,
    pool,
    async close() {
      if (closed) return
      closed = true
      await pool.end().catch(() => {})
    },
  }
}

export { schema }
