/**
 * The workspace console in a real browser (Debian's Chromium, headless) against the stack started
 * with `npm start`: sign-in and the session cookie's flags, no token in script-readable storage,
 * session expiry, the Content-Security-Policy, CSRF on every change, API keys made, rotated and
 * revoked in the console and used with plain fetches, usage charts after chat calls, observability
 * tokens used by the OpenTelemetry exporter, another tenant's data never shown, what a member sees,
 * sign-out. The test runs in workspaces of its own (made through the stack's database like the
 * global setup's), so other test files sharing the stack neither see nor disturb it. Screenshots
 * of every page (wide and narrow) land in test-artifacts/console/<kind>/.
 */
import path from 'node:path'
import { ExportResultCode } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { sql } from 'drizzle-orm'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { NAV } from '../../functions/console/src/navigation.ts'
import { ensureWorkspace } from '../../scripts/db/seed.ts'
import { generatePassword, setUserPassword } from '../../scripts/db/user-passwords.ts'
import { generateApiKey } from '../../shared/auth/api-keys.ts'
import { type Browser, launchBrowser } from '../support/browser.ts'
import { tag, upstream, withDatabase } from './chat-fixtures.ts'
import { ionqControl } from './fakes/ionq.fake.ts'

const stack = inject('stack')
const url = (p: string) => `${stack.baseUrl}${p}`

interface ConsoleWorkspace {
  tenantId: string
  ownerUserId: string
  email: string
  password: string
  testKey: string
  liveKey: string
}

/** A workspace of this test's own: an owner with a password, a test and a live key. */
async function consoleWorkspace(planId: string, label: string): Promise<ConsoleWorkspace> {
  const suffix = crypto.randomUUID().slice(0, 8)
  const email = `console-${label}-${suffix}@example.test`
  const password = generatePassword()
  const testKey = generateApiKey('test')
  const liveKey = generateApiKey('live')
  return withDatabase(async (db) => {
    const { tenantId, ownerUserId } = await ensureWorkspace(db, {
      tenantName: `Console ${label} ${suffix}`,
      planId,
      ownerEmail: email,
      keys: [
        { name: 'console test key', key: testKey },
        { name: 'console live key', key: liveKey },
      ],
    })
    await setUserPassword(db, email, password)
    return { tenantId, ownerUserId, email, password, testKey, liveKey }
  })
}

/** A person with the member role in `tenantId`, with a password. */
async function addMember(tenantId: string): Promise<{ email: string; password: string }> {
  const email = `console-member-${crypto.randomUUID().slice(0, 8)}@example.test`
  const password = generatePassword()
  await withDatabase(async (db) => {
    await db.execute(sql`
      with person as (insert into users (email, display_name) values (${email}, 'Member') returning id)
      insert into members (tenant_id, user_id, role) select ${tenantId}::uuid, id, 'member' from person`)
    await setUserPassword(db, email, password)
  })
  return { email, password }
}

/** The fields of a reasoning job (GET /svc/quantum-reasoning/jobs/{id}) this test reads. */
interface ApiReasoningJob {
  status: string
  prompt?: string
  result?: string
  selected_index?: number
  candidates?: Record<string, unknown>[]
  inference_receipt_id?: string | null
}

/** A QPU provider connection as the API lists it. */
interface ApiConnection {
  id: string
  name: string
  kind: string
  target: string
  last_test: { ok: boolean; error: { code: string } | null } | null
}

let ws: ConsoleWorkspace
/** Another workspace (on Pro), whose data the console must never show. */
let other: ConsoleWorkspace
let browser: Browser
let page: Page

async function signIn(p: Page, password = ws.password, email = ws.email) {
  await p.goto(url('/console/sign-in'))
  await p.getByLabel('Email').fill(email)
  await p.getByLabel('Password').fill(password)
  await p.getByRole('button', { name: 'Sign in' }).click()
}

async function sessionCookie() {
  const cookies = await browser.context.cookies(stack.baseUrl)
  return cookies.find((c) => c.name === '__Host-svc_console')
}

/** A form post as another site (or a script without the page's token) would send it. */
async function forgedPost(
  pathname: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
) {
  const cookie = await sessionCookie()
  return fetch(url(pathname), {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: `${cookie?.name}=${cookie?.value}`,
      ...headers,
    },
    body: new URLSearchParams(form).toString(),
  })
}

/**
 * A real agent turn that leaves its run open: the model asks to write a file, and an edit tool
 * waits for the person's approval.
 */
const startOpenRun = (
  credential: string,
  runId: string,
  sessionId: string,
  headers: Record<string, string> = {},
) =>
  fetch(url('/svc/code/v1/turns'), {
    method: 'POST',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      protocol: 'svc.code.v1',
      session_id: sessionId,
      run_id: runId,
      turn_id: 'turn-1',
      model: 'svc-comb',
      mode: 'edit',
      request: 'call write_file',
      client_tools: [
        { name: 'write_file', description: 'w', input_schema: { type: 'object' }, tags: ['edit'] },
      ],
      workspace: {},
      transcript: [],
      capabilities: {},
    }),
  })

const memories = (key: string) => fetch(url('/svc/memories'), { headers: { authorization: `Bearer ${key}` } })

/** Screenshots wide and 390 px narrow; on the narrow screen nothing may widen the page itself. */
async function shots(name: string) {
  await browser.shot(page, `${name}-wide`)
  await page.setViewportSize({ width: 390, height: 844 })
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
  await browser.shot(page, `${name}-narrow`)
  await page.setViewportSize({ width: 1280, height: 900 })
  expect(overflow, `${name}: the page is wider than a 390 px screen`).toBeLessThanOrEqual(0)
}

/** One span exported by the OpenTelemetry SDK's OTLP/HTTP exporter with `token`. */
async function exportSpan(token: string, requestId: string) {
  const memory = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] })
  provider.getTracer('console-e2e').startSpan('console token check').end()
  await provider.forceFlush()
  const exporter = new OTLPTraceExporter({
    url: url('/otlp/v1/traces'),
    headers: { authorization: `Bearer ${token}`, 'x-request-id': requestId },
    timeoutMillis: 10_000,
  })
  try {
    return await new Promise<{ code: ExportResultCode; error?: Error }>((resolve) =>
      exporter.export(memory.getFinishedSpans(), resolve),
    )
  } finally {
    await exporter.shutdown()
    await provider.shutdown()
  }
}

beforeAll(async () => {
  ws = await consoleWorkspace('team', 'owner')
  other = await consoleWorkspace('pro', 'other')
  browser = await launchBrowser(path.join('console', stack.kind))
  page = await browser.context.newPage()
}, 60_000)

afterAll(async () => {
  await browser?.close()
})

