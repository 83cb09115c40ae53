/**
 * Real-hardware reasoning jobs through the gateway of the running stack (`npm start`: Miniflare with
 * the real QPU queue, its consumer and dead-letter queue): live keys on the fake model upstream, the
 * fake IonQ v0.3 as the platform's account (managed_qpu) and as a tenant's own (byopa_managed).
 * What a user can rely on: a job that says it used real qubits made its provider call, once per
 * attempt, whatever the queue does; one whose provider keeps failing ends, and says why.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { createWorkspace, stack, tag, type Workspace } from './chat-fixtures.ts'
import { ionqControl } from './fakes/ionq.fake.ts'
import { shapeErrors } from './reasoning-schemas.ts'

const JOBS = `${stack.baseUrl}/svc/quantum-reasoning/jobs`
const ionqFixture = stack.fakes.ionq as {
  controlUrl: string
  baseUrl: string
  keys: { managed: string }
}
const ionq = ionqControl(ionqFixture.controlUrl)

interface Job {
  id: string
  status: string
  used_real_qubits: boolean
  real_request_status: string
  outcome_state: string
  fallback_reason: string | null
  selector_backend?: string
  error?: { code: string; message: string } | null
  [key: string]: unknown
}

async function create(key: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(JOBS, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'idempotency-key': `e2e-qpu-${crypto.randomUUID()}`,
    },
    body: JSON.stringify(body),
  })
}

async function jobOf(res: Response): Promise<Job> {
  const body = (await res.json()) as { job: Job }
  expect(shapeErrors('envelope', body)).toEqual([])
  return body.job
}

async function createJob(key: string, body: Record<string, unknown>): Promise<Job> {
  const res = await create(key, body)
  expect(res.status, await res.clone().text()).toBe(202)
  return jobOf(res)
}

const TERMINAL = ['completed', 'classical_fallback', 'failed', 'cancelled']

/** Polls the job until it is terminal (bounded; the object's alarm and the queue drive it). */
async function waitForEnd(key: string, id: string, limitMs = 60_000): Promise<Job> {
  const deadline = Date.now() + limitMs
  for (;;) {
    const job = await jobOf(await fetch(`${JOBS}/${id}`, { headers: { authorization: `Bearer ${key}` } }))
    if (TERMINAL.includes(job.status)) return job
    if (Date.now() > deadline) throw new Error(`job ${id} is still ${job.status}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

const question = (t: string, product: string) => ({
  prompt: `Which is larger, 2^10 or 10^3? ${t}`,
  model: 'svc-hive',
  product,
})

/** The provider requests that created jobs for this reasoning job. */
async function createsFor(jobId: string) {
  return (await ionq.requests()).filter(
    (r) =>
      r.method === 'POST' &&
      /^\/v0\.3\/jobs$/.test(r.path) &&
      (r.body as { metadata?: { svc_job_id?: string } } | null)?.metadata?.svc_job_id === jobId,
  )
}

let enterprise: Workspace
beforeAll(async () => {
  enterprise = await createWorkspace('enterprise')
})

const CONNECTIONS = `${stack.baseUrl}/svc/quantum-reasoning/provider-connections`

/**
 * A provider connection of the workspace with an IonQ key of its own: faults scripted for that key
 * touch only this test's jobs (other files share the fake provider).
 */
async function ownConnection(): Promise<{ id: string; apiKey: string }> {
  const apiKey = `ionq-e2e-${crypto.randomUUID()}`
  await ionq.addKey(apiKey, { qpu: true })
  const made = await fetch(CONNECTIONS, {
    method: 'POST',
    headers: { authorization: `Bearer ${enterprise.liveKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: `lab ${crypto.randomUUID()}`,
      kind: 'ionq',
      api_key: apiKey,
      base_url: ionqFixture.baseUrl,
    }),
  })
  expect(made.status, await made.clone().text()).toBe(201)
  return { id: ((await made.json()) as { id: string }).id, apiKey }
}

const onConnection = (t: string, connection: { id: string }) => ({
  ...question(t, 'byopa_managed'),
  provider_connection_id: connection.id,
})

