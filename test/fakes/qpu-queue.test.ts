/**
 * The QPU queue path without the runtime: the consumer (functions/reasoning/src/qpu-consumer.ts)
 * against the fake IonQ over HTTP, a job whose attempt follows the object's transitions
 * (durable-objects/reasoning-job/qpu-attempt.ts), and a queue with Cloudflare's semantics
 * (at-least-once, `max_retries`, then the dead-letter queue). What a user notices: one provider job
 * per attempt however often a message comes, an outcome for every attempt, and clear endings.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  claim,
  finished,
  newAttempt,
  outcomeUnknown,
  type QpuAttempt,
  reconcileFound,
  reconcileMiss,
  release,
  submitted,
  unreachable,
} from '../../durable-objects/reasoning-job/qpu-attempt.ts'
import { IonqV03Provider } from '../../durable-objects/reasoning-job/quantum/providers/ionq-v03.ts'
import type {
  QpuJobPort,
  QpuOutcome,
  QpuQueueMessage,
} from '../../durable-objects/reasoning-job/quantum/qpu-queue.ts'
import {
  handleDeadLetter,
  handleQpuMessage,
  type QueuedMessage,
} from '../../functions/reasoning/src/qpu-consumer.ts'
import { type FakeIonq, startFakeIonq } from './ionq-provider.ts'

const KEY = 'ionq-queue-test-key'
const MAX_RETRIES = 3
let fake: FakeIonq

class MemoryJob implements QpuJobPort {
  attempt: QpuAttempt
  readonly jobId: string
  constructor(jobId: string) {
    this.jobId = jobId
    this.attempt = newAttempt('a1', {
      name: `svc-job-${jobId}`,
      circuit: { qubits: 2, circuit: [{ gate: 'x', target: 1 }] },
      shots: 100,
      account: { kind: 'managed' },
      metadata: { svc_job_id: jobId, svc_attempt: 'a1' },
      since: fake.now(),
    })
  }
  async qpuClaim() {
    const r = claim(this.attempt, fake.now(), randomUUID())
    this.attempt = r.attempt
    return r.claim
  }
  async qpuRelease(_a: string, token: string) {
    this.attempt = release(this.attempt, token)
  }
  async qpuSubmitted(_a: string, _t: string, id: string, adopted: boolean) {
    this.attempt = submitted(this.attempt, id, adopted)
  }
  async qpuOutcomeUnknown(_a: string, _t: string, detail: string) {
    this.attempt = outcomeUnknown(this.attempt, fake.now(), detail)
  }
  async qpuFinished(_a: string, _t: string, outcome: QpuOutcome) {
    this.attempt = finished(this.attempt, outcome)
  }
  async qpuUnreachable(_a: string, detail: string) {
    this.attempt = unreachable(this.attempt, fake.now(), detail)
  }
  /** What the object's alarm does for an unknown outcome. */
  async reconcile() {
    const provider = new IonqV03Provider({ baseUrl: fake.baseUrl, apiKey: KEY })
    try {
      const found = await provider.findByMetadata(
        this.attempt.submission.metadata,
        this.attempt.submission.since - 60_000,
      )
      this.attempt = found
        ? reconcileFound(this.attempt, found.id)
        : reconcileMiss(this.attempt, fake.now(), 'missing', 'not found')
    } catch (err) {
      this.attempt = reconcileMiss(this.attempt, fake.now(), 'failed', String(err))
    }
  }
}

