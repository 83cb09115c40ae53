/**
 * The run queue inside the reasoning worker: the ReasoningRunQueue object alone (order, cap,
 * cancel, promotion, tombstones, the alarm telling promoted jobs), then with real ReasoningJob
 * objects. Jobs are held running without timers: live managed_qpu jobs wait in `awaiting_qpu`
 * because the QPU queue is a list nobody delivers from, and end when the test reports their QPU
 * unreachable (the dead-letter path). Crashes are storage states left as a cut-off step leaves
 * them, then a fresh instance (abortAllDurableObjects) and its alarm.
 */
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test'
import { afterEach, beforeEach, describe, expect, inject, it, vi } from 'vitest'
import { PLAN_CATALOG_CONFIG } from '../../shared/plans/plan-catalog'
import type {} from '../../test/support/ionq-provider.fixture'
import { isTerminal, type ReasoningJob as JobRecord } from '../reasoning-job/job.schemas'
import type { JobReply } from '../reasoning-job/job-calls'
import type { ReasoningJob } from '../reasoning-job/reasoning-job.do'
import {
  callerOf,
  createJob,
  identityFor,
  installUpstream,
  type JobHandle,
  jobOf,
  jobRequest,
  mutableEnv,
  reasoningEnv,
  runDueNow,
  uninstallUpstream,
  unwrap,
} from '../reasoning-job/reasoning-job.do-fixtures'
import type { ReasoningRunQueue } from './reasoning-run-queue.do'
import { type RunQueuePort, runQueueName } from './run-queue.protocol'

const ionq = inject('ionqProvider')

type QueueStub = DurableObjectStub<ReasoningRunQueue>

function queueStub(name: string): QueueStub {
  const ns = reasoningEnv.REASONING_RUN_QUEUE as unknown as DurableObjectNamespace<ReasoningRunQueue>
  return ns.get(ns.idFromName(name))
}

function queueOf(handle: JobHandle): QueueStub {
  return queueStub(runQueueName(handle.identity.tenantId, handle.identity.mode))
}

/** Inside the queue object, in one turn (its alarm cannot run in between). */
function inQueue<T>(
  stub: QueueStub,
  work: (queue: ReasoningRunQueue, state: DurableObjectState) => Promise<T> | T,
): Promise<T> {
  return runInDurableObject(stub, (instance: ReasoningRunQueue, state) => work(instance, state))
}

type CreatedJob = Awaited<ReturnType<typeof createJob>>

