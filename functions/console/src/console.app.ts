/**
 * The console worker: the workspace console under /console and the API reference at /docs, reached
 * through the gateway's service binding like every family. Console pages are server-rendered (Hono
 * JSX), with one small script and one stylesheet from /console/assets, and plain HTML forms for every
 * change (POST, then a redirect or the result page). Sessions and CSRF: ./session.ts and
 * ./session-gate.ts. Pages read and change things only through the product's API with the
 * session's access token (./console-api.ts).
 *
 * Response headers on every console answer: a strict Content-Security-Policy (scripts and styles
 * only from this origin, nothing inline, no framing, forms only to this origin),
 * `Cache-Control: no-store` on pages, nosniff, no referrer leaving the origin.
 */
import { Hono } from 'hono'
import { AppError, toAppError } from '../../../shared/http/errors'
import { logServerError } from '../../../shared/worker/log'
import { requestContextOf } from '../../../shared/worker/request-context'
import { asset } from './assets'
import type { ConsoleApp } from './console.context'
import { registerConsolePages } from './console-pages'
import { docsRoutes } from './docs-reference'
import { frameActions } from './frame-actions'
import { errorPage } from './pages/error-page'
import { sessionCookie } from './session'
import { SessionEnded } from './session-api'
import { returnPath, sessionGate, signInUrl } from './session-gate'

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ')

const pages = new Hono<ConsoleApp>()

pages.use(async (c, next) => {
  await next()
  const headers = c.res.headers
  headers.set('content-security-policy', CONTENT_SECURITY_POLICY)
  headers.set('x-content-type-options', 'nosniff')
  headers.set('referrer-policy', 'same-origin')
  headers.set('x-frame-options', 'DENY')
  headers.set('cross-origin-opener-policy', 'same-origin')
  if (!headers.has('cache-control')) headers.set('cache-control', 'no-store')
})

pages.onError((err, c) => {
  if (err instanceof SessionEnded) {
    c.header('set-cookie', sessionCookie('', 0))
    return c.redirect(signInUrl(returnPath(c), true), 303)
  }
  const appError = toAppError(err)
  logServerError(appError, { request_id: c.get('requestId') })
  return errorPage(c, appError)
})

pages.get('/assets/:name', async (c) => {
  const found = await asset(c.req.param('name'))
  if (!found) throw new AppError(404, 'not_found', 'No such console asset.')
  return c.body(found.body, 200, {
    'content-type': found.type,
    'cache-control': 'public, max-age=31536000, immutable',
  })
})

// Every page below needs a session; POSTs also a valid CSRF token from this origin.
pages.use('*', sessionGate)
pages.get('/', (c) => c.redirect('/console/overview', 302))
frameActions(pages)
registerConsolePages(pages)
pages.all('*', () => {
  throw new AppError(404, 'not_found', 'There is no console page at this address.')
})

export const consoleApp = new Hono<ConsoleApp>()

// The request id and public base URL the gateway established (shared/worker/request-context.ts).
consoleApp.use(async (c, next) => {
  const context = requestContextOf(c.req.raw)
  c.set('requestId', context?.requestId ?? `req_${crypto.randomUUID().replaceAll('-', '')}`)
  c.set('baseUrl', context?.baseUrl ?? new URL(c.req.url).origin)
  await next()
})
consoleApp.route('/console', pages)
consoleApp.route('/', docsRoutes)
