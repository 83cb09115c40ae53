/**
 * Embedded Postgres for local development: PGlite (Postgres compiled to WASM) persisted in a
 * data folder and served over the Postgres wire protocol by pglite-socket, so that the Neon
 * driver reaches it through the same WebSocket bridge it would use for a real server.
 */
import { mkdirSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'

export interface EmbeddedPostgres {
  host: string
  port: number
  /** Connection string as seen through the bridge (the bridge ignores host and port). */
  connectionString: string
  close(): Promise<void>
}

export async function startEmbeddedPostgres(options: {
  dataDir: string
  host?: string
  port?: number
}): Promise<EmbeddedPostgres> {
  mkdirSync(options.dataDir, { recursive: true })
  const db = await PGlite.create({ dataDir: options.dataDir })
  const host = options.host ?? '127.0.0.1'
  const server = new PGLiteSocketServer({ db, host, port: options.port ?? 0, maxConnections: 32 })
  await server.start()
  const address = server.getServerConn()
  const port = Number(address.split(':').pop())
  return {
    host,
    port,
    connectionString: `postgres://postgres@${host}:${port}/postgres`,
    async close() {
      await server.stop()
      await db.close()
    },
  }
}