describe('console: signing in', () => {
  it('refuses a wrong password, then signs in with an HttpOnly, Secure, SameSite=Strict cookie', async () => {
    const first = await page.goto(url('/console/overview'))
    expect(new URL(page.url()).pathname).toBe('/console/sign-in')
    expect(first?.headers()['content-security-policy']).toContain("script-src 'self'")
    await shots('sign-in')

    await signIn(page, 'not the password')
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('The email or password is wrong')
    expect(await sessionCookie()).toBeUndefined()

    await signIn(page)
    await page.waitForURL(/\/console\/overview$/)
    const cookie = await sessionCookie()
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/' })
    expect(cookie?.value).toMatch(/^svc_cs_[0-9A-Za-z]{43}$/)
    // Nothing a script can read holds a credential.
    const readable = await page.evaluate(() =>
      JSON.stringify([document.cookie, { ...localStorage }, { ...sessionStorage }]),
    )
    expect(readable).not.toMatch(/svc_cs_|svc_rt_|svc_sk_|eyJ/)
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Overview')
    await shots('overview')
  })

  it('every page answers with a strict CSP and no caching', async () => {
    const res = await page.goto(url('/console/api-keys'))
    const headers = res?.headers() ?? {}
    expect(headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    expect(headers['cache-control']).toBe('no-store')
    expect(headers['x-frame-options']).toBe('DENY')
    // The page has no inline script or style: the CSP would block them.
    const inline = await page.evaluate(() => {
      const all = Array.from(document.querySelectorAll('*'))
      return (
        document.querySelectorAll('script:not([src]), style, [style]').length +
        all.filter((e) => Array.from(e.attributes).some((a) => a.name.startsWith('on'))).length
      )
    })
    expect(inline).toBe(0)
  })
})

describe('console: API keys', () => {
  it('creates a key whose secret is shown once, works at once, and is refused once revoked', async () => {
    await page.goto(url('/console/api-keys'))
    await page.getByLabel('Name').fill('browser-made key')
    await page.getByRole('button', { name: 'Create key' }).click()
    const secret = (await page.locator('#new-secret').textContent())?.trim() ?? ''
    expect(secret).toMatch(/^svc_sk_test_[0-9A-Za-z]{43}$/)
    // The copy button puts exactly the secret on the clipboard.
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.baseUrl })
    await page.getByRole('button', { name: 'Copy' }).click()
    await expect.poll(() => page.locator('#copy-status').textContent()).toBe('Copied to the clipboard.')
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret)
    await shots('api-keys-created')
    expect((await memories(secret)).status).toBe(200)

    // Reloaded, the page no longer shows the secret, only its last four characters.
    await page.goto(url('/console/api-keys'))
    const content = await page.content()
    expect(content).not.toContain(secret)
    const row = page.locator('tr', { hasText: 'browser-made key' })
    await expect.poll(() => row.textContent()).toContain(`…${secret.slice(-4)}`)
    await shots('api-keys')

    page.once('dialog', (dialog) => dialog.accept())
    await row.getByRole('button', { name: 'Revoke browser-made key' }).click()
    await page.waitForURL(/revoked=/)
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('revoked')
    const refused = await memories(secret)
    expect(refused.status).toBe(401)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('revoked_api_key')
  })

  it('the test/live switch shows the keys of the mode chosen, and stays chosen', async () => {
    await page.goto(url('/console/api-keys'))
    const live = page.getByRole('button', { name: 'Live', exact: true })
    await live.click()
    await page.waitForURL(/\/console\/api-keys$/)
    expect(await live.getAttribute('aria-pressed')).toBe('true')
    const keys = page.getByRole('region', { name: 'live API keys' })
    expect(await keys.textContent()).toContain('console live key')
    expect(await keys.textContent()).not.toContain('console test key')
    await page.goto(url('/console/overview'))
    expect(await page.locator('main .lead').textContent()).toContain('showing live mode')
    await page.getByRole('button', { name: 'Test', exact: true }).click()
    await page.waitForURL(/\/console\/overview$/)
    expect(await page.locator('main .lead').textContent()).toContain('showing test mode')
  })

  it('rotates a key: the new secret works, the old one is refused when no grace period is chosen', async () => {
    await page.goto(url('/console/api-keys'))
    await page.getByLabel('Name').fill('rotated key')
    await page.getByRole('button', { name: 'Create key' }).click()
    const first = (await page.locator('#new-secret').textContent())?.trim() ?? ''
    expect((await memories(first)).status).toBe(200)
    await page.goto(url('/console/api-keys'))
    const row = page.locator('tr', { hasText: 'rotated key' })
    await row.getByLabel('Grace period for rotated key').selectOption('0')
    await row.getByRole('button', { name: 'Rotate rotated key' }).click()
    const second = (await page.locator('#new-secret').textContent())?.trim() ?? ''
    expect(second).toMatch(/^svc_sk_test_[0-9A-Za-z]{43}$/)
    expect(second).not.toBe(first)
    expect((await memories(second)).status).toBe(200)
    expect((await memories(first)).status).toBe(401)
  })

  it('shows the server validation message at the field', async () => {
    await page.goto(url('/console/api-keys'))
    await page.getByLabel('Name').fill('dated key')
    await page.getByLabel(/^Expires/).fill('2001-01-01')
    await page.getByRole('button', { name: 'Create key' }).click()
    await expect
      .poll(() => page.getByRole('alert').first().textContent())
      .toContain('expires_at must be in the future')
  })

  it('refuses a change without the CSRF token, or from another origin, and does nothing', async () => {
    const before = await page.goto(url('/console/api-keys'))
    expect(before?.status()).toBe(200)
    const csrf = await page.locator('input[name=_csrf]').first().inputValue()

    const noToken = await forgedPost('/console/api-keys', { name: 'forged', mode: 'test' })
    expect(noToken.status).toBe(403)
    expect(await noToken.text()).toContain('csrf_token_invalid')
    const otherSite = await forgedPost(
      '/console/api-keys',
      { _csrf: csrf, name: 'forged', mode: 'test' },
      { origin: 'https://attacker.example', 'sec-fetch-site': 'cross-site' },
    )
    expect(otherSite.status).toBe(403)
    expect(await otherSite.text()).toContain('csrf_origin_mismatch')

    await page.goto(url('/console/api-keys'))
    expect(await page.content()).not.toContain('forged')
  })

  it("never shows another workspace's keys, nor lets it touch them", async () => {
    const made = await fetch(url('/platform/v1/api-keys'), {
      method: 'POST',
      headers: { authorization: `Bearer ${other.liveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'tenant B secret project', mode: 'test' }),
    })
    expect(made.status).toBe(201)
    const theirs = (await made.json()) as { id: string; key: string }
    await page.goto(url('/console/api-keys'))
    expect(await page.content()).not.toContain('tenant B secret project')

    const csrf = await page.locator('input[name=_csrf]').first().inputValue()
    const res = await forgedPost(
      `/console/api-keys/${theirs.id}/revoke`,
      { _csrf: csrf },
      { origin: stack.baseUrl },
    )
    expect(res.status).toBe(404)
    expect((await memories(theirs.key)).status).toBe(200)
  })

  it("a key's page sets its limits, shows its spend filling up, is where a spent key's refusal points, and gives its signed statement", async () => {
    await page.goto(url('/console/api-keys'))
    await page.getByLabel('Name').fill('limited key')
    await page.getByRole('button', { name: 'Create key' }).click()
    const secret = (await page.locator('#new-secret').textContent())?.trim() ?? ''
    await page.goto(url('/console/api-keys'))
    await page.getByRole('link', { name: 'limited key' }).click()
    await page.waitForURL(/\/console\/api-keys\/[0-9a-f-]{36}$/)
    const keyPage = page.url()
    expect(await page.locator('main').textContent()).toContain('No spend limit')

    // A tenth of a cent a day, on one model.
    await page.getByLabel('Spend limit (USD)').fill('0.001')
    await page.getByLabel('Period').selectOption('day')
    await page.getByRole('checkbox', { name: 'svc-cell' }).check()
    await page.getByRole('button', { name: 'Save limits' }).click()
    await page.waitForURL(/saved=1/)
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Limits saved')
    expect(await page.getByLabel('Spend limit (USD)').inputValue()).toBe('0.001')
    expect(await page.getByRole('checkbox', { name: 'svc-cell' }).isChecked()).toBe(true)

    const chat = (model: string) =>
      fetch(url('/svc/chat/completions'), {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 16 }),
      })
    expect((await chat('svc-brood')).status).toBe(403)
    // Spend until the limit refuses; the refusal's action opens this key's page.
    let refused: Response | null = null
    for (let i = 0; i < 200 && !refused; i++) {
      const res = await chat('svc-cell')
      if (res.status !== 200) refused = res
      else await res.body?.cancel()
    }
    expect(refused?.status).toBeGreaterThanOrEqual(402)
    const body = (await refused!.json()) as {
      svc_upgrade: { actions: { kind: string; url: string | null }[] }
    }
    const action = body.svc_upgrade.actions.find((a) => a.kind === 'manage_spend_cap')
    expect(new URL(action!.url!).pathname).toBe(new URL(keyPage).pathname)

    await page.goto(keyPage)
    const spent = Number(await page.locator('#key-spend').getAttribute('value'))
    expect(spent).toBeGreaterThan(0)
    expect(spent).toBeLessThanOrEqual(0.001)
    expect(await page.locator('#spend-heading + meter + p').textContent()).toMatch(/of \$0\.0010 spent/)
    await shots('api-key-limits')

    const download = await page.request.get(`${keyPage}/usage-statement`)
    expect(download.status()).toBe(200)
    expect(download.headers()['content-disposition']).toMatch(/^attachment; filename="usage-statement-/)
    expect(JSON.stringify(await download.json())).toContain('payloadType')
  })
})

describe('console: usage', () => {
  it('charts test-mode chat calls and lists them in the request log', async () => {
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const res = await fetch(url('/svc/chat/completions'), {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.testKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'svc-cell', messages: [{ role: 'user', content: `usage ${i}` }] }),
      })
      expect(res.status).toBe(200)
      ids.push(res.headers.get('x-request-id') ?? '')
    }
    // The ledger is written by the RateLimiter within RATE_LIMIT_LEDGER_FLUSH_MS of each request.
    await expect
      .poll(
        async () => {
          await page.goto(url('/console/usage?days=7'))
          return page.locator('table').last().textContent()
        },
        { timeout: 15_000 },
      )
      .toContain(ids[2])
    const content = (await page.locator('table').last().textContent()) ?? ''
    for (const id of ids) expect(content).toContain(id)
    // Each row shows the status its client received and the latency the chat worker measured.
    const headers = await page.locator('table').last().locator('thead th').allTextContents()
    const column = (name: string) => headers.indexOf(name)
    expect(column('Status')).toBeGreaterThan(0)
    expect(column('Latency')).toBeGreaterThan(0)
    for (const id of ids) {
      const cells = page.locator('table').last().locator('tbody tr', { hasText: id }).locator('td')
      expect(await cells.nth(column('Status')).textContent(), id).toBe('200')
      expect(await cells.nth(column('Latency')).textContent(), id).toMatch(/^\d+ ms$|^\d+\.\d+ s$/)
    }
    expect(
      await page.locator('svg[data-chart=usage-tokens] rect[data-series=svc-cell]').count(),
    ).toBeGreaterThan(0)
    // Per model: one bar for svc-cell, its total the tokens of the three calls.
    const byModel = page.locator('[data-chart=usage-tokens-by-model]')
    expect(await byModel.locator('rect[data-series=svc-cell]').count()).toBe(1)
    expect(await byModel.getAttribute('aria-label')).toMatch(/^Tokens: svc-cell [\d.]+k? tokens\.$/)
    await shots('usage')

    // Filtered by the key that made the calls they stay; by another key they are gone.
    const keySelect = page.getByLabel('API key')
    const ours =
      (await keySelect.locator('option', { hasText: 'console test key' }).getAttribute('value')) ?? ''
    await keySelect.selectOption(ours)
    await page.getByRole('button', { name: 'Apply' }).click()
    await page.waitForURL(new RegExp(`key_id=${ours}`))
    expect(await page.locator('table').last().textContent()).toContain(ids[0])
    const another =
      (await keySelect.locator('option', { hasText: 'rotated key' }).first().getAttribute('value')) ?? ''
    await keySelect.selectOption(another)
    await page.getByRole('button', { name: 'Apply' }).click()
    await page.waitForURL(new RegExp(`key_id=${another}`))
    expect(await page.locator('table').last().textContent()).toContain('No metered requests yet.')
  })

  it('live requests that failed are logged with their status: a stream cut by an error event, a provider 5xx at zero charge', async () => {
    const live = (content: string, stream: boolean) =>
      fetch(url('/svc/chat/completions'), {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.liveKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'svc-cell', stream, messages: [{ role: 'user', content }] }),
      })
    // A stream whose provider sends an error event after its 200 head.
    const cut = tag('console-cut')
    await upstream.script({
      match: { contains: cut },
      fault: { kind: 'error_event', afterChunks: 2 },
      times: 1,
    })
    const streamed = await live(`Tell me a story ${cut}`, true)
    expect(streamed.status).toBe(200)
    const events = await streamed.text()
    expect(events).toContain('"type":"upstream_error"')
    expect(events).not.toContain('[DONE]')
    // A JSON request whose provider answers 500 on every try: 502, nothing produced.
    const down = tag('console-down')
    await upstream.script({ match: { contains: down }, fault: { kind: 'status', status: 500 } })
    const failed = await live(`Hello ${down}`, false)
    expect(failed.status).toBe(502)
    // One success on the same provider closes its breaker's count again for later tests.
    expect((await live('Hello again', false)).status).toBe(200)
    const ids = {
      cut: streamed.headers.get('x-request-id') ?? '',
      down: failed.headers.get('x-request-id') ?? '',
    }
    try {
      await page.goto(url('/console/usage?days=7'))
      await page.getByRole('button', { name: 'Live', exact: true }).click()
      await page.waitForURL(/\/console\/usage/)
      const log = page.locator('table').last()
      await expect
        .poll(
          async () => {
            await page.goto(url('/console/usage?days=7'))
            return log.textContent()
          },
          { timeout: 15_000 },
        )
        .toContain(ids.down)
      const headers = await log.locator('thead th').allTextContents()
      const cell = (id: string, column: string) =>
        log.locator('tbody tr', { hasText: id }).locator('td').nth(headers.indexOf(column)).textContent()
      expect(await cell(ids.cut, 'Status')).toBe('502')
      expect(await cell(ids.cut, 'Latency')).toMatch(/^\d+ ms$|^\d+\.\d+ s$/)
      expect(await cell(ids.down, 'Status')).toBe('502')
      expect(await cell(ids.down, 'Latency')).toMatch(/^\d+ ms$|^\d+\.\d+ s$/)
      expect(await cell(ids.down, 'Tokens in / out')).toBe('0 / 0')
      expect(await cell(ids.down, 'Credits')).toBe('$0.00')
      await shots('usage-live')
      // Failed only: the two failures stay, the successful request after them goes.
      await page.locator('#outcome').selectOption('failed')
      await page.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL(/outcome=failed/)
      const statuses = await log
        .locator('tbody tr')
        .evaluateAll(
          (rows, column) => rows.map((r) => r.querySelectorAll('td')[column]?.textContent ?? ''),
          headers.indexOf('Status'),
        )
      expect(statuses.length).toBeGreaterThanOrEqual(2)
      expect(statuses.every((s) => Number(s) >= 400)).toBe(true)
      expect(await log.textContent()).toContain(ids.cut)
    } finally {
      await page.getByRole('button', { name: 'Test', exact: true }).click()
      await page.waitForURL(/\/console\/usage/)
    }
  })
})

describe('console: crypto policy and the audit log', () => {
  const lastChange = () =>
    page.locator('dt', { hasText: 'Last change' }).locator('xpath=following-sibling::dd[1]').textContent()
  const setPolicy = (body: unknown) =>
    fetch(url('/platform/v1/crypto/policy'), {
      method: 'PUT',
      headers: { authorization: `Bearer ${ws.liveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })

  it('switches to enforce after a warning; a blocked request appears with a proof verified in the browser', async () => {
    try {
      await page.goto(url('/console/crypto-policy'))
      const form = page.locator('form[action="/console/crypto-policy/preset"]')
      await form.getByLabel('Preset').selectOption('strict')
      await form.getByRole('radio', { name: /enforce/ }).check()
      let question = ''
      page.once('dialog', (dialog) => {
        question = dialog.message()
        void dialog.accept()
      })
      await form.getByRole('button', { name: 'Apply preset' }).click()
      await page.waitForURL(/saved=/)
      expect(question).toContain('refused with 403')
      await expect.poll(() => page.locator('.badge.enforce').first().textContent()).toBe('enforce')
      // The last change names the person who made it, not their user id.
      expect(await lastChange()).toContain(`by you (${ws.email})`)
      expect(await lastChange()).not.toContain('user:')

      // A client declaring a classical algorithm is now refused, and the refusal is logged first.
      const refused = await fetch(url('/svc/memories'), {
        headers: { authorization: `Bearer ${ws.testKey}`, 'x-svc-crypto-algorithms': 'rsa-2048' },
      })
      expect(refused.status).toBe(403)
      const requestId = refused.headers.get('x-request-id') ?? ''
      await page.goto(url('/console/crypto-policy'))
      const row = page.locator('tr', { hasText: requestId })
      await expect.poll(() => row.locator('.badge').textContent()).toBe('blocked')
      await row.getByRole('button', { name: 'Verify proof' }).click()
      await expect
        .poll(() => row.locator('output').textContent(), { timeout: 10_000 })
        .toMatch(/^Verified in this browser: entry \d+ is in the log of \d+ entries/)
      // The result names the log key (one long word): it wraps inside its cell, the table stays put.
      const sideways = await row
        .locator('output')
        .evaluate(
          (o) =>
            (o.closest('.table-wrap') as HTMLElement).scrollWidth -
            (o.closest('.table-wrap') as HTMLElement).clientWidth,
        )
      expect(sideways).toBeLessThanOrEqual(0)
      await shots('crypto-policy')

      // The server's validation problems come back at the field they name.
      const fields = page.locator('form[action="/console/crypto-policy/fields"]')
      await fields.getByLabel(/^Allowed signature algorithms/).fill('dilithium-3, rsa-2048')
      await fields.getByRole('radio', { name: 'audit', exact: true }).check()
      await fields.getByRole('button', { name: 'Save fields' }).click()
      await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('rsa-2048')
      await expect
        .poll(() => page.locator('#f-allowedSignatureAlgorithms-error').textContent())
        .toContain('allowedSignatureAlgorithms')

      // The check tool.
      await page.goto(url('/console/crypto-policy?algorithm=ed25519&context=token_signature'))
      await expect
        .poll(() => page.locator('[data-check-result]').getAttribute('data-check-result'))
        .toBe('blocked')
    } finally {
      // Back to the Default preset in audit mode, so the pages after this one stay reachable.
      expect((await setPolicy({ preset: 'default', mode: 'audit' })).status).toBe(200)
    }
  })

  it('lists policy changes in the audit log and verifies any entry in the browser', async () => {
    await page.goto(url('/console/audit-log'))
    // The test before set Strict in the console, then Default with the live key: the newest entries say so.
    await expect
      .poll(() => page.locator('table').textContent())
      .toContain('Policy set to default (audit) by key “console live key”')
    // Actors by name: the console's own change was made by the signed-in person, who signed in first.
    const entries = (await page.locator('table').textContent()) ?? ''
    expect(entries).toContain(`Policy set to strict (enforce) by you (${ws.email})`)
    expect(entries).toContain(`Token for you (${ws.email})`)
    expect(entries).not.toContain(`user:${ws.ownerUserId}`)
    const newest = page.locator('tbody tr').first()
    await newest.getByRole('button', { name: /Verify the inclusion proof/ }).click()
    await expect
      .poll(() => newest.locator('output').textContent(), { timeout: 10_000 })
      .toContain('Verified in this browser')
    await shots('audit-log')
    // The policy page names the key that made the last change.
    await page.goto(url('/console/crypto-policy'))
    expect(await lastChange()).toContain('by key “console live key”')
  })
})

describe('console: plans, service accounts, agent runs', () => {
  it("the upgrade actions of a 403 action-required body open this console's pages", async () => {
    // The other workspace is on Pro; svc-hive needs Team.
    const refused = await fetch(url('/svc/chat/completions'), {
      method: 'POST',
      headers: { authorization: `Bearer ${other.testKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'svc-hive', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(refused.status).toBe(403)
    const body = (await refused.json()) as {
      error: { message: string }
      svc_upgrade: { actions: { kind: string; url: string | null }[] }
    }
    const links = body.svc_upgrade.actions.filter((a) => a.url !== null).map((a) => a.url!)
    expect(links.length).toBeGreaterThan(0)
    expect(body.error.message).toContain(url('/console/billing/plans?plan=team'))
    for (const link of links) {
      expect(link.startsWith(url('/console/'))).toBe(true)
      expect((await page.goto(link))?.status(), link).toBe(200)
    }
  })

  it('shows the plan an upgrade action suggests, and every billing page an action links to', async () => {
    await page.goto(url('/console/billing/plans?plan=enterprise'))
    await expect.poll(() => page.locator('[data-plan=enterprise] h3').textContent()).toContain('suggested')
    await expect.poll(() => page.locator('[aria-current=true] h3').textContent()).toContain('your plan')
    await shots('plans')
    for (const path of ['usage-credits', 'spend-cap', 'credits', 'add-ons']) {
      const res = await page.goto(url(`/console/billing/${path}`))
      expect(res?.status(), path).toBe(200)
    }
    await shots('billing-settings')
    expect((await page.goto(url('/console/contact-sales')))?.status()).toBe(200)
  })

  it('creates a service account whose secret works once shown, and revokes it', async () => {
    await page.goto(url('/console/service-accounts'))
    await page.getByLabel('Name').fill('browser-made account')
    await page.getByRole('button', { name: 'Create service account' }).click()
    const secret = (await page.locator('#new-secret').textContent())?.trim() ?? ''
    const id = (await page.locator('.notice code').first().textContent())?.trim() ?? ''
    const exchange = () =>
      fetch(url('/auth/service-token'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: id, client_secret: secret }),
      })
    expect((await exchange()).status).toBe(200)
    await shots('service-accounts')
    page.once('dialog', (dialog) => dialog.accept())
    await page.getByRole('button', { name: 'Revoke browser-made account' }).click()
    await page.waitForURL(/revoked=/)
    expect((await exchange()).status).toBe(401)
  })

  it('looks agent runs up by id', async () => {
    await page.goto(url(`/console/agent-runs?run_id=${crypto.randomUUID()}`))
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('No such run in this workspace')
    await shots('agent-runs')
  })

  it('shows a run the signed-in person started, with its state and usage, and cancels it', async () => {
    // A run belongs to the credential that started it: here the owner's own login, as the agent CLI uses.
    const login = await fetch(url('/auth/login'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: ws.email, password: ws.password }),
    })
    expect(login.status).toBe(200)
    const { access_token } = (await login.json()) as { access_token: string }
    const runId = crypto.randomUUID()
    // In test mode, the mode the console shows (its switch is on Test): a live run is not listed there.
    const turn = await startOpenRun(access_token, runId, 'console-e2e', { 'x-svc-mode': 'test' })
    expect(turn.status, await turn.clone().text()).toBe(200)
    await turn.text()

    await page.goto(url('/console/agent-runs'))
    await page.getByLabel('Run id').fill(runId)
    await page.getByRole('button', { name: 'Look up' }).click()
    const facts = page.locator('dl.facts')
    await expect.poll(() => facts.textContent()).toContain('Turns1')
    expect(await facts.textContent()).toMatch(/Tokens[\d,]+ of [\d,]+/)
    expect(await facts.textContent()).toContain('Pending approvalswrite_file')
    await shots('agent-run')
    page.once('dialog', (dialog) => dialog.accept())
    await page.getByRole('button', { name: 'Cancel run' }).click()
    await expect
      .poll(() => page.getByRole('status').first().textContent())
      .toContain(`Run ${runId} cancelled.`)
    expect(await facts.locator('.badge').textContent()).toBe('cancelled')
  })

  it("lists the workspace's runs, one started with an API key among them, and cancels it from the list", async () => {
    // A real agent turn with the workspace's test key (not the login).
    const turn = (key: string, runId: string) => startOpenRun(key, runId, 'console-e2e-key')
    const runId = crypto.randomUUID()
    const started = await turn(ws.testKey, runId)
    expect(started.status, await started.clone().text()).toBe(200)
    expect(await started.text()).toContain('approval.requested')
    // Another workspace's run, started meanwhile, must never be listed here.
    const theirs = crypto.randomUUID()
    await (await turn(other.testKey, theirs)).text()

    const row = page.locator(`tr[data-run-id="${runId}"]`)
    await expect
      .poll(
        async () => {
          await page.goto(url('/console/agent-runs'))
          return row.count()
        },
        { timeout: 10_000 },
      )
      .toBe(1)
    const text = (await row.textContent()) ?? ''
    expect(text).toContain('awaiting_approval')
    expect(text).toContain('svc-comb')
    expect(text).toContain('console test key')
    expect(text).toMatch(/test\s*edit/)
    expect(await page.locator(`tr[data-run-id="${theirs}"]`).count()).toBe(0)
    await shots('agent-runs-list')

    // The state filter.
    await page.getByLabel('State').selectOption('completed')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.waitForURL(/state=completed/)
    expect(await row.count()).toBe(0)
    await page.getByLabel('State').selectOption('awaiting_approval')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.waitForURL(/state=awaiting_approval/)
    expect(await row.count()).toBe(1)

    // The run's detail.
    await row.getByRole('link').click()
    await page.waitForURL(new RegExp(`/console/agent-runs/${runId}`))
    const facts = (await page.locator('dl.facts').textContent()) ?? ''
    expect(facts).toContain('Started bykey “console test key”')
    expect(facts).toContain('Pending approvalswrite_file')
    expect(facts).toContain('Turns1')
    await shots('agent-run-detail')

    // Cancelled from the list, as an admin may cancel any run of the workspace.
    await page.goto(url('/console/agent-runs'))
    page.once('dialog', (dialog) => dialog.accept())
    await page.getByRole('button', { name: `Cancel run ${runId}` }).click()
    await expect
      .poll(() => page.getByRole('status').first().textContent())
      .toContain(`Run ${runId} cancelled.`)
    expect(await row.locator('.badge').first().textContent()).toBe('cancelled')
    expect(await row.getByRole('button').count()).toBe(0)

    // The key that started it sees it cancelled through the agent API.
    const status = await fetch(url(`/svc/agents/runs/${runId}`), {
      headers: { authorization: `Bearer ${ws.testKey}` },
    })
    expect(status.status).toBe(200)
    expect(await status.json()).toMatchObject({ id: runId, state: 'cancelled', pending_approvals: [] })
    // The other workspace's run was not touched.
    const untouched = await fetch(url(`/svc/agents/runs/${theirs}`), {
      headers: { authorization: `Bearer ${other.testKey}` },
    })
    expect(await untouched.json()).toMatchObject({ state: 'awaiting_approval' })
  })
})

describe('console: documents, reasoning, telemetry', () => {
  it('uploads a document, finds it by retrieval, shows its chunks and deletes it', async () => {
    const source = `console/handbook-${crypto.randomUUID().slice(0, 8)}.md`
    await page.goto(url('/console/documents'))
    await page.getByLabel(/^Source/).fill(source)
    await page
      .getByLabel('Text')
      .fill('Rotate the signing keys every ninety days. Revoked keys are refused at once.')
    await page.getByRole('button', { name: 'Upload' }).click()
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain(`“${source}” created`)
    await page.getByLabel('Query').fill('signing keys ninety days')
    await page.getByRole('button', { name: 'Retrieve' }).click()
    await expect
      .poll(() => page.getByRole('list', { name: 'Retrieved chunks' }).textContent())
      .toContain(source)
    await shots('documents')
    await page.getByRole('link', { name: source }).click()
    await expect.poll(() => page.locator('main ol').textContent()).toContain('Rotate the signing keys')
    await page.goto(url('/console/documents'))
    page.once('dialog', (dialog) => dialog.accept())
    await page.getByRole('button', { name: `Delete ${source}` }).click()
    await page.waitForURL(/deleted=1/)
    expect(await page.locator('table').textContent()).not.toContain(source)
  })

  it("shows a finished reasoning job's candidates, selection and signed receipt, and erases its content", async () => {
    const auth = { headers: { authorization: `Bearer ${ws.testKey}` } }
    const created = await fetch(url('/svc/quantum-reasoning/jobs'), {
      method: 'POST',
      headers: {
        ...auth.headers,
        'content-type': 'application/json',
        'idempotency-key': `console-e2e-${crypto.randomUUID()}`,
      },
      body: JSON.stringify({
        prompt: 'Which is larger, 2^10 or 10^3?',
        model: 'svc-hive',
        product: 'simulation_cloud',
      }),
    })
    expect(created.status).toBe(202)
    const { job } = (await created.json()) as { job: { id: string } }
    const jobUrl = url(`/svc/quantum-reasoning/jobs/${job.id}`)
    const apiJob = async () => ((await (await fetch(jobUrl, auth)).json()) as { job: ApiReasoningJob }).job
    // The receipt is signed and logged once the job has finished.
    await expect
      .poll(async () => (await apiJob()).inference_receipt_id ?? null, { timeout: 20_000 })
      .toMatch(/^[0-9a-f-]{36}$/)
    const done = await apiJob()
    expect(done.status).toBe('completed')
    const receipt = (await (await fetch(`${jobUrl}/receipt`, auth)).json()) as {
      receipt_id: string
      envelope: { signatures: { keyid: string }[] }
      audit_log: { index: number }
    }

    await page.goto(url(`/console/reasoning/jobs/${job.id}`))
    expect(await page.locator('dl.facts').first().textContent()).toContain('completed')
    expect(await page.getByRole('region', { name: 'Prompt' }).textContent()).toContain(
      'Which is larger, 2^10 or 10^3?',
    )
    // Every candidate (svc-hive makes four) with its evidence; the selected one holds the result.
    const candidates = page.locator('ol.candidates > li')
    expect(await candidates.count()).toBe(4)
    expect(done.candidates).toHaveLength(4)
    expect(await page.locator('li[data-selected=true]').count()).toBe(1)
    const selected = candidates.nth(done.selected_index ?? -1)
    expect(await selected.getAttribute('data-selected')).toBe('true')
    expect(await selected.locator('pre.wrap').textContent()).toBe(done.result)
    const evidence = (await selected.locator('p').first().textContent()) ?? ''
    expect(evidence).toMatch(/^ ?selected score [\d.e-]+ · /)
    expect(evidence).toContain('quantum frequency')
    const signed = (await page.getByRole('region', { name: 'Inference receipt' }).textContent()) ?? ''
    expect(signed).toContain(receipt.receipt_id)
    expect(signed).toContain(receipt.envelope.signatures[0]?.keyid)
    expect(signed).toContain(`entry ${receipt.audit_log.index}`)
    await shots('reasoning-job')

    // The page offers what DELETE does to a finished job: erase its content, keep the record.
    page.once('dialog', (dialog) => dialog.accept())
    await page.getByRole('button', { name: 'Delete job content' }).click()
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('content is erased')
    expect(await page.getByRole('button', { name: 'Delete job content' }).count()).toBe(0)
    const erased = await apiJob()
    expect(erased).toMatchObject({ status: 'completed', inference_receipt_id: receipt.receipt_id })
    expect(erased.result).toBeUndefined()
    expect(erased.prompt).toBeUndefined()
    expect(await page.getByRole('region', { name: 'Prompt' }).count()).toBe(0)
    await page.goto(url('/console/reasoning'))
    await expect.poll(() => page.locator('table').first().textContent()).toContain(job.id)
  })

  it('connects a QPU provider account, tests it, and deletes it; the API agrees and never shows the key', async () => {
    const ionq = stack.fakes.ionq as { controlUrl: string }
    // Keys of this test's own at the fake provider: one it accepts, and one it has never heard of.
    const accepted = `ionq-console-${crypto.randomUUID()}`
    const refused = `ionq-console-unknown-${crypto.randomUUID()}`
    await ionqControl(ionq.controlUrl).addKey(accepted, { qpu: true })
    const suffix = crypto.randomUUID().slice(0, 8)
    const good = `console lab ${suffix}`
    const bad = `console typo ${suffix}`
    const listed = async () => {
      // The console's switch is on Test: its connections are the test key's.
      const res = await fetch(url('/svc/quantum-reasoning/provider-connections'), {
        headers: { authorization: `Bearer ${ws.testKey}` },
      })
      expect(res.status).toBe(200)
      const text = await res.text()
      expect(text).not.toContain(accepted)
      expect(text).not.toContain(refused)
      return (JSON.parse(text) as { data: ApiConnection[] }).data
    }
    const connect = async (name: string, key: string) => {
      await page.goto(url('/console/reasoning'))
      const form = page.locator('form[action="/console/reasoning/connections"]')
      await form.getByLabel('Name').fill(name)
      await form.getByLabel('API key').fill(key)
      await form.getByRole('button', { name: 'Connect IonQ' }).click()
      await expect
        .poll(() => page.getByRole('status').first().textContent())
        .toContain(`Connected “${name}”.`)
      expect(await page.content()).not.toContain(key)
    }

    await connect(good, accepted)
    await connect(bad, refused)
    const made = await listed()
    const goodId = made.find((c) => c.name === good)?.id ?? ''
    const badId = made.find((c) => c.name === bad)?.id ?? ''
    expect(made.find((c) => c.id === goodId)).toMatchObject({
      kind: 'ionq',
      target: 'qpu.aria-1',
      last_test: null,
    })
    const rows = page.getByRole('region', { name: 'QPU provider connections' })
    expect(await rows.locator('tr', { hasText: good }).textContent()).toContain('never')

    await rows.getByRole('button', { name: `Test ${good}` }).click()
    await expect
      .poll(() => page.getByRole('status').first().textContent())
      .toContain(`The provider accepted the credential of “${good}”.`)
    expect(await rows.locator('tr', { hasText: good }).locator('.badge').textContent()).toBe('accepted')
    await rows.getByRole('button', { name: `Test ${bad}` }).click()
    await expect
      .poll(() => page.getByRole('alert').first().textContent())
      .toContain(`The provider refused the credential of “${bad}”`)
    expect(await rows.locator('tr', { hasText: bad }).locator('.badge').textContent()).toBe('refused')
    const tested = await listed()
    expect(tested.find((c) => c.id === goodId)?.last_test).toMatchObject({ ok: true, error: null })
    expect(tested.find((c) => c.id === badId)?.last_test).toMatchObject({
      ok: false,
      error: { code: 'provider_rejected_credentials' },
    })
    expect(await page.content()).not.toContain(accepted)
    await shots('reasoning')

    for (const name of [good, bad]) {
      page.once('dialog', (dialog) => dialog.accept())
      await rows.getByRole('button', { name: `Delete ${name}` }).click()
      await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Connection deleted.')
      expect(await rows.textContent()).not.toContain(name)
    }
    const ids = (await listed()).map((c) => c.id)
    expect(ids).not.toContain(goodId)
    expect(ids).not.toContain(badId)
  })

  it('makes an observability token the OpenTelemetry exporter sends with, lists the export, and revokes it', async () => {
    await page.goto(url('/console/telemetry'))
    await expect.poll(() => page.locator('main').textContent()).toContain('Collector')
    await page.getByLabel(/^Token name/).fill('console collector')
    await page.getByRole('button', { name: 'Create token' }).click()
    const token = (await page.locator('#new-secret').textContent())?.trim() ?? ''
    expect(token).toMatch(/^svc_ot_/)

    const requestId = `console-otlp-${crypto.randomUUID().slice(0, 8)}`
    const sent = await exportSpan(token, requestId)
    expect(sent.code, String(sent.error)).toBe(ExportResultCode.SUCCESS)
    await page.goto(url('/console/telemetry'))
    await expect.poll(() => page.locator('main').textContent()).toContain(requestId)
    // The export is listed as sent with this token.
    expect(await page.locator('tr', { hasText: requestId }).textContent()).toContain(
      'token “console collector”',
    )
    const row = page.locator('tr[data-token-id]', { hasText: 'console collector' })
    expect(await row.textContent()).toContain(`…${token.slice(-4)}`)
    // Its last use is recorded (after the answer, so it may take a moment).
    await expect
      .poll(async () => {
        await page.goto(url('/console/telemetry'))
        return row.locator('td').nth(4).textContent()
      })
      .toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/)
    await shots('telemetry')

    page.once('dialog', (dialog) => dialog.accept())
    await row.getByRole('button', { name: 'Revoke console collector' }).click()
    await page.waitForURL(/revoked=/)
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('revoked')
    const refused = await exportSpan(token, `${requestId}-after`)
    expect(refused.code).toBe(ExportResultCode.FAILED)
    expect(String(refused.error)).toMatch(/401|Unauthorized/)
  })
})

describe('console: accessibility', () => {
  it('every control has a label, the skip link leads to the content, and the keyboard reaches the forms', async () => {
    for (const { href: path } of NAV) {
      await page.goto(url(path))
      const unlabelled = await page.evaluate(() =>
        Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea, button'))
          .filter((el) => {
            const control = el as HTMLInputElement
            const named =
              (control.labels?.length ?? 0) > 0 ||
              el.getAttribute('aria-label') ||
              el.getAttribute('aria-labelledby') ||
              (el.tagName === 'BUTTON' && el.textContent?.trim())
            return !named
          })
          .map((el) => el.outerHTML.slice(0, 80)),
      )
      expect(unlabelled, path).toEqual([])
      // Every id a label or description points at exists, and no id is used twice.
      const broken = await page.evaluate(() => {
        const ids = Array.from(document.querySelectorAll('[id]')).map((e) => e.id)
        const twice = ids.filter((id, i) => ids.indexOf(id) !== i).map((id) => `duplicate #${id}`)
        const refs = Array.from(
          document.querySelectorAll('label[for], [aria-describedby], [aria-labelledby]'),
        )
          .flatMap((e) =>
            (
              e.getAttribute('for') ??
              `${e.getAttribute('aria-describedby') ?? ''} ${e.getAttribute('aria-labelledby') ?? ''}`
            ).split(/\s+/),
          )
          .filter((id) => id && !document.getElementById(id))
          .map((id) => `missing #${id}`)
        return [...twice, ...refs]
      })
      expect(broken, path).toEqual([])
    }
    // Text contrast (WCAG 2.2 AA): 4.5:1, or 3:1 for large text, against the nearest opaque background.
    for (const { href: path } of NAV) {
      await page.goto(url(path))
      const low = await page.evaluate(() => {
        const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number)
        const lum = ([r, g, b]: number[]) => {
          const f = (v: number) => {
            const x = v / 255
            return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4
          }
          return 0.2126 * f(r ?? 0) + 0.7152 * f(g ?? 0) + 0.0722 * f(b ?? 0)
        }
        const background = (el: Element | null): number[] => {
          for (let e = el; e; e = e.parentElement) {
            const c = rgb(getComputedStyle(e).backgroundColor)
            if (c.length === 3 || (c[3] ?? 0) > 0.99) return c.slice(0, 3)
          }
          return [255, 255, 255]
        }
        const out: string[] = []
        for (const el of Array.from(document.querySelectorAll('body *'))) {
          const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent?.trim())
          if (!own || el.closest('svg') || (el as HTMLElement).offsetParent === null) continue
          const style = getComputedStyle(el)
          const l1 = lum(rgb(style.color))
          const l2 = lum(background(el))
          const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05)
          const size = Number.parseFloat(style.fontSize)
          const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700)
          if (ratio < (large ? 3 : 4.5))
            out.push(`${el.tagName} "${el.textContent?.trim().slice(0, 30)}" ${ratio.toFixed(2)}`)
        }
        return out
      })
      expect(low, path).toEqual([])
    }

    await page.goto(url('/console/api-keys'))
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content')
    await page.keyboard.press('Enter')
    expect(await page.evaluate(() => location.hash)).toBe('#main')
    // Keyboard only: type a name and create a key.
    await page.getByLabel('Name').focus()
    await page.keyboard.type('keyboard key')
    await page.keyboard.press('Enter')
    await expect.poll(() => page.locator('#new-secret').textContent()).toMatch(/^svc_sk_test_/)
  })
})

