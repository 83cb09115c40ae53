/**
 * The run queue of a workspace's reasoning jobs through the gateway of the running stack and in
 * the console (a real browser: Debian's Chromium, test/support/browser.ts): at most the plan's
 * `reasoningConcurrency` jobs execute at once; the others wait `queued` with their
 * `queue_position`; a DELETE, or the console's Cancel button, cancels a waiting one and the jobs
 * behind it move up; when running jobs end, the waiting ones start, and all end.
 *
 * The running jobs are held without timers: they are `byopa_managed` jobs on the workspace's own
 * IonQ key, whose provider jobs wait in the fake provider's queue (`queueMs`) until the test lets
 * them run. Every API response is held to the spec's closed shapes (reasoning-schemas.ts;
 * `queue_position` is the product's one addition). Screenshots land in
 * test-artifacts/reasoning-run-queue/<pglite|postgres>/.
 */
import path from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, describe, expect, it } from 'vitest'
import { PLAN_CATALOG } from '../../shared/plans/plan-catalog.ts'
import { type Browser, launchBrowser } from '../support/browser.ts'
import { ionqControl } from './fakes/ionq.fake.ts'
import { fileStack } from './file-stack.ts'
import { shapeErrors } from './reasoning-schemas.ts'

const stack = await fileStack({ plan: 'enterprise', login: true })
const ionqFixture = stack.fakes.ionq as { controlUrl: string; baseUrl: string }
const ionq = ionqControl(ionqFixture.controlUrl)
const key = stack.tenantA.liveKey
/** The workspace's run slots: Enterprise's, from the catalog the stack runs with. */
const SLOTS = PLAN_CATALOG.plans.find((p) => p.id === 'enterprise')!.reasoningConcurrency
const TERMINAL = ['completed', 'classical_fallback', 'failed', 'cancelled']

interface Job {
  id: string
  status: string
  queue_position?: number
  real_request_status: string
  [key: string]: unknown
}

