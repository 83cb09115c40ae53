/** Liveness (no dependencies) and readiness (touches the database). Both public. */
import { sql } from 'drizzle-orm'
import { Hono } from 'hono'
import { openDatabase } from '../../../shared/db/client'
import { errorFields, log } from '../../../shared/worker/log'
import type { GatewayApp } from './gateway.context'

export const healthRoutes = new Hono<GatewayApp>()

healthRoutes.get('/healthz', (c) => c.json({ status: 'ok' }))

healthRoutes.get('/readyz', async (c) => {
  const started = Date.now()
  try {
    const database = openDatabase(c.env, { max: 1 })
    try {
      await database.db.execute(sql`select 1`)
    } finally {
      c.executionCtx.waitUntil(database.close())
    }
    return c.json({
      status: 'ready',
      checks: { database: { status: 'ok', latency_ms: Date.now() - started } },
    })
  } catch (err) {
    log('error', 'readiness_failed', errorFields(err))
    return c.json({ status: 'unavailable', checks: { database: { status: 'error' } } }, 503, {
      'retry-after': '5',
    })
  }
})