describe('console: every page at 1280 and 390 px', () => {
  /** What the layout test measures on one page at one width. */
  interface Layout {
    /** How much wider the document is than the window (0: no sideways scrolling). */
    overflow: number
    height: number
    tables: { label: string; width: number; container: number; rows: number; median: number }[]
    /** Operator configuration named in the visible text (environment variable names, npm commands). */
    operatorNames: string[]
  }

  const measure = () =>
    page.evaluate((): Layout => {
      const tables = Array.from(document.querySelectorAll('main table')).map((table) => {
        const heights = Array.from(table.querySelectorAll('tbody tr'))
          .map((row) => row.getBoundingClientRect().height)
          .sort((a, b) => a - b)
        return {
          label: table.closest('[aria-label]')?.getAttribute('aria-label') ?? '',
          width: table.getBoundingClientRect().width,
          container: (table.parentElement as HTMLElement).clientWidth,
          rows: heights.length,
          median: heights.length ? (heights[Math.floor((heights.length - 1) / 2)] ?? 0) : 0,
        }
      })
      // biome-ignore lint/performance/useDomNodeTextContent: what a person sees, not hidden text
      const text = document.body.innerText
      const operatorNames = [
        ...(text.match(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g) ?? []),
        ...(text.match(/npm run[^\n]*/g) ?? []),
      ]
      return {
        overflow: document.documentElement.scrollWidth - window.innerWidth,
        height: document.documentElement.scrollHeight,
        tables,
        operatorNames,
      }
    })

  it('no table is wider than its place, rows are compact, and no page names operator configuration', async () => {
    // Enough rows to page through: 30 chat calls, and audit entries of several kinds (an attestation).
    const ids: string[] = []
    for (let i = 0; i < 30; i++) {
      const res = await fetch(url('/svc/chat/completions'), {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.testKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'svc-cell', messages: [{ role: 'user', content: `layout ${i}` }] }),
      })
      expect(res.status).toBe(200)
      ids.push(res.headers.get('x-request-id') ?? '')
    }
    const attestation = await fetch(url('/platform/v1/crypto/attestation'), {
      headers: { authorization: `Bearer ${ws.liveKey}` },
    })
    expect(attestation.status).toBe(200)
    await page.goto(url('/console/overview'))
    if (new URL(page.url()).pathname === '/console/sign-in') {
      await signIn(page)
      await page.waitForURL(/\/console\/overview$/)
    }
    await expect
      .poll(
        async () => {
          await page.goto(url('/console/usage?days=7'))
          return page.locator('main').textContent()
        },
        { timeout: 15_000 },
      )
      .toContain(ids.at(-1))

    const found: string[] = []
    const report: string[] = []
    const pages = ['/console/sign-in?next=%2Fconsole%2Foverview', ...NAV.map((n) => n.href)]
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 1280 ? 900 : 844 })
      for (const path of pages) {
        await page.goto(url(path))
        const name = new URL(url(path)).pathname.split('/').filter(Boolean).slice(1).join('-')
        await browser.shot(page, `layout-${name}-${width}`)
        const layout = await measure()
        report.push(
          `${width} ${path}: height ${layout.height}, ${layout.tables
            .map(
              (t) =>
                `[${t.label}: ${Math.round(t.width)}/${t.container} px, ${t.rows} rows, median ${t.median} px]`,
            )
            .join(' ')}`,
        )
        if (layout.overflow > 0)
          found.push(`${width} ${path}: the page scrolls sideways by ${layout.overflow} px`)
        for (const t of layout.tables) {
          if (t.width > t.container + 0.5)
            found.push(
              `${width} ${path}: table "${t.label}" is ${Math.round(t.width)} px in ${t.container} px`,
            )
          if (width === 1280 && t.rows > 0 && t.median > 48)
            found.push(`${width} ${path}: table "${t.label}" rows are ${t.median} px tall (median)`)
        }
        for (const n of new Set(layout.operatorNames)) found.push(`${width} ${path}: names "${n}"`)
      }
    }
    await page.setViewportSize({ width: 1280, height: 900 })
    console.log(report.join('\n'))
    expect(found).toEqual([])
  }, 240_000)
})

