import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import { withRequestDatabase } from './request-database'

function scope() {
  const pending: Promise<unknown>[] = []
  return {
    pending,
    c: {
      // Nothing listens on port 1: the driver fails to connect.
      env: { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/postgres', DATABASE_WS_PROXY: '127.0.0.1:1/v1' },
      executionCtx: { waitUntil: (p: Promise<unknown>) => void pending.push(p) },
    },
  }
}

describe('withRequestDatabase', () => {
  it('turns a driver failure into a 503 naming the store, and still closes the pool', async () => {
    const { c, pending } = scope()
    const err = await withRequestDatabase(c, 'knowledge', (db) => db.execute('select 1')).catch(
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(AppError)
    expect((err as AppError).status).toBe(503)
    expect((err as AppError).code).toBe('knowledge_store_unavailable')
    expect((err as AppError).headers['retry-after']).toBe('2')
    expect(pending).toHaveLength(1)
  })

  it('lets an AppError from the work through unchanged', async () => {
    const { c } = scope()
    const refusal = new AppError(404, 'not_found', 'no such thing')
    await expect(withRequestDatabase(c, 'platform', async () => Promise.reject(refusal))).rejects.toBe(
      refusal,
    )
  })
})
