/**
 * ReasoningJob's real-hardware path (managed_qpu) inside the reasoning worker: the real object,
 * RateLimiter and unit Postgres; the queue consumer (functions/reasoning/src/qpu-consumer.ts)
 * calling the fake IonQ v0.3 API over HTTP (its own process, faults scripted per job); the QPU queue
 * replaced by a list the test delivers from, so duplicates, retries and the dead-letter queue
 * happen exactly when a test says. Every real_request_status and outcome_state a real-hardware job
 * can end with is reached here by a real path.
 */
import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test'
import { afterEach, beforeEach, describe, expect, inject, it, vi } from 'vitest'
import {
  isTerminal,
  type ReasoningJob as JobRecord,
  ReasoningJobSchema,
} from '../../../durable-objects/reasoning-job/job.schemas'
import { openQpuAccount } from '../../../durable-objects/reasoning-job/quantum/providers/provider-accounts'
import type { QpuJobPort, QpuQueueMessage } from '../../../durable-objects/reasoning-job/quantum/qpu-queue'
import type { ReasoningJob } from '../../../durable-objects/reasoning-job/reasoning-job.do'
import {
  createJob,
  identityFor,
  installUpstream,
  type JobHandle,
  jobOf,
  jobRequest,
  ledgerRows,
  mutableEnv,
  reasoningEnv,
  runDueNow,
  uninstallUpstream,
  unwrap,
} from '../../../durable-objects/reasoning-job/reasoning-job.do-fixtures'
import { openMeter } from '../../../shared/metering'
import { resolvePlan } from '../../../shared/plans'
import type {} from '../../../test/support/ionq-provider.fixture'
import { handleDeadLetter, handleQpuMessage, type QueuedMessage } from './qpu-consumer'

const ionq = inject('ionqProvider')

/** The fake provider's control endpoint (test/e2e/fakes/ionq.fake.ts). */
const control = {
  async post(path: string, body: unknown): Promise<void> {
    const res = await fetch(`${ionq.controlUrl}${path}`, { method: 'POST', body: JSON.stringify(body) })
    if (res.status !== 204) throw new Error(`${path}: ${res.status} ${await res.text()}`)
  },
  /** A fault for the provider jobs (or requests) of one reasoning job. */
  faultFor(
    jobId: string,
    fault: Record<string, unknown>,
    match: Record<string, unknown> = {},
    times?: number,
  ) {
    return control.post('/script', {
      match: { metadataValue: jobId, ...match },
      fault,
      ...(times ? { times } : {}),
    })
  },
  async providerJobs(jobId: string): Promise<{ id: string; target: string; ranOn: string }[]> {
    return (await (await fetch(`${ionq.controlUrl}/jobs?svc_job_id=${jobId}`)).json()) as {
      id: string
      target: string
      ranOn: string
    }[]
  },
}

/** The QPU queue as a list: what the object sent, delivered by the test. */
let queue: QpuQueueMessage[] = []

beforeEach(async () => {
  queue = []
  mutableEnv.QPU_QUEUE = {
    async send(message: QpuQueueMessage) {
      queue.push(message)
    },
  }
  mutableEnv.QPU_IONQ_BASE_URL = ionq.baseUrl
  mutableEnv.QPU_IONQ_API_KEY = ionq.keys.managed
  mutableEnv.QPU_IONQ_TARGET = 'qpu.aria-1'
  installUpstream([{ kind: 'answer' }])
})

afterEach(() => {
  uninstallUpstream()
  for (const name of [
    'QPU_QUEUE',
    'QPU_IONQ_BASE_URL',
    'QPU_IONQ_API_KEY',
    'QPU_IONQ_TARGET',
    'QPU_RECONCILE_GRACE_SECONDS',
    'QPU_REDRIVE_SECONDS',
  ]) {
    delete mutableEnv[name]
  }
})

const port = (m: QpuQueueMessage) =>
  reasoningEnv.REASONING_JOB.get(
    reasoningEnv.REASONING_JOB.idFromName(`${m.tenant_id}/${m.job_id}`),
  ) as unknown as QpuJobPort

/** One delivery of a message to the consumer, as Cloudflare Queues makes it; what it answered. */
async function deliver(body: QpuQueueMessage, attempts = 1): Promise<'ack' | 'retry'> {
  let outcome: 'ack' | 'retry' | null = null
  const message: QueuedMessage = {
    body,
    attempts,
    ack: () => {
      outcome = 'ack'
    },
    retry: () => {
      outcome = 'retry'
    },
  }
  await handleQpuMessage(message, {
    port,
    openAccount: (tenantId, ref) => openQpuAccount(reasoningEnv, tenantId, ref),
    enqueue: async (next) => {
      queue.push(next)
    },
    pollDelaySeconds: 1,
  })
  if (outcome === null) throw new Error('the consumer neither acknowledged nor retried the message')
  return outcome
}