// The queue, the consumer and the provider calls do not depend on the database (the restart and
// crash tests run on both): once, on PGlite (vitest.config.ts), to keep the suite's time.
describe.runIf(stack.kind === 'pglite')(
  `real-hardware jobs through the gateway and the QPU queue (${stack.kind})`,
  {
    timeout: 90_000,
  },
  () => {
    it('managed_qpu: used_real_qubits means the provider API was called, once, with the platform key', async () => {
      const queued = await createJob(enterprise.liveKey, question(tag(), 'managed_qpu'))
      expect(queued).toMatchObject({
        status: 'queued',
        requested_real: true,
        real_request_status: 'not_requested',
      })
      const done = await waitForEnd(enterprise.liveKey, queued.id)
      expect(done).toMatchObject({
        status: 'completed',
        used_real_qubits: true,
        real_request_status: 'executed',
        outcome_state: 'committed',
        selector_backend: 'qaoa-xy/ionq:qpu.aria-1',
      })
      const creates = await createsFor(queued.id)
      expect(creates).toHaveLength(1)
      expect(creates[0]!.apiKey).toBe(ionqFixture.keys.managed)
      const providerJobs = await ionq.jobsFor(queued.id)
      expect(providerJobs).toHaveLength(1)
      expect(providerJobs[0]).toMatchObject({ target: 'qpu.aria-1', ranOn: 'qpu.aria-1' })
    })

    it('the queue delivers a message again after the provider job was created: still one provider job', async () => {
      // The first poll after the create fails (503): the consumer retries the message, and the second
      // delivery finds the attempt submitted and only polls.
      const connection = await ownConnection()
      await ionq.script({
        match: { method: 'GET', path: '^/v0\\.3/jobs/[0-9a-f-]+$', apiKey: connection.apiKey },
        fault: { kind: 'status', status: 503 },
        times: 1,
      })
      const queued = await createJob(enterprise.liveKey, onConnection(tag(), connection))
      const done = await waitForEnd(enterprise.liveKey, queued.id)
      expect(done).toMatchObject({
        status: 'completed',
        used_real_qubits: true,
        real_request_status: 'executed',
      })
      expect(await createsFor(queued.id)).toHaveLength(1)
      const served503 = (await ionq.requests()).filter(
        (r) => r.apiKey === connection.apiKey && r.fault?.kind === 'status',
      )
      expect(served503).toHaveLength(1)
    })

    it('a provider that keeps failing: the message goes to the dead-letter queue and the job ends honestly', async () => {
      const connection = await ownConnection()
      await ionq.script({
        match: { method: 'POST', path: '^/v0\\.3/jobs$', apiKey: connection.apiKey },
        fault: { kind: 'status', status: 503 },
      })
      const queued = await createJob(enterprise.liveKey, onConnection(tag(), connection))
      const done = await waitForEnd(enterprise.liveKey, queued.id)
      expect(done).toMatchObject({
        status: 'classical_fallback',
        fallback_reason: 'selector_unreachable',
        used_real_qubits: false,
        real_request_status: 'released_after_failure',
        // The last tries may have created a job without an answer: the alarm looked, found none.
        outcome_state: 'reconciled',
        selector_backend: 'classical_argmax',
        error: { code: 'qpu_unreachable' },
      })
      // Every delivery of the message tried the create once: 1 + max_retries (5) tries, no job made.
      expect(await createsFor(queued.id)).toHaveLength(6)
      expect(await ionq.jobsFor(queued.id)).toHaveLength(0)
    })

    it('byopa_managed: the tenant connection, its own key, and no job without one', async () => {
      const connection = await ownConnection()

      const missing = await create(enterprise.liveKey, question(tag(), 'byopa_managed'))
      expect(missing.status).toBe(400)
      expect(await missing.json()).toMatchObject({
        error: { code: 'provider_connection_required', param: 'provider_connection_id' },
      })
      const unknown = await create(enterprise.liveKey, {
        ...question(tag(), 'byopa_managed'),
        provider_connection_id: crypto.randomUUID(),
      })
      expect(unknown.status).toBe(404)

      const queued = await createJob(enterprise.liveKey, onConnection(tag(), connection))
      const done = await waitForEnd(enterprise.liveKey, queued.id)
      expect(done).toMatchObject({
        status: 'completed',
        used_real_qubits: true,
        real_request_status: 'executed',
      })
      const creates = await createsFor(queued.id)
      expect(creates).toHaveLength(1)
      expect(creates[0]!.apiKey).toBe(connection.apiKey)
    })
  },
)