describe('the run queue alone', () => {
  const ids = (n: number) => Array.from({ length: n }, () => crypto.randomUUID())
  /** Holders no job lives in: told of a slot, they answer 'finished'. */
  const holder = (jobId: string) => `nobody/${jobId}`

  it('first come first served, at most `slots` running; asking again answers where a job stands', async () => {
    const stub = queueStub(`${crypto.randomUUID()}/test`)
    const [a, b, c, d] = ids(4) as [string, string, string, string]
    const replies = await inQueue(stub, async (q) => {
      const out = []
      for (const id of [a, b, c, d]) out.push(await q.enqueue({ jobId: id, holder: holder(id), slots: 2 }))
      out.push(await q.enqueue({ jobId: c, holder: holder(c), slots: 2 }))
      return { out, positions: await q.positions() }
    })
    expect(replies.out).toEqual([
      { state: 'running' },
      { state: 'running' },
      { state: 'waiting', position: 1 },
      { state: 'waiting', position: 2 },
      { state: 'waiting', position: 1 },
    ])
    expect(replies.positions).toEqual({ [c]: 1, [d]: 2 })
    // The callers learnt their slots from the answers: nobody is due to be told now.
    const contacts = await inQueue(stub, (q) => q.store.dueContacts(Date.now()))
    expect(contacts).toEqual([])
  })

  it('a waiting job that leaves gives its place up; a late enqueue of it does not queue it again', async () => {
    const stub = queueStub(`${crypto.randomUUID()}/live`)
    const [a, b, c] = ids(3) as [string, string, string]
    const after = await inQueue(stub, async (q) => {
      for (const id of [a, b, c]) await q.enqueue({ jobId: id, holder: holder(id), slots: 1 })
      await q.release(b)
      return {
        positions: await q.positions(),
        again: await q.enqueue({ jobId: b, holder: holder(b), slots: 1 }),
        running: q.store.entries('running').map((e) => e.job_id),
      }
    })
    expect(after.positions).toEqual({ [c]: 1 })
    expect(after.again).toEqual({ state: 'released' })
    expect(after.running).toEqual([a])
    // A release of a job the queue never saw (its enqueue lost) leaves a tombstone too.
    const stranger = crypto.randomUUID()
    const late = await inQueue(stub, async (q) => {
      await q.release(stranger)
      return q.enqueue({ jobId: stranger, holder: holder(stranger), slots: 1 })
    })
    expect(late).toEqual({ state: 'released' })
  })

  it('a running job that ends promotes the next, due to be told at once; more slots start more', async () => {
    const stub = queueStub(`${crypto.randomUUID()}/test`)
    const [a, b, c, d] = ids(4) as [string, string, string, string]
    const state = await inQueue(stub, async (q) => {
      for (const id of [a, b, c, d]) await q.enqueue({ jobId: id, holder: holder(id), slots: 1 })
      await q.release(a)
      const promoted = {
        running: q.store.entries('running').map((e) => e.job_id),
        due: q.store.dueContacts(Date.now()),
      }
      // The plan was upgraded: the next job to ask says so, and the waiting ones start.
      const e = crypto.randomUUID()
      const reply = await q.enqueue({ jobId: e, holder: holder(e), slots: 4 })
      return { promoted, reply, running: q.store.entries('running').map((x) => x.job_id) }
    })
    expect(state.promoted.running).toEqual([b])
    expect(state.promoted.due.map((x) => x.job_id)).toEqual([b])
    expect(state.reply).toEqual({ state: 'running' })
    expect(state.running).toEqual([b, c, d, expect.any(String)])
  })

  it("the alarm tells promoted jobs; a job that no longer exists answers 'finished' and frees its slot", async () => {
    const stub = queueStub(`${crypto.randomUUID()}/test`)
    const [a, b, c] = ids(3) as [string, string, string]
    await inQueue(stub, async (q) => {
      for (const id of [a, b, c]) await q.enqueue({ jobId: id, holder: holder(id), slots: 1 })
      await q.release(a)
    })
    // b is due to be told; its object holds no job, so it is freed and c is promoted and told next.
    await runDurableObjectAlarm(stub)
    await vi.waitFor(
      async () => {
        const left = await inQueue(stub, (q) => ({
          waiting: q.store.entries('waiting').length,
          running: q.store.entries('running').length,
        }))
        expect(left).toEqual({ waiting: 0, running: 0 })
      },
      { timeout: 10_000, interval: 50 },
    )
  })
})

// --- with jobs ------------------------------------------------------------------------------------

/** Two slots on Enterprise for these tests (the catalog's own numbers are docs/plans.md's). */
const SLOTS = 2

beforeEach(() => {
  mutableEnv.PLAN_CATALOG = JSON.stringify({
    ...PLAN_CATALOG_CONFIG,
    plans: PLAN_CATALOG_CONFIG.plans.map((p) =>
      p.id === 'enterprise' ? { ...p, reasoningConcurrency: SLOTS } : p,
    ),
  })
  // Real hardware that never answers: the QPU queue is a list nobody delivers from.
  mutableEnv.QPU_QUEUE = { async send() {} }
  mutableEnv.QPU_IONQ_BASE_URL = ionq.baseUrl
  mutableEnv.QPU_IONQ_API_KEY = ionq.keys.managed
  installUpstream([{ kind: 'answer' }])
})

afterEach(() => {
  uninstallUpstream()
  for (const name of ['PLAN_CATALOG', 'QPU_QUEUE', 'QPU_IONQ_BASE_URL', 'QPU_IONQ_API_KEY']) {
    delete mutableEnv[name]
  }
})

const held = () => jobRequest({ product: 'managed_qpu' })

/**
 * Runs the job's alarm until it waits for the QPU: it holds its slot until the test ends it. The
 * runtime runs the same alarm on its own meanwhile (a run already under way is waited for).
 */