/** Runs the job's alarm until it waits for the QPU (or ends). */
async function driveToQpu(handle: JobHandle): Promise<JobRecord> {
  for (let i = 0; i < 20; i++) {
    await runDueNow(handle)
    const job = await jobOf(handle)
    if (job.status === 'awaiting_qpu' || isTerminal(job.status)) return job
  }
  throw new Error(`the job never reached awaiting_qpu: ${JSON.stringify(await jobOf(handle))}`)
}

/** Delivers what the queue holds (the provider's jobs finish on its clock) until the job ends. */
async function pumpToEnd(handle: JobHandle): Promise<JobRecord> {
  for (let i = 0; i < 40; i++) {
    for (const message of queue.splice(0)) await deliver(message)
    await runDueNow(handle)
    const job = await jobOf(handle)
    if (isTerminal(job.status)) {
      await runDueNow(handle)
      return job
    }
    await new Promise((r) => setTimeout(r, 150))
  }
  throw new Error('the job did not end')
}

async function newManagedJob(planId = 'enterprise', mode: 'live' | 'test' = 'live') {
  const identity = await identityFor(mode, planId)
  const handle = await createJob(identity, jobRequest({ product: 'managed_qpu' }))
  expect(unwrap(handle.reply)).toMatchObject({ requested_real: true, real_request_status: 'not_requested' })
  return handle
}

/**
 * The job's real_qpu ledger rows, read once its token usage is in the ledger (both are settled by
 * the same alarm; the RateLimiter writes its ledger to Postgres in batches), and `expected` of
 * them are there when a QPU was billed.
 */
async function qpuLedger(handle: JobHandle, expected: 0 | 1) {
  let rows: Awaited<ReturnType<typeof ledgerRows>> = []
  await vi.waitFor(
    async () => {
      rows = await ledgerRows(handle.identity.tenantId)
      expect(rows.some((r) => r.request_id === `reasoning-job:${handle.jobId}`)).toBe(true)
      if (expected) expect(rows.some((r) => r.model === 'real_qpu')).toBe(true)
    },
    { timeout: 15_000, interval: 100 },
  )
  return rows.filter((r) => r.model === 'real_qpu')
}

