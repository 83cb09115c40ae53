/**
 * Reasoning jobs through the gateway of the running stack: test keys on the simulated model, live
 * keys against the fake OpenAI-compatible upstream (logprobs, judge verdicts, scripted faults).
 * Every response is held to closed JSON Schemas written from the spec's tables (reasoning-schemas.ts).
 */
import { createHash } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { beforeAll, describe, expect, it } from 'vitest'
import * as merkle from '../support/independent-merkle.ts'
import { verifyDsseWithJwks } from '../support/independent-signatures.ts'
import { createWorkspace, stack, tag, upstream, type Workspace, withDatabase } from './chat-fixtures.ts'
import { shapeErrors } from './reasoning-schemas.ts'

const JOBS = `${stack.baseUrl}/svc/quantum-reasoning/jobs`

interface Job {
  id: string
  status: string
  prompt?: string
  result?: string
  candidates?: Record<string, unknown>[]
  selected_index?: number
  usage: Record<string, number>
  attempt_count: number
  error?: { code: string; message: string } | null
  created_at: string
  [key: string]: unknown
}

const newKey = () => `e2e-${crypto.randomUUID()}`

async function post(key: string, body: unknown, idempotencyKey: string | null = newKey()): Promise<Response> {
  return fetch(JOBS, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    body: JSON.stringify(body),
  })
}

async function get(key: string, path = ''): Promise<Response> {
  return fetch(`${JOBS}${path}`, { headers: { authorization: `Bearer ${key}` } })
}

