/**
 * The workspace console in a real browser (Debian's Chromium, headless) against the stack started
 * with `npm start`: sign-in and the session cookie's flags, no token in script-readable storage,
 * the Content-Security-Policy, CSRF on every change, API keys made and revoked in the console and
 * used with plain fetches, usage charts after chat calls, another tenant's data never shown,
 * sign-out. Screenshots of every page (wide and narrow) land in test-artifacts/console/<kind>/.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { type Browser, launchBrowser } from '../support/browser.ts'

const stack = inject('stack')
const url = (p: string) => `${stack.baseUrl}${p}`
const owner = JSON.parse(readFileSync(path.join(stack.dataDir, 'dev-credentials.json'), 'utf8')) as {
  ownerEmail: string
  ownerPassword: string
}

let browser: Browser
let page: Page

async function signIn(p: Page, password = owner.ownerPassword) {
  await p.goto(url('/console/sign-in'))
  await p.getByLabel('Email').fill(owner.ownerEmail)
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

const memories = (key: string) => fetch(url('/svc/memories'), { headers: { authorization: `Bearer ${key}` } })

async function shots(name: string) {
  await browser.shot(page, `${name}-wide`)
  await page.setViewportSize({ width: 390, height: 844 })
  await browser.shot(page, `${name}-narrow`)
  await page.setViewportSize({ width: 1280, height: 900 })
}

beforeAll(async () => {
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
      headers: { authorization: `Bearer ${stack.tenantB.liveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'tenant B secret project', mode: 'test' }),
    })
    expect(made.status).toBe(201)
    const other = (await made.json()) as { id: string; key: string }
    await page.goto(url('/console/api-keys'))
    expect(await page.content()).not.toContain('tenant B secret project')

    const csrf = await page.locator('input[name=_csrf]').first().inputValue()
    const res = await forgedPost(
      `/console/api-keys/${other.id}/revoke`,
      { _csrf: csrf },
      { origin: stack.baseUrl },
    )
    expect(res.status).toBe(404)
    expect((await memories(other.key)).status).toBe(200)
  })
})

describe('console: usage', () => {
  it('charts test-mode chat calls and lists them in the request log', async () => {
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const res = await fetch(url('/svc/chat/completions'), {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.tenantA.testKey}`, 'content-type': 'application/json' },
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
    expect(
      await page.locator('svg[data-chart=usage-tokens] rect[data-series=svc-cell]').count(),
    ).toBeGreaterThan(0)
    await shots('usage')
  })
})

describe('console: crypto policy and the audit log', () => {
  const setPolicy = (body: unknown) =>
    fetch(url('/platform/v1/crypto/policy'), {
      method: 'PUT',
      headers: { authorization: `Bearer ${stack.tenantA.liveKey}`, 'content-type': 'application/json' },
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

      // A client declaring a classical algorithm is now refused, and the refusal is logged first.
      const refused = await fetch(url('/svc/memories'), {
        headers: { authorization: `Bearer ${stack.tenantA.testKey}`, 'x-svc-crypto-algorithms': 'rsa-2048' },
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
      await shots('crypto-policy')

      // The server's validation problems come back at the field they name.
      const fields = page.locator('form[action="/console/crypto-policy/fields"]')
      await fields.getByLabel(/^Allowed signature algorithms/).fill('dilithium-3, rsa-2048')
      await fields.getByRole('radio', { name: 'audit', exact: true }).check()
      await fields.getByRole('button', { name: 'Save fields' }).click()
      await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('rsa-2048')
      await expect
        .poll(() => page.locator('#e-allowedSignatureAlgorithms').textContent())
        .toContain('allowedSignatureAlgorithms')

      // The check tool.
      await page.goto(url('/console/crypto-policy?algorithm=ed25519&context=token_signature'))
      await expect
        .poll(() => page.locator('[data-check-result]').getAttribute('data-check-result'))
        .toBe('blocked')
    } finally {
      // Other test files share this stack: leave tenant A as it was (the Default preset, audit).
      expect((await setPolicy({ preset: 'default', mode: 'audit' })).status).toBe(200)
    }
  })

  it('lists policy changes in the audit log and verifies any entry in the browser', async () => {
    await page.goto(url('/console/audit-log'))
    // The test before set the policy from Strict back to Default: the newest entries say so.
    await expect
      .poll(() => page.locator('table').textContent())
      .toContain('Policy set to default (audit) by key:')
    const newest = page.locator('tbody tr').first()
    await newest.getByRole('button', { name: /Verify the inclusion proof/ }).click()
    await expect
      .poll(() => newest.locator('output').textContent(), { timeout: 10_000 })
      .toContain('Verified in this browser')
    await shots('audit-log')
  })
})

describe('console: plans, service accounts, agent runs', () => {
  it("the upgrade actions of a 403 action-required body open this console's pages", async () => {
    // Tenant B is on Pro; svc-hive needs Team.
    const refused = await fetch(url('/svc/chat/completions'), {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tenantB.testKey}`, 'content-type': 'application/json' },
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
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('No such run for this account')
    await shots('agent-runs')
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

  it("shows a reasoning job's candidates and the selected one", async () => {
    const created = await fetch(url('/svc/quantum-reasoning/jobs'), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.tenantA.testKey}`,
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
    await expect
      .poll(
        async () => {
          await page.goto(url(`/console/reasoning/jobs/${job.id}`))
          return page.locator('dl.facts').textContent()
        },
        { timeout: 20_000 },
      )
      .toContain('completed')
    expect(await page.locator('li[data-selected=true]').count()).toBe(1)
    await shots('reasoning-job')
    await page.goto(url('/console/reasoning'))
    await expect.poll(() => page.locator('table').first().textContent()).toContain(job.id)
  })

  it('shows reasoning jobs and QPU connections, and telemetry, each from its API', async () => {
    const reasoning = await page.goto(url('/console/reasoning'))
    expect(reasoning?.status()).toBe(200)
    await expect.poll(() => page.getByRole('heading', { name: 'QPU provider connections' }).count()).toBe(1)
    await shots('reasoning')
    const telemetry = await page.goto(url('/console/telemetry'))
    expect(telemetry?.status()).toBe(200)
    await expect.poll(() => page.locator('main').textContent()).toContain('Collector')
    await shots('telemetry')
  })
})

describe('console: accessibility', () => {
  it('every control has a label, the skip link leads to the content, and the keyboard reaches the forms', async () => {
    for (const path of [
      '/console/overview',
      '/console/api-keys',
      '/console/usage',
      '/console/crypto-policy',
    ]) {
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
    }
    // Text contrast (WCAG 2.2 AA): 4.5:1, or 3:1 for large text, against the nearest opaque background.
    for (const path of [
      '/console/overview',
      '/console/api-keys',
      '/console/crypto-policy',
      '/console/usage',
    ]) {
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
