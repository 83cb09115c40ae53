/**
 * The database client's deadlines against a server that stops answering (test/fakes/
 * stalled-postgres.ts), through the product's own driver, bridge and request-database wrapper:
 * a stuck query fails with a clear 503 once the deadline passes, its connection is destroyed and
 * nothing more is ever sent on it, and connecting has the same deadline.
 */
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { startWsBridge, type WsBridge } from '../../scripts/db/ws-bridge.ts'
import { useWebSocketConstructor } from '../../shared/db/client.ts'
import type { AppError } from '../../shared/http/errors.ts'
import { withRequestDatabase } from '../../shared/worker/request-database.ts'
import { type StalledPostgres, startStalledPostgres } from '../fakes/stalled-postgres.ts'

const STATEMENT_TIMEOUT_MS = 200

describe('database deadlines', () => {
  let stalled: StalledPostgres
  let bridge: WsBridge
  const pending: Promise<unknown>[] = []

  function scope(target: { host: string; port: number; bridgeUrl: string }) {
    return {
      env: {
        DATABASE_URL: `postgres://postgres@${target.host}:${target.port}/postgres`,
        DATABASE_WS_PROXY: target.bridgeUrl,
        DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      },
      executionCtx: { waitUntil: (p: Promise<unknown>) => void pending.push(p) },
    }
  }

  beforeAll(async () => {
    useWebSocketConstructor(WebSocket)
    stalled = await startStalledPostgres()
    bridge = await startWsBridge({ target: stalled, reconnectWindowMs: 0 })
  })

  afterAll(async () => {
    await Promise.allSettled(pending)
    await bridge.close()
    await stalled.close()
  })

  it('fails a query the server never answers with a clear 503, and destroys its connection', async () => {
    const c = scope({ ...stalled, bridgeUrl: bridge.url })
    const before = stalled.connections.length
    const err = (await withRequestDatabase(c, 'knowledge', (db) => db.execute(sql`select 1 as stuck`)).catch(
      (e: unknown) => e,
    )) as AppError
    expect(err).toMatchObject({ status: 503, code: 'knowledge_store_unavailable' })
    expect(err.message).toBe('The knowledge store did not answer within 2.2 s; retry shortly.')
    expect(err.headers['retry-after']).toBe('2')
    const connection = stalled.connections[before]!
    await connection.closed
    expect(connection.queries).toEqual(['select 1 as stuck'])
  })

  it('never sends another statement on a connection whose query timed out (not even the rollback)', async () => {
    const c = scope({ ...stalled, bridgeUrl: bridge.url })
    const before = stalled.connections.length
    const err = await withRequestDatabase(c, 'platform', (db) =>
      db.transaction(async (tx) => {
        await tx.execute(sql`select 2 as in_transaction`)
      }),
    ).catch((e: unknown) => e)
    expect(err).toMatchObject({ status: 503, code: 'platform_store_unavailable' })
    const connection = stalled.connections[before]!
    await connection.closed
    expect(connection.queries.map((q) => q.trim())).toEqual(['begin'])
    // The pool opened no other connection to run the rollback on either.
    expect(stalled.connections.length).toBe(before + 1)
    // And the request's database closes: drizzle never gives back a client whose `begin` failed,
    // which used to leave the pool's end() waiting for ever.
    await Promise.all(pending.splice(0))
  })

  it('gives connecting the same deadline when the server does not even finish the handshake', async () => {
    const mute = await startStalledPostgres({ answerStartup: false })
    const muteBridge = await startWsBridge({ target: mute, reconnectWindowMs: 0 })
    try {
      const c = scope({ ...mute, bridgeUrl: muteBridge.url })
      const err = (await withRequestDatabase(c, 'identity', (db) => db.execute(sql`select 1`)).catch(
        (e: unknown) => e,
      )) as AppError
      expect(err).toMatchObject({ status: 503, code: 'identity_store_unavailable' })
      expect(err.message).toContain('did not answer within')
      await mute.connections[0]!.closed
      expect(mute.connections[0]!.queries).toEqual([])
    } finally {
      await Promise.allSettled(pending)
      await muteBridge.close()
      await mute.close()
    }
  })
})