const call = (method: string, route: string, body?: unknown, headers: Record<string, string> = {}) =>
  fetch(`${stack.baseUrl}${route}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })

async function envelope(res: Response, status = 200): Promise<Job> {
  const text = await res.text()
  expect(res.status, text).toBe(status)
  const body = JSON.parse(text) as { job: Job }
  expect(shapeErrors('envelope', body)).toEqual([])
  return body.job
}

const read = async (id: string) => envelope(await call('GET', `/svc/quantum-reasoning/jobs/${id}`))

/** The waiting jobs of a list page, by id: their place in line. */
async function listedPositions(): Promise<Record<string, number | undefined>> {
  const res = await call('GET', '/svc/quantum-reasoning/jobs?status=queued')
  expect(res.status).toBe(200)
  const page = (await res.json()) as { jobs: Job[] }
  expect(shapeErrors('page', page)).toEqual([])
  return Object.fromEntries(page.jobs.map((j) => [j.id, j.queue_position]))
}

/** Polls a job until `done` holds (bounded; the stack's alarms and the QPU queue drive it). */
async function until(id: string, done: (job: Job) => boolean, what: string, limitMs = 90_000): Promise<Job> {
  const deadline = Date.now() + limitMs
  for (;;) {
    const job = await read(id)
    if (done(job)) return job
    if (Date.now() > deadline) throw new Error(`job ${id} never ${what}: ${JSON.stringify(job)}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

let browser: Browser | null = null
afterAll(async () => {
  await browser?.close()
})

describe(`the run queue through the gateway and the console (${stack.kind})`, () => {
  it(`${SLOTS} jobs run, the rest wait with their place; a DELETE and the console's Cancel cancel waiting jobs, the next moves up; all end`, async () => {
    // The workspace's own IonQ key, whose provider jobs wait until the test lets them run.
    const apiKey = `ionq-e2e-run-queue-${crypto.randomUUID()}`
    await ionq.addKey(apiKey, { qpu: true, queueMs: 3_600_000 })
    const made = await call('POST', '/svc/quantum-reasoning/provider-connections', {
      name: `run queue ${crypto.randomUUID()}`,
      kind: 'ionq',
      api_key: apiKey,
      base_url: ionqFixture.baseUrl,
    })
    expect(made.status, await made.clone().text()).toBe(201)
    const connection = ((await made.json()) as { id: string }).id

    // SLOTS + 3 jobs, one after another (the order they arrive in is the order they wait in).
    const created: Job[] = []
    for (let i = 0; i < SLOTS + 3; i++) {
      const res = await call(
        'POST',
        '/svc/quantum-reasoning/jobs',
        {
          prompt: `Which is larger, 2^10 or 10^3? (run queue ${i})`,
          model: 'svc-hive',
          product: 'byopa_managed',
          provider_connection_id: connection,
        },
        { 'idempotency-key': `e2e-run-queue-${crypto.randomUUID()}` },
      )
      created.push(await envelope(res, 202))
    }
    expect(created.map((j) => j.status)).toEqual(created.map(() => 'queued'))
    expect(created.map((j) => j.queue_position ?? null)).toEqual([
      ...Array.from({ length: SLOTS }, () => null),
      1,
      2,
      3,
    ])
    const running = created.slice(0, SLOTS)
    const [deleted, clicked, last] = created.slice(SLOTS) as [Job, Job, Job]

    // The running ones reach the provider and wait there; the others stay queued with their place,
    // in GET and in the list.
    for (const job of running) await until(job.id, (j) => j.status === 'awaiting_qpu', 'waited on the QPU')
    expect(await read(deleted.id)).toMatchObject({ status: 'queued', queue_position: 1 })
    expect(await read(last.id)).toMatchObject({ status: 'queued', queue_position: 3 })
    expect(await listedPositions()).toEqual({ [deleted.id]: 1, [clicked.id]: 2, [last.id]: 3 })

    // DELETE of a waiting job: 200 cancelled, and the jobs behind it have moved up by the answer.
    const cancelled = await envelope(await call('DELETE', `/svc/quantum-reasoning/jobs/${deleted.id}`))
    expect(cancelled).toMatchObject({ status: 'cancelled', outcome_state: 'not_started' })
    expect(cancelled).not.toHaveProperty('queue_position')
    expect(await listedPositions()).toEqual({ [clicked.id]: 1, [last.id]: 2 })

    // The console, in live mode (the jobs were made with the live key): the list and the job show
    // the place in line, and the job's Cancel button cancels it.
    browser = await launchBrowser(path.join('reasoning-run-queue', stack.kind))
    const page: Page = await browser.context.newPage()
    await page.goto(`${stack.baseUrl}/console/sign-in`)
    await page.getByLabel('Email').fill(stack.tenantA.ownerEmail)
    await page.getByLabel('Password').fill(stack.tenantA.ownerPassword)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(/\/console\/overview$/)
    await page.getByRole('button', { name: 'Live', exact: true }).click()
    await page.waitForURL(/\/console\/overview$/)
    await page.goto(`${stack.baseUrl}/console/reasoning`)
    const rows = page.getByRole('region', { name: 'Reasoning jobs' })
    expect(await rows.locator('tr', { hasText: clicked.id }).textContent()).toContain(
      'queued · waiting for a run slot, next in line',
    )
    expect(await rows.locator('tr', { hasText: last.id }).textContent()).toContain('number 2 in line')
    await browser.shot(page, 'reasoning-waiting')
    await rows.getByRole('link', { name: clicked.id }).click()
    await page.waitForURL(new RegExp(`/console/reasoning/jobs/${clicked.id}$`))
    expect(await page.locator('dd[data-status]').textContent()).toBe(
      'queued · waiting for a run slot, next in line',
    )
    page.once('dialog', (dialog) => dialog.accept())
    await page.getByRole('button', { name: 'Cancel job' }).click()
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Job cancelled')
    expect(await page.locator('dd[data-status]').textContent()).toBe('cancelled')
    expect(await page.getByRole('button', { name: 'Cancel job' }).count()).toBe(0)
    await browser.shot(page, 'reasoning-job-cancelled')
    expect(await read(clicked.id)).toMatchObject({ status: 'cancelled', outcome_state: 'not_started' })
    expect(await listedPositions()).toEqual({ [last.id]: 1 })

    // The provider runs the held jobs: they end, their slots free, the last job starts and ends.
    await ionq.addKey(apiKey, { qpu: true, queueMs: 0 })
    const ended = await Promise.all(
      created.map((job) => until(job.id, (j) => TERMINAL.includes(j.status), 'ended', 120_000)),
    )
    // A QPU's sampled shots may read as no valid selection (classical_fallback, invalid_selection):
    // either way the provider ran the job.
    const ran = (j: Job) =>
      ['completed', 'classical_fallback'].includes(j.status) && j.real_request_status === 'executed'
    expect(ended.map((j) => (j.status === 'cancelled' ? 'cancelled' : ran(j) ? 'ran' : j.status))).toEqual([
      ...Array.from({ length: SLOTS }, () => 'ran'),
      'cancelled',
      'cancelled',
      'ran',
    ])
    expect(ended.at(-1)).not.toHaveProperty('queue_position')
    // The cancelled jobs never reached the provider; every other job did, once.
    for (const job of [deleted, clicked]) expect(await ionq.jobsFor(job.id)).toEqual([])
    for (const job of [...running, last]) expect(await ionq.jobsFor(job.id)).toHaveLength(1)
  }, 300_000)
})
