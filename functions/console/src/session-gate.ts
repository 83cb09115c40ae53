/**
 * The gate in front of every console page but the sign-in page and the assets: a live session
 * (./session.ts) or a redirect to sign in, the test/live mode, the session's API client, and for
 * every change (anything but GET and HEAD) the same-origin check, the form read within its limit
 * and a CSRF token that matches the session. Then the workspace the session belongs to, read
 * through the API: a token the API no longer takes ends the session.
 */
import type { MiddlewareHandler } from 'hono'
import { AppError } from '../../../shared/http/errors'
import type { Workspace } from './api-types'
import type { ConsoleApp, ConsoleContext } from './console.context'
import {
  checkSameOrigin,
  cookieValue,
  csrfMatches,
  csrfTokenFor,
  isSessionSecret,
  loadSession,
  SESSION_COOKIE,
  sessionCookie,
  sessionSettings,
} from './session'
import { SessionEnded, sessionApi, withDatabase } from './session-api'

export const MODE_COOKIE = '__Host-svc_console_mode'
/** Largest form a console page posts; a document upload (at most 1 MiB of text, URL-encoded) more. */
const MAX_FORM_BYTES = 64 * 1024
export const MAX_DOCUMENT_FORM_BYTES = 4 * 1024 * 1024

export function signInUrl(next: string, ended = false): string {
  return `/console/sign-in?next=${encodeURIComponent(next)}${ended ? '&expired=1' : ''}`
}

/** Where to come back to after signing in: this page for a GET, the overview after a form. */
export function returnPath(c: ConsoleContext): string {
  if (c.req.method !== 'GET') return '/console/overview'
  const url = new URL(c.req.url)
  return url.pathname + url.search
}

export const sessionGate: MiddlewareHandler<ConsoleApp> = async (c, next) => {
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
    return c.redirect(signInUrl(returnPath(c), Boolean(secret)), 303)
  }
  c.set('session', session)
  c.set('csrf', await csrfTokenFor(session.secret))
  const mode = cookieValue(c.req.header('cookie'), MODE_COOKIE)
  c.set('mode', mode === 'live' ? 'live' : 'test')
  c.set('api', sessionApi(c, session))
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