async function driveToQpu(handle: JobHandle): Promise<JobRecord> {
  let job = await jobOf(handle)
  await vi.waitFor(
    async () => {
      await runDueNow(handle)
      job = await jobOf(handle)
      expect(job.status === 'awaiting_qpu' || isTerminal(job.status), job.status).toBe(true)
    },
    { timeout: 20_000, interval: 50 },
  )
  return job
}

/** The QPU could not be used (what the dead-letter consumer reports): the job ends classical_fallback. */
async function endOnClassical(handle: JobHandle): Promise<void> {
  await handle.stub.qpuUnreachable('attempt-1', 'the test ends the QPU attempt')
}

async function slotOf(handle: JobHandle): Promise<string | null> {
  return runInDurableObject(handle.stub, (instance: ReasoningJob) => instance.store.runSlot())
}

/** Each job's alarm until it is terminal and its slot given back; the queue's alarm meanwhile. */
async function driveAllToEnd(handles: JobHandle[]): Promise<JobRecord[]> {
  const jobs: JobRecord[] = []
  for (const handle of handles) {
    let job = await jobOf(handle)
    await vi.waitFor(
      async () => {
        if (job.status === 'awaiting_qpu') await endOnClassical(handle)
        await runDueNow(handle)
        await runDurableObjectAlarm(queueOf(handle))
        job = await jobOf(handle)
        expect(isTerminal(job.status), `job ${handle.jobId} is ${job.status}`).toBe(true)
        expect(await slotOf(handle)).toBe('released')
      },
      { timeout: 20_000, interval: 50 },
    )
    jobs.push(job)
  }
  return jobs
}

