/**
 * The reasoning worker's routes inside workerd with its real bindings (ReasoningJob objects, the
 * RateLimiter of the metering worker, the unit Postgres), called the way the gateway calls them.
 * Covers the request checks, idempotency (same, different, concurrent), the queue limit, pages and
 * tenancy of every route.
 */
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test'
import { sql } from 'drizzle-orm'
import { afterEach, describe, expect, it } from 'vitest'
import {
  JobEnvelopeSchema,
  JobPageSchema,
  type ReasoningJob,
} from '../../../durable-objects/reasoning-job/job.schemas'
import {
  driveToEnd,
  identityFor,
  jobStub,
  mutableEnv,
  reasoningEnv,
  withDb,
} from '../../../durable-objects/reasoning-job/reasoning-job.do-fixtures'
import { PLAN_CATALOG_CONFIG } from '../../../shared/plans/plan-catalog'
import { bindRequestContext, type Identity } from '../../../shared/worker/request-context'
import { reasoningApp } from './reasoning.app'

afterEach(() => {
  delete mutableEnv.PLAN_CATALOG
})

const JOBS = '/svc/quantum-reasoning/jobs'

async function call(
  method: string,
  path: string,
  identity: Identity,
  options: { body?: unknown; key?: string | null; env?: Record<string, unknown> } = {},
): Promise<Response> {
  const headers: Record<string, string> = {}
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  if (options.key) headers['idempotency-key'] = options.key
  const request = new Request(`https://svc.test${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  })
  bindRequestContext(request, {
    requestId: 'req_test',
    identity,
    maxBodyBytes: 512 * 1024,
    baseUrl: 'https://svc.test',
  })
  const ctx = createExecutionContext()
  const response = await reasoningApp.fetch(
    request,
    options.env ? { ...reasoningEnv, ...options.env } : reasoningEnv,
    ctx,
  )
  await waitOnExecutionContext(ctx)
  return response
}

const key = () => `key-${crypto.randomUUID()}`
const body = (overrides: Record<string, unknown> = {}) => ({
  prompt: 'Is 91 a prime number?',
  model: 'svc-hive',
  product: 'simulation_cloud',
  ...overrides,
})

async function created(res: Response): Promise<ReasoningJob> {
  const parsed = JobEnvelopeSchema.parse(await res.json())
  return parsed.job
}

function catalogWith(planId: string, change: Record<string, unknown>): string {
  return JSON.stringify({
    ...PLAN_CATALOG_CONFIG,
    plans: PLAN_CATALOG_CONFIG.plans.map((p) => (p.id === planId ? { ...p, ...change } : p)),
  })
}

describe('POST /svc/quantum-reasoning/jobs: the request', () => {
  it('needs an Idempotency-Key of 16 to 160 characters (400 naming the header)', async () => {
    const identity = await identityFor('test')
    for (const value of [null, 'short', 'x'.repeat(161), 'has spaces in it ok']) {
      const res = await call('POST', JOBS, identity, { body: body(), key: value })
      expect(res.status).toBe(400)
      const { error } = (await res.json()) as { error: { param: string; message: string } }
      expect(error.param).toBe('Idempotency-Key')
      expect(error.message).toContain('Idempotency-Key')
    }
  })

  it('takes a closed body: an unknown property, a bad model, product or prompt length is a 400 naming it', async () => {
    const identity = await identityFor('test')
    const cases: [Record<string, unknown>, string][] = [
      [body({ temperature: 1 }), 'temperature'],
      [body({ model: 'svc-cell' }), 'model'],
      [body({ product: 'quantum' }), 'product'],
      [body({ prompt: '' }), 'prompt'],
      [body({ prompt: 'x'.repeat(64_001) }), 'prompt'],
      [body({ workspace_id: 'nope' }), 'workspace_id'],
    ]
    for (const [input, param] of cases) {
      const res = await call('POST', JOBS, identity, { body: input, key: key() })
      expect(res.status, param).toBe(400)
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param)
    }
  })

  it('is 503 reasoning_lab_disabled when the lab is switched off', async () => {
    // The settings are read once per env object: a deployment with the switch off is another env.
    const env = { REASONING_LAB_ENABLED: 'false' }
    const res = await call('POST', JOBS, await identityFor('test'), { body: body(), key: key(), env })
    expect(res.status).toBe(503)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('reasoning_lab_disabled')
  })

  it('is 403 with the action-required body when the plan lacks the model or real hardware', async () => {
    const pro = await identityFor('test', 'pro')
    const noModel = await call('POST', JOBS, pro, { body: body(), key: key() })
    expect(noModel.status).toBe(403)
    const refused = (await noModel.json()) as {
      error: { code: string }
      svc_upgrade: { reason: string; required_plan: string }
    }
    expect(refused.error.code).toBe('model_access_required')
    expect(refused.svc_upgrade).toMatchObject({ reason: 'model_access_required', required_plan: 'team' })

    const team = await identityFor('test', 'team')
    const noReal = await call('POST', JOBS, team, { body: body({ product: 'managed_qpu' }), key: key() })
    expect(noReal.status).toBe(403)
    expect(
      ((await noReal.json()) as { svc_upgrade: { requested_feature: string } }).svc_upgrade.requested_feature,
    ).toBe('real_qpu')

    const member = await identityFor('test', 'enterprise', { role: 'member' })
    const memberReal = await call('POST', JOBS, member, {
      body: body({ product: 'byopa_managed' }),
      key: key(),
    })
    expect(memberReal.status).toBe(403)
  })

  it('is 503 provider_not_configured for a live key when no provider serves the model', async () => {
    const res = await call('POST', JOBS, await identityFor('live'), { body: body(), key: key() })
    expect(res.status).toBe(503)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('provider_not_configured')
  })
})

describe('POST: idempotency', () => {
  it('same key and request → 200 with the same job; different request → 409 idempotency_key_reused', async () => {
    const identity = await identityFor('test')
    const k = key()
    const first = await call('POST', JOBS, identity, { body: body(), key: k })
    expect(first.status).toBe(202)
    const job = await created(first)
    const again = await call('POST', JOBS, identity, { body: body(), key: k })
    expect(again.status).toBe(200)
    expect((await created(again)).id).toBe(job.id)
    const different = await call('POST', JOBS, identity, { body: body({ prompt: 'Is 97 prime?' }), key: k })
    expect(different.status).toBe(409)
    expect(((await different.json()) as { error: { code: string } }).error.code).toBe(
      'idempotency_key_reused',
    )
    // Keys are per tenant: another tenant may use the same one.
    const other = await call('POST', JOBS, await identityFor('test'), { body: body(), key: k })
    expect(other.status).toBe(202)
    expect((await created(other)).id).not.toBe(job.id)
  })

  it('32 identical requests at once: exactly one 202, the rest 200 with the same job', async () => {
    const identity = await identityFor('test')
    const k = key()
    const responses = await Promise.all(
      Array.from({ length: 32 }, () => call('POST', JOBS, identity, { body: body(), key: k })),
    )
    const statuses = responses.map((r) => r.status)
    expect(statuses.filter((s) => s === 202)).toHaveLength(1)
    expect(statuses.filter((s) => s === 200)).toHaveLength(31)
    const ids = new Set(await Promise.all(responses.map(async (r) => (await created(r)).id)))
    expect(ids.size).toBe(1)
    const count = await withDb(async (db) => {
      const r = await db.execute<{ n: string }>(
        sql`select count(*) as n from reasoning_jobs where tenant_id = ${identity.tenantId}::uuid`,
      )
      return Number(r.rows[0]!.n)
    })
    expect(count).toBe(1)
  })

  it('429 with Retry-After and the action-required body when the queue limit is reached', async () => {
    mutableEnv.PLAN_CATALOG = catalogWith('team', { reasoningQueueLimit: 1 })
    const identity = await identityFor('test')
    // A job of this tenant still queued (as its object would have indexed it).
    await withDb((db) =>
      db.execute(sql`
        insert into reasoning_jobs (id, tenant_id, mode, principal, model, product, status, record, record_version, created_at, updated_at)
        values (${crypto.randomUUID()}::uuid, ${identity.tenantId}::uuid, 'test', 'key:x', 'svc-hive', 'simulation_cloud', 'queued', '{}'::jsonb, 1, now(), now())`),
    )
    const res = await call('POST', JOBS, identity, { body: body(), key: key() })
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    const refused = (await res.json()) as {
      error: { code: string }
      svc_upgrade: { reason: string; binding_limit: { limit: number } }
    }
    expect(refused.svc_upgrade.reason).toBe('rate_limited')
    expect(refused.svc_upgrade.binding_limit.limit).toBe(1)
  })
})

describe('GET and DELETE', () => {
  it('pages through the tenant’s jobs newest first with no repeats or gaps, filters, capabilities', async () => {
    const identity = await identityFor('test')
    const ids: string[] = []
    for (let i = 0; i < 7; i++) {
      const res = await call('POST', JOBS, identity, {
        body: body({ prompt: `question ${i}`, model: i % 2 ? 'svc-hive' : 'svc-hive' }),
        key: key(),
      })
      ids.push((await created(res)).id)
    }
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res: Response = await call('GET', `${JOBS}?limit=3${cursor ? `&cursor=${cursor}` : ''}`, identity)
      expect(res.status).toBe(200)
      const page = JobPageSchema.parse(await res.json())
      seen.push(...page.jobs.map((j) => j.id))
      for (const job of page.jobs) expect(job).not.toHaveProperty('prompt')
      expect(page.capabilities).toMatchObject({
        allowed_models: ['svc-hive'],
        real_enabled: false,
        workspace_role: 'owner',
        can_run_real: false,
        can_manage_jobs: true,
      })
      cursor = page.next_cursor
      pages += 1
    } while (cursor && pages < 10)
    expect(pages).toBe(3)
    expect(seen).toEqual([...ids].reverse())

    const filtered = JobPageSchema.parse(await (await call('GET', `${JOBS}?status=failed`, identity)).json())
    expect(filtered.jobs).toHaveLength(0)
    const bad = await call('GET', `${JOBS}?limit=101`, identity)
    expect(bad.status).toBe(400)
    const badCursor = await call('GET', `${JOBS}?cursor=not-a-cursor`, identity)
    expect(badCursor.status).toBe(400)
  })

  it('shows another tenant nothing: list empty, GET, DELETE 404; a non-uuid is 404', async () => {
    const owner = await identityFor('test')
    const job = await created(await call('POST', JOBS, owner, { body: body(), key: key() }))
    const stranger = await identityFor('test')
    const list = JobPageSchema.parse(await (await call('GET', JOBS, stranger)).json())
    expect(list.jobs).toHaveLength(0)
    expect((await call('GET', `${JOBS}/${job.id}`, stranger)).status).toBe(404)
    expect((await call('DELETE', `${JOBS}/${job.id}`, stranger)).status).toBe(404)
    expect((await call('GET', `${JOBS}/not-a-uuid`, owner)).status).toBe(404)
    expect((await call('GET', `${JOBS}/${job.id}`, owner)).status).toBe(200)
  })

  it("shows the tenant's other mode nothing: list empty, GET, receipt, DELETE the 404 of no job", async () => {
    const tester = await identityFor('test')
    const job = await created(await call('POST', JOBS, tester, { body: body(), key: key() }))
    await driveToEnd({ jobId: job.id, identity: tester, stub: jobStub(tester.tenantId, job.id) })
    const live = await identityFor('live', 'team', { tenantId: tester.tenantId, keyId: 'live-key' })
    // A person who chose test mode is in the test world with the key.
    const person: Identity = {
      ...live,
      mode: 'test',
      principal: {
        kind: 'access_token',
        subject: 'user:p',
        audience: 'platform',
        tokenId: 't',
        algorithm: 'EdDSA',
      },
    }
    expect(JobPageSchema.parse(await (await call('GET', JOBS, live)).json()).jobs).toEqual([])
    for (const [method, path] of [
      ['GET', `${JOBS}/${job.id}`],
      ['GET', `${JOBS}/${job.id}/receipt`],
      ['DELETE', `${JOBS}/${job.id}`],
    ] as const) {
      const res = await call(method, path, live)
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('job_not_found')
    }
    // The job is intact and still in its own mode's list.
    const listed = JobPageSchema.parse(await (await call('GET', JOBS, person)).json())
    expect(listed.jobs.map((j) => j.id)).toEqual([job.id])
    expect((await created(await call('GET', `${JOBS}/${job.id}`, tester))).prompt).toBe(body().prompt)
  })

  it('GET returns the finished job with content; DELETE erases it and keeps the metadata', async () => {
    const identity = await identityFor('test')
    const job = await created(await call('POST', JOBS, identity, { body: body(), key: key() }))
    await driveToEnd({ jobId: job.id, identity, stub: jobStub(identity.tenantId, job.id) })
    const done = await created(await call('GET', `${JOBS}/${job.id}`, identity))
    expect(done.status).toBe('completed')
    expect(done.prompt).toBe('Is 91 a prime number?')
    expect(done.result).toBeTypeOf('string')
    const erased = await call('DELETE', `${JOBS}/${job.id}`, identity)
    expect(erased.status).toBe(200)
    const after = await created(await call('GET', `${JOBS}/${job.id}`, identity))
    expect(after).not.toHaveProperty('prompt')
    expect(after).not.toHaveProperty('result')
    expect(after.selected_index).toBe(done.selected_index)
  })
})