describe('managed_qpu through the QPU queue and the provider', { timeout: 30_000 }, () => {
  it('reserves, waits for the QPU, executes on it once however often the message comes, commits the allowance', async () => {
    const handle = await newManagedJob()
    const waiting = await driveToQpu(handle)
    expect(waiting).toMatchObject({
      status: 'awaiting_qpu',
      real_request_status: 'reserved',
      outcome_state: 'in_progress',
      used_real_qubits: false,
    })
    expect(queue).toEqual([
      {
        v: 1,
        kind: 'submit',
        tenant_id: handle.identity.tenantId,
        job_id: handle.jobId,
        attempt_id: 'attempt-1',
      },
    ])
    // At-least-once: the same message twice at once, and once more later.
    const [first] = queue.splice(0)
    await Promise.all([deliver(first!), deliver(first!)])
    await deliver(first!)
    expect(await control.providerJobs(handle.jobId)).toHaveLength(1)

    const job = await pumpToEnd(handle)
    expect(ReasoningJobSchema.safeParse(job).success).toBe(true)
    const [providerJob] = await control.providerJobs(handle.jobId)
    expect(providerJob).toMatchObject({ target: 'qpu.aria-1', ranOn: 'qpu.aria-1' })
    expect(job).toMatchObject({
      status: 'completed',
      real_request_status: 'executed',
      used_real_qubits: true,
      outcome_state: 'committed',
      selector_backend: 'qaoa-xy/ionq:qpu.aria-1',
      fallback_reason: null,
      error: null,
    })
    expect(job.selector_confidence).toBeGreaterThan(0)
    const classical = job.candidates!.findIndex((c) => c.classical_choice === true)
    expect(classical).toBeGreaterThanOrEqual(0)
    expect(job.candidates!.every((c) => typeof c.quantum_frequency === 'number')).toBe(true)
    expect(await control.providerJobs(handle.jobId)).toHaveLength(1)
    expect(await qpuLedger(handle, 1)).toMatchObject([
      { request_id: `reasoning-job:${handle.jobId}:qpu`, mode: 'live' },
    ])
  })

  it('a QPU target the provider ran on its simulator: provider_used_simulator, not real qubits, released', async () => {
    const handle = await newManagedJob()
    await driveToQpu(handle)
    await control.faultFor(handle.jobId, { kind: 'run_on_simulator' })
    const job = await pumpToEnd(handle)
    expect(job).toMatchObject({
      status: 'completed',
      real_request_status: 'provider_used_simulator',
      used_real_qubits: false,
      outcome_state: 'committed',
      selector_backend: 'qaoa-xy/ionq:simulator',
    })
    expect(await qpuLedger(handle, 0)).toEqual([])
  })

  it('5xx from the provider: the message is retried, then the job executes', async () => {
    const handle = await newManagedJob()
    await driveToQpu(handle)
    await control.faultFor(handle.jobId, { kind: 'status', status: 503 }, { method: 'POST' }, 2)
    const [message] = queue.splice(0)
    expect(await deliver(message!, 1)).toBe('retry')
    expect(await deliver(message!, 2)).toBe('retry')
    expect(await deliver(message!, 3)).toBe('ack')
    const job = await pumpToEnd(handle)
    expect(job).toMatchObject({
      status: 'completed',
      real_request_status: 'executed',
      used_real_qubits: true,
    })
    expect(await control.providerJobs(handle.jobId)).toHaveLength(1)
  })

  it('a message that keeps failing goes to the dead-letter queue: reconciled, nothing billed, classical answer', async () => {
    const handle = await newManagedJob()
    await driveToQpu(handle)
    await control.faultFor(handle.jobId, { kind: 'status', status: 502 }, { method: 'POST' })
    const [message] = queue.splice(0)
    for (let attempts = 1; attempts <= 6; attempts++) expect(await deliver(message!, attempts)).toBe('retry')
    let dead: 'ack' | 'retry' | null = null
    await handleDeadLetter(
      {
        body: message,
        attempts: 1,
        ack: () => {
          dead = 'ack'
        },
        retry: () => {
          dead = 'retry'
        },
      },
      { port },
    )
    expect(dead).toBe('ack')
    // An earlier create may have landed without an answer: the outcome is unknown until looked up.
    expect(await jobOf(handle)).toMatchObject({ status: 'awaiting_qpu', outcome_state: 'outcome_unknown' })
    mutableEnv.QPU_RECONCILE_GRACE_SECONDS = '0'
    const job = await pumpToEnd(handle)
    expect(job).toMatchObject({
      status: 'classical_fallback',
      fallback_reason: 'selector_unreachable',
      real_request_status: 'released_after_failure',
      outcome_state: 'reconciled',
      used_real_qubits: false,
      selector_backend: 'classical_argmax',
      error: { code: 'qpu_unreachable' },
    })
    expect(await control.providerJobs(handle.jobId)).toHaveLength(0)
    expect(await qpuLedger(handle, 0)).toEqual([])
  })

  it('the answer to the create is lost (connection dropped): outcome_unknown, then reconciled by the alarm, billed once', async () => {
    const handle = await newManagedJob()
    await driveToQpu(handle)
    await control.faultFor(handle.jobId, { kind: 'drop_after_create' }, {}, 1)
    const [message] = queue.splice(0)
    expect(await deliver(message!)).toBe('ack')
    expect(await jobOf(handle)).toMatchObject({ status: 'awaiting_qpu', outcome_state: 'outcome_unknown' })
    const job = await pumpToEnd(handle)
    expect(job).toMatchObject({
      status: 'completed',
      real_request_status: 'executed',
      used_real_qubits: true,
      outcome_state: 'reconciled',
    })
    expect(await control.providerJobs(handle.jobId)).toHaveLength(1)
    expect(await qpuLedger(handle, 1)).toMatchObject([
      { request_id: `reasoning-job:${handle.jobId}:qpu`, mode: 'live' },
    ])
  })

  it('the provider job fails: released_after_failure with the provider reason, classical answer', async () => {
    const handle = await newManagedJob()
    await driveToQpu(handle)
    await control.faultFor(handle.jobId, { kind: 'job_fails', code: 'CompilationError' })
    const job = await pumpToEnd(handle)
    expect(job).toMatchObject({
      status: 'classical_fallback',
      fallback_reason: 'selector_unreachable',
      real_request_status: 'released_after_failure',
      outcome_state: 'committed',
      used_real_qubits: false,
      error: { code: 'qpu_job_failed' },
    })
    expect(job.error?.message).toContain('CompilationError')
    expect(await qpuLedger(handle, 0)).toEqual([])
  })

  it('readout that loses every 1: the measured outcome selects nothing, invalid_selection, the classical argmax', async () => {
    const handle = await newManagedJob()
    await driveToQpu(handle)
    await control.faultFor(handle.jobId, { kind: 'readout_decay', probability: 1 })
    const job = await pumpToEnd(handle)
    const classical = job.candidates!.findIndex((c) => c.classical_choice === true)
    expect(job).toMatchObject({
      status: 'classical_fallback',
      fallback_reason: 'invalid_selection',
      real_request_status: 'executed',
      used_real_qubits: true,
      selector_backend: 'classical_argmax',
      selected_index: classical,
    })
  })

  it('a lost message is sent again by the watchdog: nothing is lost while awaiting_qpu', async () => {
    const handle = await newManagedJob()
    await driveToQpu(handle)
    queue.splice(0) // lost (a restart of the local queue, say)
    mutableEnv.QPU_REDRIVE_SECONDS = '1'
    await runInDurableObject(handle.stub, (_o: ReasoningJob, state) => {
      state.storage.sql.exec(`UPDATE qpu_attempt SET last_contact_at = 1`)
    })
    await runDueNow(handle)
    expect(queue).toHaveLength(1)
    const job = await pumpToEnd(handle)
    expect(job).toMatchObject({ status: 'completed', real_request_status: 'executed' })
  })
})

