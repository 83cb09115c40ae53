/**
 * A scratch database on the real PostgreSQL server (127.0.0.1:5432 by default, TEST_POSTGRES_URL
 * to change it), created per test run and dropped afterwards. Reached through the same Neon driver
 * and WebSocket bridge the product uses.
 */
import type { Pool } from '@neondatabase/serverless'
import WebSocket from 'ws'
import { startWsBridge } from '../../scripts/db/ws-bridge.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'

export const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

async function admin<T>(work: (pool: Pool) => Promise<T>): Promise<T> {
  useWebSocketConstructor(WebSocket)
  const url = new URL(ADMIN_URL)
  const bridge = await startWsBridge({ target: { host: url.hostname, port: Number(url.port || 5432) } })
  const database = openDatabase({ DATABASE_URL: ADMIN_URL, DATABASE_WS_PROXY: bridge.url }, { max: 1 })
  try {
    return await work(database.pool)
  } finally {
    await database.close()
    await bridge.close()
  }
}

export async function createScratchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `svc_test_${Date.now()}_${Math.floor(Math.random() * 1e6)}`
  await admin((pool) => pool.query(`create database ${name}`))
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: () =>
      admin((pool) => pool.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  }
}
