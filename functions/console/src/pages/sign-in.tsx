/**
 * Sign-in and the session cookie. The form posts email and password to the console, which logs in
 * through POST /auth/login like any client (the caller's address is passed on, so the login
 * throttle counts per browser), checks the token by reading the workspace with it, and starts a
 * session (./session.ts). Before any session exists, CSRF is a double-submit: a random value in an
 * HttpOnly cookie and its HMAC in the form.
 */
import type { Hono } from 'hono'
import { base62 } from '../../../../shared/auth/api-keys'
import { AppError } from '../../../../shared/http/errors'
import type { Workspace } from '../api-types'
import { assetUrls } from '../assets'
import { Field } from '../components'
import type { ConsoleApp, ConsoleContext } from '../console.context'
import { jsonRequest } from '../console-api'
import { Document, Notice } from '../layout'
import {
  checkSameOrigin,
  cookieValue,
  createSession,
  csrfMatches,
  csrfTokenFor,
  SIGN_IN_CSRF_COOKIE,
  sessionCookie,
  sessionSettings,
  signInCsrfCookie,
} from '../session'
import { gatewayOf, tokensFrom, withDatabase } from '../session-api'

const CSRF_SHAPE = /^[0-9A-Za-z]{43}$/

function safeNext(next: string | undefined): string {
  return next && /^\/console\/[\w\-/?=&.%]*$/.test(next) && !next.startsWith('/console/sign-')
    ? next
    : '/console/overview'
}

interface FormState {
  email?: string
  next: string
  error?: string
  info?: string
  /** Why the person has to sign in again. */
  warning?: string
  askTenant?: boolean
}

async function render(c: ConsoleContext, state: FormState, status = 200) {
  let seed = cookieValue(c.req.header('cookie'), SIGN_IN_CSRF_COOKIE)
  if (!seed || !CSRF_SHAPE.test(seed)) {
    seed = base62(crypto.getRandomValues(new Uint8Array(32)))
    c.header('set-cookie', signInCsrfCookie(seed, 3600), { append: true })
  }
  const csrf = await csrfTokenFor(seed)
  const assets = await assetUrls()
  const page = (
    <Document title="Sign in" assets={assets}>
      <main id="main" class="sign-in">
        <h1>Sign in to the svc console</h1>
        {state.info ? <Notice kind="ok">{state.info}</Notice> : null}
        {state.warning ? <Notice kind="warn">{state.warning}</Notice> : null}
        {state.error ? (
          <Notice kind="error" title="Not signed in">
            <p id="sign-in-error">{state.error}</p>
          </Notice>
        ) : null}
        <form
          method="post"
          action="/console/sign-in"
          class="panel"
          aria-describedby={state.error ? 'sign-in-error' : undefined}
        >
          <input type="hidden" name="_csrf" value={csrf} />
          <input type="hidden" name="next" value={state.next} />
          <Field id="email" label="Email">
            <input
              id="email"
              name="email"
              type="email"
              autocomplete="username"
              required
              value={state.email ?? ''}
            />
          </Field>
          <Field id="password" label="Password">
            <input id="password" name="password" type="password" autocomplete="current-password" required />
          </Field>
          {state.askTenant ? (
            <Field
              id="tenant_id"
              label="Workspace id"
              hint="You belong to several workspaces; name the one to open."
            >
              <input id="tenant_id" name="tenant_id" type="text" required />
            </Field>
          ) : null}
          <button type="submit">Sign in</button>
        </form>
        <p class="muted">No password yet, or forgot it? Ask your workspace owner to set one for you.</p>
      </main>
    </Document>
  )
  return c.html(`<!doctype html>${String(page)}`, status as 200)
}

export function signInPages(app: Hono<ConsoleApp>): void {
  app.get('/sign-in', (c) =>
    render(c, {
      next: safeNext(c.req.query('next')),
      ...(c.req.query('signed_out') ? { info: 'You are signed out.' } : {}),
      ...(c.req.query('expired')
        ? { warning: 'Your session ended (signed in too long ago, or idle too long). Sign in again.' }
        : {}),
    }),
  )

  app.post('/sign-in', async (c) => {
    checkSameOrigin(c.req.raw, new URL(c.get('baseUrl')).origin)
    const form = new URLSearchParams(await c.req.text())
    const seed = cookieValue(c.req.header('cookie'), SIGN_IN_CSRF_COOKIE)
    const email = (form.get('email') ?? '').trim()
    const next = safeNext(form.get('next') ?? undefined)
    if (!seed || !CSRF_SHAPE.test(seed) || !(await csrfMatches(seed, form.get('_csrf') ?? undefined))) {
      return render(c, { email, next, error: 'This form expired. It has been renewed: sign in again.' }, 403)
    }
    const tenantId = form.get('tenant_id')?.trim()
    const forwarded: Record<string, string> = {}
    const address = c.req.header('cf-connecting-ip') ?? c.req.header('x-forwarded-for')
    if (address) forwarded['cf-connecting-ip'] = address.split(',')[0]!.trim()
    const dispatch = gatewayOf(c)
    const login = await dispatch(
      jsonRequest(
        `${c.get('baseUrl')}/auth/login`,
        { email, password: form.get('password') ?? '', ...(tenantId ? { tenant_id: tenantId } : {}) },
        forwarded,
      ),
    )
    if (!login.ok) {
      const error = (
        (await login.json().catch(() => ({}))) as { error?: { code?: string; message?: string } }
      ).error
      const message =
        error?.code === 'invalid_credentials'
          ? 'The email or password is wrong.'
          : error?.code === 'login_throttled'
            ? (error.message ?? 'Too many failed sign-ins. Wait and try again.')
            : (error?.message ?? `Sign-in failed (HTTP ${login.status}).`)
      return render(
        c,
        { email, next, error: message, askTenant: error?.code === 'tenant_required' || !!tenantId },
        login.status === 429 ? 429 : 401,
      )
    }
    const tokens = tokensFrom(await login.json())
    // Read the workspace with the new token: checks it end to end and names the person.
    const who = await dispatch(
      new Request(`${c.get('baseUrl')}/platform/v1/workspace`, {
        headers: { authorization: `Bearer ${tokens.accessToken}` },
      }),
    )
    if (!who.ok)
      throw new AppError(
        502,
        'sign_in_incomplete',
        `Signed in, but the workspace could not be read (HTTP ${who.status}).`,
      )
    const workspace = (await who.json()) as Workspace
    if (!workspace.user) throw new AppError(502, 'sign_in_incomplete', 'The login token names no user.')
    const settings = sessionSettings(c.env)
    const { secret } = await withDatabase(c.env, c.executionCtx, (db) =>
      createSession(db, { tenantId: workspace.id, userId: workspace.user!.id, tokens, settings }),
    )
    c.header('set-cookie', sessionCookie(secret, settings.ttlSeconds), { append: true })
    c.header('set-cookie', signInCsrfCookie('', 0), { append: true })
    return c.redirect(next, 303)
  })
}