describe('reasoning jobs in the run queue', { timeout: 60_000 }, () => {
  it('jobs beyond the slots wait queued with their place; DELETE cancels one; an end starts the next', async () => {
    const identity = await identityFor('live', 'enterprise')
    const handles: CreatedJob[] = []
    for (let i = 0; i < SLOTS + 2; i++) handles.push(await createJob(identity, held()))
    const [first, second, third, fourth] = handles as [CreatedJob, CreatedJob, CreatedJob, CreatedJob]
    // The 202 answers: the first SLOTS have slots (no place), the others their place in line.
    expect(handles.map((h) => unwrap(h.reply).queue_position)).toEqual([undefined, undefined, 1, 2])
    for (const h of [first, second]) expect((await driveToQpu(h)).status).toBe('awaiting_qpu')
    // Waiting jobs do not start, however often their alarm runs (each run asks the queue again).
    await runDueNow(third)
    await runDueNow(fourth)
    expect(await jobOf(third)).toMatchObject({
      status: 'queued',
      queue_position: 1,
      outcome_state: 'not_started',
    })
    expect(await jobOf(fourth)).toMatchObject({ status: 'queued', queue_position: 2 })

    // DELETE of a waiting job: cancelled at once, and the job behind it moves up before the answer.
    const cancelled = unwrap((await third.stub.remove(callerOf(identity))) as JobReply)
    expect(cancelled).toMatchObject({ status: 'cancelled', outcome_state: 'not_started' })
    expect(cancelled).not.toHaveProperty('queue_position')
    expect((await jobOf(fourth)).queue_position).toBe(1)
    const queue = queueOf(first) as unknown as RunQueuePort
    expect(await queue.positions()).toEqual({ [fourth.jobId]: 1 })

    // The first job ends: its slot goes to the fourth, which starts on its own (the queue tells it).
    await endOnClassical(first)
    expect((await jobOf(first)).status).toBe('classical_fallback')
    await runDueNow(first)
    await runDurableObjectAlarm(queueOf(first))
    await vi.waitFor(async () => expect(await slotOf(fourth)).toBe('admitted'), {
      timeout: 10_000,
      interval: 50,
    })
    const started = await driveToQpu(fourth)
    expect(started.status).toBe('awaiting_qpu')
    expect(started).not.toHaveProperty('queue_position')

    // All end; every slot is given back.
    const ended = await driveAllToEnd(handles)
    expect(ended.map((j) => j.status)).toEqual([
      'classical_fallback',
      'classical_fallback',
      'cancelled',
      'classical_fallback',
    ])
    const left = await inQueue(queueOf(first), (q) => ({
      waiting: q.store.entries('waiting').length,
      running: q.store.entries('running').length,
    }))
    expect(left).toEqual({ waiting: 0, running: 0 })
  })

  it('a promotion stored but never told (the queue crashed) is told by the restarted queue’s alarm', async () => {
    const identity = await identityFor('live', 'enterprise')
    const handles: JobHandle[] = []
    for (let i = 0; i < SLOTS + 1; i++) handles.push(await createJob(identity, held()))
    const [first, second, waiting] = handles as [JobHandle, JobHandle, JobHandle]
    expect(await slotOf(waiting)).toBe('waiting')
    // Nothing in flight when the objects go: the running jobs wait for the QPU.
    for (const h of [first, second]) await driveToQpu(h)
    // As a crash right after the promotion leaves it: the slot is the waiting job's in the queue's
    // storage, its contact due, nobody told it, and the object is gone.
    await inQueue(queueOf(first), async (q, state) => {
      await q.release(first.jobId)
      await state.storage.deleteAlarm()
    })
    await runInDurableObject(first.stub, (instance: ReasoningJob) => {
      instance.store.setRunSlot('released', Date.now())
    })
    await abortAllDurableObjects()
    // Stubs do not outlive their objects: new ones reach new instances, built from storage.
    const revived = handles.map((h) => ({ ...h, stub: reasoningEnv.REASONING_JOB.get(h.stub.id) }))
    const job = revived[2]!
    expect(await slotOf(job)).toBe('waiting')
    // The restarted queue re-arms its alarm in its constructor; the alarm tells the job.
    const queue = queueOf(first)
    await vi.waitFor(
      async () => {
        await runDurableObjectAlarm(queue)
        expect(await slotOf(job)).toBe('admitted')
      },
      { timeout: 10_000, interval: 100 },
    )
    expect((await driveToQpu(job)).status).toBe('awaiting_qpu')
    await driveAllToEnd(revived)
  })

  it('the queue unreachable: a create is still accepted and asks again later; a cancel’s release is retried', async () => {
    const identity = await identityFor('live', 'enterprise')
    const binding = mutableEnv.REASONING_RUN_QUEUE
    const down = {
      idFromName: (name: string) => (binding as DurableObjectNamespace).idFromName(name),
      get: () => ({
        enqueue: async () => Promise.reject(new Error('queue down')),
        release: async () => Promise.reject(new Error('queue down')),
        position: async () => Promise.reject(new Error('queue down')),
      }),
    }
    const handles: JobHandle[] = []
    for (let i = 0; i < SLOTS; i++) handles.push(await createJob(identity, held()))
    mutableEnv.REASONING_RUN_QUEUE = down
    let late: CreatedJob
    try {
      late = await createJob(identity, held())
      // Accepted (the job is stored) without a place: it has not reached the queue yet.
      expect(unwrap(late.reply)).toMatchObject({ status: 'queued' })
      expect(await slotOf(late)).toBeNull()
    } finally {
      mutableEnv.REASONING_RUN_QUEUE = binding
    }
    // Its due `advance` asks again: it waits behind the two running jobs.
    await runDueNow(late)
    expect(await jobOf(late)).toMatchObject({ status: 'queued', queue_position: 1 })

    // Cancelled while the queue is down: cancelled all the same; the release stays due.
    mutableEnv.REASONING_RUN_QUEUE = down
    try {
      const reply = (await late.stub.remove(callerOf(identity))) as JobReply
      expect(unwrap(reply).status).toBe('cancelled')
    } finally {
      mutableEnv.REASONING_RUN_QUEUE = binding
    }
    expect(await (queueOf(late) as unknown as RunQueuePort).positions()).toEqual({ [late.jobId]: 1 })
    await runDueNow(late)
    expect(await slotOf(late)).toBe('released')
    expect(await (queueOf(late) as unknown as RunQueuePort).positions()).toEqual({})
    await driveAllToEnd(handles)
  })
})