/** Cloudflare Queues semantics in memory: retry() redelivers with attempts+1; past max_retries → DLQ. */
class MemoryQueue {
  pending: { body: QpuQueueMessage; attempts: number; delaySeconds: number }[] = []
  dlq: { body: QpuQueueMessage; attempts: number }[] = []
  retryDelays: number[] = []
  send(body: QpuQueueMessage, delaySeconds = 0) {
    this.pending.push({ body, attempts: 1, delaySeconds })
  }
  /** Delivers everything pending once (a batch); returns how many were delivered. */
  async deliver(job: MemoryJob): Promise<number> {
    const batch = this.pending.splice(0)
    await Promise.all(
      batch.map(async (m) => {
        let outcome: 'ack' | { retry: number } = 'ack'
        const message: QueuedMessage = {
          body: m.body,
          attempts: m.attempts,
          ack: () => {
            outcome = 'ack'
          },
          retry: (o) => {
            outcome = { retry: o?.delaySeconds ?? 0 }
          },
        }
        await handleQpuMessage(message, {
          port: () => job,
          openAccount: async () => ({
            kind: 'ionq',
            baseUrl: fake.baseUrl,
            apiKey: KEY,
            target: 'qpu.aria-1',
          }),
          enqueue: async (body, delay) => this.send(body, delay),
          pollDelaySeconds: 1,
        })
        const o = outcome as 'ack' | { retry: number }
        if (o !== 'ack') {
          this.retryDelays.push(o.retry)
          if (m.attempts > MAX_RETRIES) this.dlq.push({ body: m.body, attempts: m.attempts })
          else this.pending.push({ ...m, attempts: m.attempts + 1, delaySeconds: o.retry })
        }
      }),
    )
    return batch.length
  }
}

const message = (job: MemoryJob): QpuQueueMessage => ({
  v: 1,
  kind: 'submit',
  tenant_id: '7f0c3f4e-0d5e-4c55-9a11-3b2f6c7d8e90',
  job_id: job.jobId,
  attempt_id: 'a1',
})

async function runUntilQuiet(queue: MemoryQueue, job: MemoryJob, rounds = 20) {
  for (let i = 0; i < rounds && queue.pending.length > 0; i++) {
    await queue.deliver(job)
    fake.setClock({ advanceMs: 2_000 })
  }
}

beforeAll(async () => {
  fake = await startFakeIonq({ keys: { [KEY]: { qpu: true } } })
})
afterAll(() => fake.stop())
beforeEach(() => {
  fake.reset()
  fake.setClock({ mode: 'manual', now: 1_900_000_000_000 })
})

const providerJobs = (job: MemoryJob) => fake.jobs.filter((j) => j.metadata.svc_job_id === job.jobId)

