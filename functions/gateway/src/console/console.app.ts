/**
 * The workspace console at /console, served by the gateway: server-rendered pages (Hono JSX), one
 * small script and one stylesheet from /console/assets, and plain HTML forms for every change
 * (POST, then a redirect or the result page). Sessions and CSRF: ./session.ts. Pages read and
 * change things only through the product's API with the session's access token (./console-api.ts).
 *
 * Response headers on every console answer: a strict Content-Security-Policy (scripts and styles
 * only from this origin, nothing inline, no framing, forms only to this origin),
 * `Cache-Control: no-store` on pages, nosniff, no referrer leaving the origin.
 */
import { Hono } from 'hono'
import { openDatabase } from '../../../../shared/db/client'
import { AppError, toAppError } from '../../../../shared/http/errors'
import { logError } from '../../../../shared/worker/family-app'
import type { GatewayEnv, GatewayVariables } from '../gateway.context'
import { asset, assetUrls } from './assets'
import { type ConsoleApi, consoleApi, type Dispatch, jsonRequest } from './console-api'
import type { ConsoleMode, PageFrame, Workspace } from './layout'
import { errorPage } from './pages/error-page'
import {
  type ConsoleSession,
  checkSameOrigin,
  cookieValue,
  csrfMatches,
  csrfTokenFor,
  endSession,
  isSessionSecret,
  loadSession,
  SESSION_COOKIE,
  type SessionTokens,
  sessionCookie,
  sessionSettings,
  storeRefreshedTokens,
} from './session'

export const MODE_COOKIE = '__Host-svc_console_mode'
/** Largest form a console page posts; a document upload (at most 1 MiB of text, URL-encoded) more. */
const MAX_FORM_BYTES = 64 * 1024
const MAX_DOCUMENT_FORM_BYTES = 4 * 1024 * 1024

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

export interface ConsoleVariables extends GatewayVariables {
  session: ConsoleSession
  api: ConsoleApi
  csrf: string
  mode: ConsoleMode
  workspace: Workspace
  /** The form fields of a POST (after the CSRF check). */
  form: Record<string, string | string[]>
}

export interface ConsoleApp {
  Bindings: GatewayEnv
  Variables: ConsoleVariables
}

export type ConsoleContext = import('hono').Context<ConsoleApp>

class SessionEnded extends Error {}

/** The console's pages and their session handling; `dispatch` is the gateway's own fetch. */
export function createConsoleApp(
  dispatch: Dispatch,
  registerPages: (app: Hono<ConsoleApp>, dispatch: Dispatch) => void,
) {
  const app = new Hono<ConsoleApp>()

  app.use(async (c, next) => {
    await next()
    const headers = c.res.headers
    headers.set('content-security-policy', CONTENT_SECURITY_POLICY)
    headers.set('x-content-type-options', 'nosniff')
    headers.set('referrer-policy', 'same-origin')
    headers.set('x-frame-options', 'DENY')
    headers.set('cross-origin-opener-policy', 'same-origin')
    if (!headers.has('cache-control')) headers.set('cache-control', 'no-store')
  })

  app.onError((err, c) => {
    if (err instanceof SessionEnded) {
      c.header('set-cookie', sessionCookie('', 0))
      return c.redirect(signInUrl(c.req.method === 'GET' ? currentPath(c) : '/console/overview', true), 303)
    }
    const appError = toAppError(err)
    logError(c.get('requestId'), appError)
    return errorPage(c, appError)
  })

  app.get('/assets/:name', async (c) => {
    const found = await asset(c.req.param('name'))
    if (!found) throw new AppError(404, 'not_found', 'No such console asset.')
    return c.body(found.body, 200, {
      'content-type': found.type,
      'cache-control': 'public, max-age=31536000, immutable',
    })
  })

  // Every page below needs a session; POSTs also a valid CSRF token from this origin.
  app.use('*', async (c, next) => {
    const path = c.req.path
    if (path.startsWith('/console/assets/') || path === '/console/sign-in') return next()
    const settings = sessionSettings(c.env)
    const secret = cookieValue(c.req.header('cookie'), SESSION_COOKIE)
    const session = isSessionSecret(secret)
      ? await withDatabase(c.env, c.executionCtx, (db) => loadSession(db, secret, settings))
      : null
    if (!session) {
      if (c.req.method !== 'GET') checkSameOrigin(c.req.raw, new URL(c.get('baseUrl')).origin)
      // A cookie that opens no session: it ended (expired, idle, signed out elsewhere). Drop it and say so.
      if (secret) c.header('set-cookie', sessionCookie('', 0))
      return c.redirect(
        signInUrl(c.req.method === 'GET' ? currentPath(c) : '/console/overview', Boolean(secret)),
        303,
      )
    }
    c.set('session', session)
    c.set('csrf', await csrfTokenFor(session.secret))
    const mode = cookieValue(c.req.header('cookie'), MODE_COOKIE)
    c.set('mode', mode === 'live' ? 'live' : 'test')
    c.set('api', sessionApi(c, dispatch, session))
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      checkSameOrigin(c.req.raw, new URL(c.get('baseUrl')).origin)
      c.set(
        'form',
        await readForm(c.req.raw, path === '/console/documents' ? MAX_DOCUMENT_FORM_BYTES : MAX_FORM_BYTES),
      )
      const token = c.get('form')._csrf
      if (typeof token !== 'string' || !(await csrfMatches(session.secret, token))) {
        throw new AppError(
          403,
          'csrf_token_invalid',
          'This form has expired or did not come from the console. Reload the page and try again.',
        )
      }
    }
    const workspace = await c.get('api').get<Workspace>('/platform/v1/workspace')
    if (!workspace.ok) {
      if (workspace.status === 401) throw new SessionEnded()
      throw new AppError(workspace.status, workspace.error.code, workspace.error.message)
    }
    c.set('workspace', workspace.body)
    return next()
  })

  app.get('/', (c) => c.redirect('/console/overview', 302))

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

  // The proof the audit-log and crypto-policy pages verify in the browser (the browser holds no
  // token, so it asks the console, which asks the API).
  app.get('/api/audit-log/proof', async (c) => {
    const index = c.req.query('index') ?? ''
    if (!/^\d{1,12}$/.test(index)) throw new AppError(400, 'invalid_request', 'index must be a log index.')
    const proof = await c.get('api').get(`/platform/v1/audit-log/proofs/inclusion?index=${index}`)
    if (!proof.ok) return c.json(proof.body as object, proof.status as 400)
    return c.json(proof.body as object, 200)
  })

  registerPages(app, dispatch)
  return app
}