describe('a restart while awaiting_qpu', { timeout: 30_000 }, () => {
  it('the object torn down after the provider job was created: the revived object re-sends, polls, executes once', async () => {
    const handle = await newManagedJob()
    await driveToQpu(handle)
    const [message] = queue.splice(0)
    await control.post('/clock', { mode: 'manual' }) // the QPU job stays running until the clock moves
    try {
      expect(await deliver(message!)).toBe('ack') // created, recorded, first poll: still running
      expect(await control.providerJobs(handle.jobId)).toHaveLength(1)
      await abortAllDurableObjects()
      queue.splice(0) // the poll message is lost with the restart
    } finally {
      await control.post('/clock', { mode: 'real' })
    }
    // A new instance: what the first one stored is all it knows; its watchdog sends the message again.
    const revived = { ...handle, stub: reasoningEnv.REASONING_JOB.get(handle.stub.id) }
    expect(await jobOf(revived)).toMatchObject({ status: 'awaiting_qpu', real_request_status: 'reserved' })
    mutableEnv.QPU_REDRIVE_SECONDS = '1'
    await runInDurableObject(revived.stub, (_o: ReasoningJob, state) => {
      state.storage.sql.exec(`UPDATE qpu_attempt SET last_contact_at = 1`)
    })
    const job = await pumpToEnd(revived)
    expect(job).toMatchObject({
      status: 'completed',
      real_request_status: 'executed',
      used_real_qubits: true,
    })
    expect(await control.providerJobs(handle.jobId)).toHaveLength(1)
  })
})

describe('real hardware refused: the classical answer, and why', { timeout: 30_000 }, () => {
  it('a plan without real_qpu: quantum_not_enabled, nothing reserved or sent', async () => {
    const handle = await newManagedJob('team')
    const job = await pumpToEnd(handle)
    expect(job).toMatchObject({
      status: 'classical_fallback',
      fallback_reason: 'selector_unreachable',
      real_request_status: 'quantum_not_enabled',
      outcome_state: 'committed',
      used_real_qubits: false,
      error: { code: 'feature_required' },
    })
    expect(queue).toEqual([])
  })

  it('no managed account on the deployment: quantum_not_enabled', async () => {
    delete mutableEnv.QPU_IONQ_BASE_URL
    const handle = await newManagedJob()
    const job = await pumpToEnd(handle)
    expect(job).toMatchObject({ real_request_status: 'quantum_not_enabled', status: 'classical_fallback' })
    expect(job.error?.message).toContain('QPU_IONQ_BASE_URL')
  })

  it('the monthly allowance used up: quantum_allowance_exhausted', async () => {
    const identity = await identityFor('live', 'enterprise')
    const { catalog, plan } = resolvePlan(reasoningEnv, 'enterprise')
    const allowance = plan.toolAllowances?.real_qpu ?? 0
    expect(allowance).toBeGreaterThan(0)
    await openMeter(reasoningEnv.RATE_LIMITER, identity, 'test.allowance', { leases: false }).acquire(
      { requestId: 'fill-allowance', model: 'real_qpu', estimatedTokens: 0, estimatedQuantity: allowance },
      catalog,
    )
    const handle = await createJob(identity, jobRequest({ product: 'managed_qpu' }))
    const job = await pumpToEnd(handle)
    expect(job).toMatchObject({
      status: 'classical_fallback',
      real_request_status: 'quantum_allowance_exhausted',
      used_real_qubits: false,
      error: { code: 'tier_allowance_exhausted' },
    })
    expect(queue).toEqual([])
  })
})
