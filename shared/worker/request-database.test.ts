import { DrizzleQueryError } from 'drizzle-orm/errors'
import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import { withRequestDatabase } from './request-database'

/** A driver error as node-postgres builds it, wrapped by drizzle as a failed query. */
function driverFailure(fields: { code: string; message: string; detail?: string }): Error {
  const cause = Object.assign(new Error(fields.message), fields)
  return new DrizzleQueryError('insert into memories ...', [], cause)
}

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

  it('answers 400 invalid_character for text the database cannot store, never a 503 to retry', async () => {
    const { c } = scope()
    for (const fields of [
      { code: '22021', message: 'invalid byte sequence for encoding "UTF8": 0x00' },
      {
        code: '22P05',
        message: 'unsupported Unicode escape sequence',
        detail: '\\u0000 cannot be converted to text.',
      },
      {
        code: '22P02',
        message: 'invalid input syntax for type json',
        detail: 'Unicode low surrogate must follow a high surrogate.',
      },
    ]) {
      const err = await withRequestDatabase(c, 'knowledge', async () =>
        Promise.reject(driverFailure(fields)),
      ).catch((e: unknown) => e)
      expect(err).toMatchObject({ status: 400, code: 'invalid_character' })
      expect((err as AppError).message).not.toContain(fields.message)
    }
    // Other invalid input (a bad uuid built by our own code) is not the client's text: still a 503.
    const other = await withRequestDatabase(c, 'knowledge', async () =>
      Promise.reject(driverFailure({ code: '22P02', message: 'invalid input syntax for type uuid: "x"' })),
    ).catch((e: unknown) => e)
    expect(other).toMatchObject({ status: 503 })
  })

  it('says when a statement ran out of time: cancelled by the server, or no answer at all', async () => {
    const { c } = scope()
    const env = { ...c.env, DATABASE_STATEMENT_TIMEOUT_MS: '1500' }
    const cancelled = await withRequestDatabase({ ...c, env }, 'identity', async () =>
      Promise.reject(
        driverFailure({ code: '57014', message: 'canceling statement due to statement timeout' }),
      ),
    ).catch((e: unknown) => e)
    expect(cancelled).toMatchObject({ status: 503, code: 'identity_store_unavailable' })
    expect((cancelled as AppError).message).toContain('after 1.5 s')
    const silent = await withRequestDatabase({ ...c, env }, 'identity', async () =>
      Promise.reject(new Error('Query read timeout')),
    ).catch((e: unknown) => e)
    expect((silent as AppError).message).toContain('did not answer within 3.5 s')
  })

  it('lets an AppError from the work through unchanged', async () => {
    const { c } = scope()
    const refusal = new AppError(404, 'not_found', 'no such thing')
    await expect(withRequestDatabase(c, 'platform', async () => Promise.reject(refusal))).rejects.toBe(
      refusal,
    )
  })
})