async function del(key: string, id: string): Promise<Response> {
  return fetch(`${JOBS}/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } })
}

/** The job of an envelope response, held to the spec's closed shape. */
async function jobOf(res: Response): Promise<Job> {
  const body = (await res.json()) as { job: Job }
  expect(shapeErrors('envelope', body)).toEqual([])
  return body.job
}

/** Polls the job until it reaches one of `statuses` (bounded; the job's own alarm drives it). */
async function waitFor(key: string, id: string, statuses: string[], limitMs = 60_000): Promise<Job> {
  const deadline = Date.now() + limitMs
  for (;;) {
    const job = await jobOf(await get(key, `/${id}`))
    if (statuses.includes(job.status)) return job
    if (Date.now() > deadline) throw new Error(`job ${id} is ${job.status}, not ${statuses.join('|')}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

const question = (t: string) => ({
  prompt: `Which is larger, 2^10 or 10^3? ${t}`,
  model: 'svc-hive',
  product: 'simulation_cloud',
})

let team: Workspace
let enterprise: Workspace
/** Another tenant, for tenancy checks. */
let neighbour: Workspace
beforeAll(async () => {
  team = await createWorkspace('team')
  enterprise = await createWorkspace('enterprise')
  neighbour = await createWorkspace('pro')
})

describe(`reasoning jobs: create, poll, complete (${stack.kind})`, () => {
  it('test key, svc-hive: 202 queued, then completed with scored candidates on the simulated model', async () => {
    const res = await post(team.testKey, question(tag()))
    expect(res.status).toBe(202)
    const queued = await jobOf(res)
    expect(queued).toMatchObject({
      status: 'queued',
      scoring_method: 'hive_logprob',
      outcome_state: 'not_started',
    })
    const done = await waitFor(team.testKey, queued.id, ['completed'])
    expect(done.candidates).toHaveLength(4)
    expect(done.result).toBe(done.candidates?.[done.selected_index ?? -1]?.content)
    expect(done.usage.model_calls).toBe(4)
    expect(done.outcome_state).toBe('committed')
  })

  it('live key, svc-hive: candidates from the fake upstream with logprobs, scored by them', async () => {
    const t = tag()
    const queued = await jobOf(await post(team.liveKey, question(t)))
    const done = await waitFor(team.liveKey, queued.id, ['completed'])
    const seen = (await upstream.requests(t)).filter((r) => r.route === '' && !r.fault)
    expect(seen).toHaveLength(4)
    for (const request of seen) expect(request.body).toMatchObject({ model: 'fake-hive', logprobs: true })
    const contents = done.candidates?.map((c) => c.content)
    expect(new Set(contents).size).toBe(4)
    for (const c of done.candidates ?? []) {
      expect(String(c.content)).toMatch(/^Fake upstream fake-hive reply \(seed \d\): /)
      expect(c.quality).toBeGreaterThan(0)
    }
  })

  it('test key, svc-swarm: three candidates judged in both orders (six verdicts)', async () => {
    const queued = await jobOf(await post(enterprise.testKey, { ...question(tag()), model: 'svc-swarm' }))
    const done = await waitFor(enterprise.testKey, queued.id, ['completed'])
    expect(done.scoring_method).toBe('swarm_judge')
    expect(done.usage.model_calls).toBe(9)
  })

  it('managed_qpu on a plan with real hardware ends classical_fallback, telling the truth', async () => {
    const queued = await jobOf(await post(enterprise.testKey, { ...question(tag()), product: 'managed_qpu' }))
    const done = await waitFor(enterprise.testKey, queued.id, ['classical_fallback', 'completed'])
    expect(done).toMatchObject({
      status: 'classical_fallback',
      requested_real: true,
      used_real_qubits: false,
      fallback_reason: 'selector_unreachable',
    })
    expect(done.real_request_status).not.toBe('executed')
  })

  it('refuses real hardware without the plan feature (403, action-required body)', async () => {
    const res = await post(team.testKey, { ...question(tag()), product: 'managed_qpu' })
    expect(res.status).toBe(403)
    const body = (await res.json()) as { error: { code: string }; svc_upgrade: { requested_feature: string } }
    expect(body.error.code).toBe('feature_required')
    expect(body.svc_upgrade.requested_feature).toBe('real_qpu')
  })
})

describe(`reasoning jobs: idempotency (${stack.kind})`, () => {
  it('same key + same request → 200 with the same job; a different request → 409', async () => {
    const key = newKey()
    const body = question(tag())
    const first = await post(team.testKey, body, key)
    expect(first.status).toBe(202)
    const job = await jobOf(first)
    const again = await post(team.testKey, body, key)
    expect(again.status).toBe(200)
    expect((await jobOf(again)).id).toBe(job.id)
    const other = await post(team.testKey, { ...body, prompt: `${body.prompt} (changed)` }, key)
    expect(other.status).toBe(409)
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('idempotency_key_reused')
  })

  it('32 parallel identical requests: exactly one 202, the rest 200 with the same id', async () => {
    const key = newKey()
    const body = question(tag())
    const responses = await Promise.all(Array.from({ length: 32 }, () => post(team.testKey, body, key)))
    const statuses = responses.map((r) => r.status)
    expect(statuses.filter((s) => s === 202)).toHaveLength(1)
    expect(statuses.filter((s) => s === 200)).toHaveLength(31)
    const ids = new Set(await Promise.all(responses.map(async (r) => (await jobOf(r)).id)))
    expect(ids.size).toBe(1)
  })

  it('a missing or short Idempotency-Key is a 400 naming the header', async () => {
    for (const key of [null, 'too-short']) {
      const res = await post(team.testKey, question(tag()), key)
      expect(res.status).toBe(400)
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe('Idempotency-Key')
    }
  })
})

describe(`reasoning jobs: faults, cancel and erase (${stack.kind})`, () => {
  it('a started job cannot be cancelled (409); a finished one is erased, metadata kept', async () => {
    const t = tag()
    await upstream.script({ match: { contains: t }, fault: { kind: 'slow', delayMs: 1_500 }, times: 4 })
    const queued = await jobOf(await post(team.liveKey, question(t)))
    await waitFor(team.liveKey, queued.id, ['generating_candidates', 'scoring', 'selecting'])
    const refused = await del(team.liveKey, queued.id)
    expect(refused.status).toBe(409)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('job_started')
    const done = await waitFor(team.liveKey, queued.id, ['completed'])
    expect(done.prompt).toContain(t)
    const erased = await del(team.liveKey, queued.id)
    expect(erased.status).toBe(200)
    const after = await jobOf(await get(team.liveKey, `/${queued.id}`))
    expect(after.status).toBe('completed')
    expect(after).not.toHaveProperty('prompt')
    expect(after).not.toHaveProperty('result')
    expect(after.candidates?.every((c) => !('content' in c) && typeof c.digest === 'string')).toBe(true)
    expect(after.usage).toEqual(done.usage)
  })
})

describe(`reasoning jobs: pages and tenancy (${stack.kind})`, () => {
  it('pages over 250 jobs with no duplicates or gaps while new jobs are created', async () => {
    const ws = await createWorkspace('team')
    // One real job, its record cloned into the index 249 times (pages read only the index).
    const real = await waitFor(ws.testKey, (await jobOf(await post(ws.testKey, question(tag())))).id, [
      'completed',
    ])
    const base = Date.parse(real.created_at)
    await withDatabase(async (db) => {
      for (let i = 1; i < 250; i++) {
        const id = crypto.randomUUID()
        const created = new Date(base - i * 1_000).toISOString()
        const { prompt: _p, result: _r, candidates: _c, ...record } = real
        await db.execute(sql`
          insert into reasoning_jobs (id, tenant_id, mode, principal, model, product, status, record, record_version, created_at, updated_at)
          values (${id}::uuid, ${ws.tenantId}::uuid, 'test', 'key:fixture', 'svc-hive', 'simulation_cloud', 'completed',
            ${JSON.stringify({ ...record, id, created_at: created })}::jsonb, 1, ${created}::timestamptz, ${created}::timestamptz)`)
      }
    })
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res: Response = await get(
        ws.testKey,
        `?limit=37${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      )
      expect(res.status).toBe(200)
      const page = (await res.json()) as { jobs: Job[]; next_cursor: string | null }
      expect(shapeErrors('page', page)).toEqual([])
      seen.push(...page.jobs.map((j) => j.id))
      // Jobs created meanwhile sort before the first page: they never shift the pages.
      if (pages === 1) await post(ws.testKey, question(tag()))
      cursor = page.next_cursor
      pages += 1
    } while (cursor && pages < 20)
    expect(seen).toHaveLength(250)
    expect(new Set(seen).size).toBe(250)
    expect(seen[0]).toBe(real.id)
    const filtered = (await (await get(ws.testKey, '?status=failed&model=svc-hive')).json()) as {
      jobs: Job[]
    }
    expect(filtered.jobs).toEqual([])
  })

  it('another tenant sees nothing: list, get and delete are tenant-scoped (404)', async () => {
    const queued = await jobOf(await post(team.testKey, question(tag())))
    const other = neighbour.testKey
    const list = (await (await get(other)).json()) as { jobs: Job[] }
    expect(shapeErrors('page', list)).toEqual([])
    expect(list.jobs.map((j) => j.id)).not.toContain(queued.id)
    expect((await get(other, `/${queued.id}`)).status).toBe(404)
    expect((await del(other, queued.id)).status).toBe(404)
    expect((await get(team.testKey, '/not-a-uuid')).status).toBe(404)
  })
})

describe(`reasoning jobs: inference receipts (${stack.kind})`, () => {
  it('a completed job has a receipt that verifies offline with the JWKS (liboqs) and is in the audit log', async () => {
    const created = await jobOf(await post(team.testKey, question(tag())))
    await waitFor(team.testKey, created.id, ['completed'])
    // The receipt is issued moments after the job completes (signed, then logged).
    let job: Job
    for (let i = 0; ; i++) {
      job = await jobOf(await get(team.testKey, `/${created.id}`))
      if (job.inference_receipt_id || i > 100) break
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(job.inference_receipt_id).toMatch(/^[0-9a-f-]{36}$/)
    const res = await get(team.testKey, `/${created.id}/receipt`)
    expect(res.status).toBe(200)
    const receipt = (await res.json()) as {
      receipt_id: string
      envelope: { payloadType: string; payload: string; signatures: { keyid: string; sig: string }[] }
      statement: {
        job: { id: string; tenant_id: string }
        candidates: { digest: string }[]
        selection: { selected_index: number }
      }
      jwks_url: string
      audit_log: { origin: string; index: number; leaf_hash: string }
    }
    expect(receipt.receipt_id).toBe(job.inference_receipt_id)

    // 1. The signature: the public JWKS the receipt names, checked by liboqs (not the product's code).
    const jwks = await (await fetch(receipt.jwks_url)).json()
    expect(await verifyDsseWithJwks(receipt.envelope, jwks)).toEqual(['ML-DSA-65'])
    const payload = Buffer.from(receipt.envelope.payload, 'base64')
    const statement = JSON.parse(payload.toString('utf8'))
    expect(statement).toEqual(receipt.statement)
    expect(statement.job).toMatchObject({ id: created.id, tenant_id: team.tenantId })
    expect(statement.candidates.map((c: { digest: string }) => c.digest)).toEqual(
      job.candidates!.map((c) => c.digest),
    )
    expect(statement.selection.selected_index).toBe(job.selected_index)
    const forged = {
      ...receipt.envelope,
      payload: Buffer.from(JSON.stringify({ ...statement, usage: {} })).toString('base64'),
    }
    expect(await verifyDsseWithJwks(forged, jwks)).toEqual([])

    // 2. The log: the tenant's entry names this receipt and the digest of exactly these bytes.
    const entries = await fetch(
      `${stack.baseUrl}/platform/v1/audit-log/entries?start=${receipt.audit_log.index}&end=${receipt.audit_log.index + 1}`,
      { headers: { authorization: `Bearer ${team.testKey}` } },
    )
    expect(entries.status).toBe(200)
    const [entry] = (
      (await entries.json()) as {
        data: { entry: string; leaf_hash: string; event: Record<string, unknown> }[]
      }
    ).data
    expect(entry!.event).toMatchObject({
      kind: 'inference_receipt.issued',
      receipt_id: receipt.receipt_id,
      receipt_digest: `sha256:${createHash('sha256').update(payload).digest('hex')}`,
      kid: receipt.envelope.signatures[0]!.keyid,
      alg: 'ML-DSA-65',
    })
    const leaf = await merkle.leafHashOf(new TextEncoder().encode(entry!.entry))
    expect(Buffer.from(leaf).toString('base64')).toBe(receipt.audit_log.leaf_hash)

    // Not another tenant's to read.
    expect((await get(neighbour.testKey, `/${created.id}/receipt`)).status).toBe(404)
  })
})