function signInUrl(next: string, ended = false): string {
  return `/console/sign-in?next=${encodeURIComponent(next)}${ended ? '&expired=1' : ''}`
}

function currentPath(c: ConsoleContext): string {
  const url = new URL(c.req.url)
  return url.pathname + url.search
}

export async function withDatabase<T>(
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  work: (db: import('../../../../shared/db/client').Drizzle) => Promise<T>,
): Promise<T> {
  const database = openDatabase(env, { max: 1 })
  try {
    return await work(database.db)
  } catch (err) {
    if (err instanceof AppError || err instanceof SessionEnded) throw err
    throw new AppError(
      503,
      'console_store_unavailable',
      'The console cannot reach its database; retry shortly.',
      {
        internalMessage: String(err),
      },
    )
  } finally {
    ctx.waitUntil(database.close())
  }
}

async function readForm(request: Request, maxBytes: number): Promise<Record<string, string | string[]>> {
  const length = Number(request.headers.get('content-length') ?? '0')
  if (length > maxBytes) throw new AppError(413, 'request_too_large', 'This form is too large.')
  const type = request.headers.get('content-type') ?? ''
  if (!type.startsWith('application/x-www-form-urlencoded')) {
    throw new AppError(
      415,
      'unsupported_media_type',
      'Console forms are sent as application/x-www-form-urlencoded.',
    )
  }
  const text = await request.text()
  if (text.length > maxBytes) throw new AppError(413, 'request_too_large', 'This form is too large.')
  const out: Record<string, string | string[]> = {}
  for (const [name, value] of new URLSearchParams(text)) {
    const existing = out[name]
    if (existing === undefined) out[name] = value
    else out[name] = Array.isArray(existing) ? [...existing, value] : [existing, value]
  }
  return out
}

/** Tokens from a login or refresh answer, with the access token's expiry. */
export function tokensFrom(body: {
  access_token: string
  refresh_token: string
  expires_in: number
}): SessionTokens {
  return {
    accessToken: body.access_token,
    refreshToken: body.refresh_token,
    accessExpiresAt: Date.now() + body.expires_in * 1000,
  }
}

function sessionApi(c: ConsoleContext, dispatch: Dispatch, session: ConsoleSession) {
  const baseUrl = c.get('baseUrl')
  let refreshing: Promise<boolean> | null = null
  const refresh = () => {
    refreshing ??= (async () => {
      const res = await dispatch(
        jsonRequest(`${baseUrl}/auth/token/refresh`, { refresh_token: session.tokens.refreshToken }),
        c.env,
        c.executionCtx as ExecutionContext,
      )
      if (!res.ok) {
        // Spent, revoked or the person left the workspace: the session is over.
        await withDatabase(c.env, c.executionCtx, (db) => endSession(db, session.id))
        throw new SessionEnded()
      }
      const tokens = tokensFrom(await res.json())
      await withDatabase(c.env, c.executionCtx, (db) => storeRefreshedTokens(db, session, tokens))
      return true
    })()
    return refreshing
  }
  return consoleApi({
    dispatch,
    env: c.env,
    ctx: c.executionCtx as ExecutionContext,
    baseUrl,
    session,
    mode: c.get('mode'),
    accessToken: async () => {
      if (session.tokens.accessExpiresAt - 30_000 <= Date.now()) await refresh()
      return session.tokens.accessToken
    },
    refreshAfterRefusal: async () => {
      if (refreshing) return false
      return refresh()
    },
  })
}

/** What every page needs for its frame. */
export async function frameOf(c: ConsoleContext, title: string, section: string): Promise<PageFrame> {
  return {
    title,
    section,
    csrf: c.get('csrf'),
    mode: c.get('mode'),
    workspace: c.get('workspace'),
    assets: await assetUrls(),
    path: c.req.path,
  }
}

export function isAdmin(c: ConsoleContext): boolean {
  const role = c.get('workspace').role
  return role === 'owner' || role === 'admin'
}

export function formString(c: ConsoleContext, name: string): string {
  const value = c.get('form')[name]
  return typeof value === 'string' ? value : (value?.[0] ?? '')
}

export function formList(c: ConsoleContext, name: string): string[] {
  const value = c.get('form')[name]
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

/** Renders a JSX page with the doctype. */
export function html(c: ConsoleContext, element: unknown, status = 200) {
  return c.html(`<!doctype html>${String(element)}`, status as 200)
}
