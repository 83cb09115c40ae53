/**
 * What the frame of every page offers besides its own page: the test/live switch (a cookie the
 * gate reads), sign-out, and the inclusion proof that the audit-log and crypto-policy pages verify
 * in the browser (the browser holds no token, so it asks the console, which asks the API).
 */
import type { Hono } from 'hono'
import { AppError } from '../../../shared/http/errors'
import type { ConsoleApp } from './console.context'
import { endSession, sessionCookie } from './session'
import { withDatabase } from './session-api'
import { MODE_COOKIE } from './session-gate'

export function frameActions(app: Hono<ConsoleApp>): void {
  app.post('/mode', (c) => {
    const form = c.get('form')
    const mode = form.mode === 'live' ? 'live' : 'test'
    const back = typeof form.return_to === 'string' && /^\/console\/[\w/-]*$/.test(form.return_to)
    c.header(
      'set-cookie',
      `${MODE_COOKIE}=${mode}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=31536000`,
    )
    return c.redirect(back ? (form.return_to as string) : '/console/overview', 303)
  })

  app.post('/sign-out', async (c) => {
    await withDatabase(c.env, c.executionCtx, (db) => endSession(db, c.get('session').id))
    c.header('set-cookie', sessionCookie('', 0))
    return c.redirect('/console/sign-in?signed_out=1', 303)
  })

  app.get('/api/audit-log/proof', async (c) => {
    const index = c.req.query('index') ?? ''
    if (!/^\d{1,12}$/.test(index)) throw new AppError(400, 'invalid_request', 'index must be a log index.')
    const proof = await c.get('api').get(`/platform/v1/audit-log/proofs/inclusion?index=${index}`)
    if (!proof.ok) return c.json(proof.body as object, proof.status as 400)
    return c.json(proof.body as object, 200)
  })
}