describe('the QPU queue consumer', () => {
  it('submits, polls until the QPU is done and records the result: x on qubit 1 reads as state 2', async () => {
    const job = new MemoryJob(randomUUID())
    const queue = new MemoryQueue()
    queue.send(message(job))
    await runUntilQuiet(queue, job)
    expect(job.attempt.status).toBe('finished')
    expect(job.attempt.outcome).toMatchObject({
      kind: 'completed',
      executedOn: 'qpu',
      target: 'qpu.aria-1',
      probabilities: [[2, 1]],
    })
    expect(providerJobs(job)).toHaveLength(1)
    expect(queue.dlq).toEqual([])
  })

  it('a message delivered twice at once, and again later, makes one provider job', async () => {
    const job = new MemoryJob(randomUUID())
    const queue = new MemoryQueue()
    queue.send(message(job))
    queue.send(message(job))
    await runUntilQuiet(queue, job)
    queue.send(message(job)) // a late duplicate after the attempt finished
    await runUntilQuiet(queue, job)
    expect(providerJobs(job)).toHaveLength(1)
    expect(job.attempt.status).toBe('finished')
  })

  it('a submitter that died after creating the job: the next one finds it by metadata instead of creating another', async () => {
    const job = new MemoryJob(randomUUID())
    // The first consumer created the job and vanished (its lease expires, nothing recorded).
    await job.qpuClaim()
    await new IonqV03Provider({ baseUrl: fake.baseUrl, apiKey: KEY }).submit({
      ...job.attempt.submission,
      target: 'qpu.aria-1',
    })
    fake.setClock({ advanceMs: 25_000 })
    const queue = new MemoryQueue()
    queue.send(message(job))
    await runUntilQuiet(queue, job)
    expect(providerJobs(job)).toHaveLength(1)
    expect(job.attempt).toMatchObject({ status: 'finished', adopted: true, reconciled: false })
  })

  it('429 with Retry-After is retried no sooner than the provider asked', async () => {
    const job = new MemoryJob(randomUUID())
    fake.script({
      match: { method: 'POST' },
      fault: { kind: 'status', status: 429, retryAfter: '7' },
      times: 1,
    })
    const queue = new MemoryQueue()
    queue.send(message(job))
    await runUntilQuiet(queue, job)
    expect(queue.retryDelays[0]).toBeGreaterThanOrEqual(7)
    expect(job.attempt.status).toBe('finished')
    expect(providerJobs(job)).toHaveLength(1)
  })

  it('a connection dropped after the create: outcome unknown, then the reconciler adopts the job (reconciled)', async () => {
    const job = new MemoryJob(randomUUID())
    fake.script({ match: { method: 'POST' }, fault: { kind: 'drop_after_create' }, times: 1 })
    const queue = new MemoryQueue()
    queue.send(message(job))
    await queue.deliver(job)
    expect(job.attempt.status).toBe('outcome_unknown')
    expect(queue.pending).toEqual([]) // acknowledged: never resent blindly
    await job.reconcile()
    expect(job.attempt).toMatchObject({ status: 'submitted', reconciled: true })
    queue.send({ ...message(job), kind: 'poll' })
    await runUntilQuiet(queue, job)
    expect(job.attempt.status).toBe('finished')
    expect(providerJobs(job)).toHaveLength(1)
  })

  it('a provider down through every retry: dead-letter queue, then the reconciler finds nothing and gives up cleanly', async () => {
    const job = new MemoryJob(randomUUID())
    fake.script({ match: {}, fault: { kind: 'status', status: 503 } })
    const queue = new MemoryQueue()
    queue.send(message(job))
    await runUntilQuiet(queue, job)
    expect(queue.dlq).toHaveLength(1)
    expect(queue.retryDelays).toEqual([2, 4, 8, 16])
    await handleDeadLetter(
      { body: queue.dlq[0]!.body, attempts: 1, ack: () => {}, retry: () => {} },
      { port: () => job },
    )
    // Submitting when the budget ran out: a create may have landed, so it is reconciled first.
    expect(job.attempt.status).toBe('outcome_unknown')
    const at = fake.now()
    fake.reset() // the provider is back
    fake.setClock({ mode: 'manual', now: at + 31_000 })
    await job.reconcile()
    expect(job.attempt.status).toBe('abandoned')
    expect(job.attempt.detail).toMatch(/nothing was run or billed/)
    expect(providerJobs(job)).toHaveLength(0)
  })

  it("a job the provider failed, and a key it refuses, end the attempt with the provider's code", async () => {
    const a = new MemoryJob(randomUUID())
    fake.script({ match: { metadataValue: a.jobId }, fault: { kind: 'quota_exhausted' }, times: 1 })
    const qa = new MemoryQueue()
    qa.send(message(a))
    await runUntilQuiet(qa, a)
    expect(a.attempt.outcome).toMatchObject({ kind: 'failed', code: 'QuotaExhaustedError' })
    const b = new MemoryJob(randomUUID())
    fake.script({ match: { method: 'GET' }, fault: { kind: 'status', status: 401 }, times: 1 })
    const qb = new MemoryQueue()
    qb.send(message(b))
    await runUntilQuiet(qb, b)
    expect(b.attempt.outcome).toMatchObject({ kind: 'failed', code: 'provider_credentials' })
    expect(providerJobs(b)).toHaveLength(0)
  })

  it('a QPU target the provider silently ran on its simulator is reported as such', async () => {
    const job = new MemoryJob(randomUUID())
    fake.script({ match: { metadataValue: job.jobId }, fault: { kind: 'run_on_simulator' }, times: 1 })
    const queue = new MemoryQueue()
    queue.send(message(job))
    await runUntilQuiet(queue, job)
    expect(job.attempt.outcome).toMatchObject({
      kind: 'completed',
      executedOn: 'simulator',
      target: 'simulator',
    })
  })
})