describe('console: session expiry', () => {
  const age = (column: 'last_seen_at' | 'expires_at', interval: string) =>
    withDatabase((db) =>
      db.execute(sql`
        update console_sessions set ${sql.raw(column)} = now() - ${interval}::interval
        where user_id = ${ws.ownerUserId}::uuid and ended_at is null`),
    )

  it('ends a session left idle, and one past its lifetime, with a sign-in that says so', async () => {
    await page.goto(url('/console/api-keys'))
    expect(new URL(page.url()).pathname).toBe('/console/api-keys')

    // Idle longer than CONSOLE_SESSION_IDLE_SECONDS (30 min by default).
    await age('last_seen_at', '31 minutes')
    await page.goto(url('/console/api-keys'))
    expect(new URL(page.url()).pathname).toBe('/console/sign-in')
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Your session ended')
    expect(await sessionCookie()).toBeUndefined()
    await shots('session-ended')
    await page.getByLabel('Email').fill(ws.email)
    await page.getByLabel('Password').fill(ws.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(/\/console\/api-keys$/)

    // Past its absolute lifetime (CONSOLE_SESSION_TTL_SECONDS), however recently used.
    await age('expires_at', '1 second')
    const res = await page.goto(url('/console/overview'))
    expect(new URL(page.url()).pathname).toBe('/console/sign-in')
    expect(res?.status()).toBe(200)
    await signIn(page)
    await page.waitForURL(/\/console\/overview$/)
  })
})

describe('console: signing out', () => {
  it('ends the session: the old cookie opens nothing', async () => {
    const before = await sessionCookie()
    await page.goto(url('/console/overview'))
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(/\/console\/sign-in/)
    expect(await sessionCookie()).toBeUndefined()
    const replay = await fetch(url('/console/overview'), {
      redirect: 'manual',
      headers: { cookie: `${before?.name}=${before?.value}` },
    })
    expect(replay.status).toBe(303)
    expect(replay.headers.get('location')).toContain('/console/sign-in')
  })
})

describe('console: a member', () => {
  it('sees only their own keys, no administration, and is refused an admin change', async () => {
    const member = await addMember(ws.tenantId)
    await signIn(page, member.password, member.email)
    await page.waitForURL(/\/console\/overview$/)
    expect(await page.locator('header .workspace').textContent()).toContain('(member)')

    await page.goto(url('/console/api-keys'))
    const content = (await page.locator('main').textContent()) ?? ''
    expect(content).toContain('Only workspace owners and admins create, rotate and revoke keys.')
    expect(content).not.toContain('console test key')
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0)
    await shots('member-api-keys')

    await page.goto(url('/console/telemetry'))
    expect(await page.locator('main').textContent()).toContain('Only workspace owners and admins see')
    // The form is not offered; a member posting it anyway is refused by the API, nothing made.
    const csrf = await page.locator('input[name=_csrf]').first().inputValue()
    const res = await forgedPost(
      '/console/telemetry/tokens',
      { _csrf: csrf, name: 'member token' },
      {
        origin: stack.baseUrl,
      },
    )
    expect(res.status).toBe(403)
    expect(await res.text()).toContain('Only workspace owners and admins may create observability tokens')
  })
})
