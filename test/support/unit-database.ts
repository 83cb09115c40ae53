/**
 * A throw-away Postgres for the `unit-db` tests: an in-memory PGlite with the migrations applied
 * and the plans seeded, behind the same WebSocket bridge `npm start` uses, so tests inside workerd
 * reach it through the product's own Neon-driver code path. Run as its own Node process by
 * unit-database.setup.ts: it prints the connection as one JSON line and runs until its stdin
 * closes (the test run ended, or the runner died).
 */
import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import WebSocket from 'ws'
import { runMigrations } from '../../scripts/db/migrate.ts'
import { keepExtendedQueriesTogether } from '../../scripts/db/pglite-socket-sequencing.ts'
import { seedPlans } from '../../scripts/db/seed.ts'
import { startWsBridge } from '../../scripts/db/ws-bridge.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'

const pglite = await PGlite.create({ extensions: { vector } })
const server = new PGLiteSocketServer({ db: pglite, host: '127.0.0.1', port: 0, maxConnections: 32 })
keepExtendedQueriesTogether(server)
await server.start()
const port = Number(server.getServerConn().split(':').pop())
const bridge = await startWsBridge({ target: { host: '127.0.0.1', port } })
const env = { DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/postgres`, DATABASE_WS_PROXY: bridge.url }
await runMigrations(env)
useWebSocketConstructor(WebSocket)
const database = openDatabase(env, { max: 1 })
await seedPlans(database.db)
await database.close()

process.stdout.write(`${JSON.stringify(env)}\n`)
process.stdin.resume()
process.stdin.on('close', async () => {
  await bridge.close()
  await server.stop()
  await pglite.close()
  process.exit(0)
})
