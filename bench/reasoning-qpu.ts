/**
 * Real-hardware reasoning job latency: create → completed of `managed_qpu` jobs against the fake
 * IonQ v0.3 (test/fakes/ionq-provider.ts, in this process, with zero queue time and a lifecycle of
 * zero: a provider job is `completed` at its first read), beside its floor measured in the same run
 * on the same stack: the same job as `simulation_cloud` (candidates, scoring, the QAOA angle search
 * and shots on the product's simulator: everything but the reservation, the queue hop and the
 * provider's HTTP API).
 *
 * The stack runs on Miniflare (scripts/stack.ts, embedded PGlite), the only local runtime with a
 * queue broker (plain workerd has none: scripts/workerd-runtime.ts), so its figures include
 * Miniflare's entry worker and outbound interceptor and are not comparable with
 * bench/reasoning-jobs.ts (plain workerd, test key). As in test/e2e/reasoning-qpu.e2e.test.ts, the
 * jobs use a live key of an enterprise workspace (`real_qpu`; test keys never reach a provider)
 * with svc-hive on a local OpenAI-compatible fake (test/fakes/openai-upstream.ts); the platform's
 * managed IonQ account is the fake (QPU_IONQ_*). PLAN_CATALOG lifts per-minute limits and the
 * allowances (real_qpu included) out of the way; the checks, reservations and metering still run.
 *
 * JOBS jobs per product at each concurrency in CONCURRENCY (c=1: the products alternate job by job;
 * c>1: each product in its own block, `c` clients each creating and watching one job at a time).
 * Every job is read every POLL_MS until terminal, noting when each status was first seen; a job
 * must end `completed`, a managed_qpu job with `real_request_status: executed` from exactly one
 * provider create, or the run stops. The breakdown of a managed_qpu job joins those client
 * observations with what the fake provider recorded (same clock, same process):
 *
 *   sent → awaiting_qpu seen → provider create received → provider results read → completed seen
 *
 *   flock /tmp/svc-e2e.lock timeout 420 npx tsx bench/reasoning-qpu.ts   # JOBS=40 CONCURRENCY=1,4 POLL_MS=5
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { LogLevel } from 'miniflare'
import WebSocket from 'ws'
import { ensureWorkspace } from '../scripts/db/seed.ts'
import { startStack } from '../scripts/stack.ts'
import { generateApiKey } from '../shared/auth/api-keys.ts'
import { type DatabaseEnv, openDatabase, useWebSocketConstructor } from '../shared/db/client.ts'
import { type FakeIonq, startFakeIonq } from '../test/fakes/ionq-provider.ts'
import { startFakeOpenAIUpstream } from '../test/fakes/openai-upstream.ts'
import {
  BENCH_DIR,
  benchPlanCatalog,
  epochMs,
  machineBusySeconds,
  median,
  percentile,
  round,
  watchJob,
} from './bench-support.ts'

const JOBS = Number(process.env.JOBS ?? 40)
const CONCURRENCY = (process.env.CONCURRENCY ?? '1,4').split(',').map(Number)
const POLL_MS = Number(process.env.POLL_MS ?? 5)
const WARMUP_JOBS = 3
const IONQ_KEY = 'ionq-bench-managed-account-key'
const QPU_TARGET = 'qpu.aria-1'

type Product = 'simulation_cloud' | 'managed_qpu'

interface JobTiming {
  product: Product
  concurrency: number
  id: string
  /** Client clock, epoch ms. */
  sent: number
  accepted: number
  completedSeen: number
  /** Server clock (the job's own fields), epoch ms. */
  createdAt: number
  completedAt: number
  /** managed_qpu only: first read seeing awaiting_qpu, the fake provider's create and results requests. */
  awaitingSeen?: number
  providerCreate?: number
  providerResults?: number
  /** c=1 only (unambiguous there): the consumer's metadata lookup just before the create. */
  providerLookup?: number
}

/** Joins a finished managed_qpu job with what the fake provider received for it; checks it ran once. */
function providerSide(ionq: FakeIonq, jobId: string): { create: number; results: number; lookup?: number } {
  const creates = ionq.requests.filter(
    (r) =>
      r.method === 'POST' &&
      r.path === '/v0.3/jobs' &&
      (r.body as { metadata?: { svc_job_id?: string } } | null)?.metadata?.svc_job_id === jobId,
  )
  const jobs = ionq.jobs.filter((j) => j.metadata.svc_job_id === jobId)
  if (creates.length !== 1 || jobs.length !== 1)
    throw new Error(`job ${jobId}: ${creates.length} provider creates, ${jobs.length} provider jobs`)
  const results = ionq.requests.filter(
    (r) => r.method === 'GET' && r.path === `/v0.3/jobs/${jobs[0]!.id}/results`,
  )
  if (results.length !== 1) throw new Error(`job ${jobId}: ${results.length} results reads`)
  const before = ionq.requests.slice(0, ionq.requests.indexOf(creates[0]!))
  const lookup = before.findLast((r) => r.method === 'GET' && r.path.startsWith('/v0.3/jobs?'))
  return { create: creates[0]!.at, results: results[0]!.at, ...(lookup ? { lookup: lookup.at } : {}) }
}

/** p50/p90/p99 of the finite values; `n` says how many (a status shorter than a poll can be missed). */
function summary(all: readonly number[]) {
  const values = all.filter(Number.isFinite)
  return {
    n: values.length,
    p50_ms: round(median(values), 1),
    p90_ms: round(percentile(values, 90), 1),
    p99_ms: round(percentile(values, 99), 1),
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-reasoning-qpu-'))
  const upstream = await startFakeOpenAIUpstream({ apiKey: null })
  const ionq = await startFakeIonq({
    keys: { [IONQ_KEY]: { qpu: true, queueMs: 0 } },
    lifecycle: { simulator: [0, 0, 0], qpu: [0, 0, 0] },
  })
  const stack = await startStack({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    runtime: 'miniflare',
    logLevel: LogLevel.WARN,
    bindings: {
      PLAN_CATALOG: benchPlanCatalog(),
      MODEL_PROVIDERS: JSON.stringify({
        version: 1,
        providers: [
          {
            id: 'bench',
            kind: 'openai-compatible',
            baseUrl: upstream.baseUrl,
            models: { 'svc-hive': 'fake-hive' },
          },
        ],
      }),
      QPU_IONQ_BASE_URL: ionq.baseUrl,
      QPU_IONQ_API_KEY: IONQ_KEY,
      QPU_IONQ_TARGET: QPU_TARGET,
    },
  })
  try {
    // An enterprise workspace (real_qpu) with a live key, through the stack's database bridge.
    useWebSocketConstructor(WebSocket)
    const { database } = JSON.parse(readFileSync(path.join(dataDir, 'runtime.json'), 'utf8')) as {
      database: DatabaseEnv
    }
    const liveKey = generateApiKey('live')
    const db = openDatabase(database, { max: 1 })
    try {
      await ensureWorkspace(db.db, {
        tenantName: 'Reasoning QPU benchmark',
        planId: 'enterprise',
        ownerEmail: `bench-qpu-${crypto.randomUUID().slice(0, 8)}@example.test`,
        keys: [{ name: 'bench live', key: liveKey }],
      })
    } finally {
      await db.close()
    }

    const jobsUrl = `${stack.baseUrl}/svc/quantum-reasoning/jobs`
    const auth = { authorization: `Bearer ${liveKey}` }
    let sequence = 0
    const run = async (product: Product, concurrency: number): Promise<JobTiming> => {
      const sent = epochMs()
      const res = await fetch(jobsUrl, {
        method: 'POST',
        headers: {
          ...auth,
          'content-type': 'application/json',
          'idempotency-key': `bench-${crypto.randomUUID()}`,
        },
        body: JSON.stringify({
          prompt: `Which is larger, 2^10 or 10^3? (${sequence++})`,
          model: 'svc-hive',
          product,
        }),
      })
      const text = await res.text()
      const accepted = epochMs()
      if (res.status !== 202) throw new Error(`create ${product}: ${res.status} ${text.slice(0, 300)}`)
      const { id } = (JSON.parse(text) as { job: { id: string } }).job
      const { job, firstSeen } = await watchJob(jobsUrl, auth, id, POLL_MS)
      const expected =
        product === 'managed_qpu'
          ? {
              real_request_status: 'executed',
              used_real_qubits: true,
              selector_backend: `qaoa-xy/ionq:${QPU_TARGET}`,
            }
          : {
              real_request_status: 'not_requested',
              used_real_qubits: false,
              selector_backend: 'qaoa-xy/statevector',
            }
      const wrong = Object.entries({ status: 'completed', ...expected }).filter(([k, v]) => job[k] !== v)
      if (wrong.length) throw new Error(`${product} job ${id} ended ${JSON.stringify(job)}`)
      const timing: JobTiming = {
        product,
        concurrency,
        id,
        sent,
        accepted,
        completedSeen: firstSeen.completed!,
        createdAt: Date.parse(String(job.created_at)),
        completedAt: Date.parse(String(job.completed_at)),
      }
      if (product === 'managed_qpu') {
        const provider = providerSide(ionq, id)
        timing.awaitingSeen = firstSeen.awaiting_qpu
        timing.providerCreate = provider.create
        timing.providerResults = provider.results
        if (concurrency === 1) timing.providerLookup = provider.lookup
      }
      return timing
    }

    // Warm-up: every isolate and object class on both paths, the queue, the pools.
    for (let i = 0; i < WARMUP_JOBS; i++) {
      await run('simulation_cloud', 0)
      await run('managed_qpu', 0)
    }

    const timings: JobTiming[] = []
    const load: { concurrency: number; product: string; machine_busy_cores: number; seconds: number }[] = []
    const block = async (products: readonly Product[], concurrency: number) => {
      const busy0 = machineBusySeconds()
      const t0 = epochMs()
      let left = JOBS * products.length
      let turn = 0
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (left > 0) {
            left--
            timings.push(await run(products[turn++ % products.length]!, concurrency))
          }
        }),
      )
      const seconds = (epochMs() - t0) / 1000
      // All busy CPU of the machine (the stack, this process, the fakes and other sessions), in cores.
      load.push({
        concurrency,
        product: products.join('+'),
        seconds: round(seconds, 1),
        machine_busy_cores: round((machineBusySeconds() - busy0) / seconds, 2),
      })
    }
    for (const c of CONCURRENCY) {
      if (c === 1) await block(['simulation_cloud', 'managed_qpu'], 1)
      else {
        await block(['simulation_cloud'], c)
        await block(['managed_qpu'], c)
      }
    }

    const results = CONCURRENCY.flatMap((c) =>
      (['simulation_cloud', 'managed_qpu'] as const).map((product) => {
        const mine = timings.filter((t) => t.product === product && t.concurrency === c)
        const row: Record<string, unknown> = {
          product,
          concurrency: c,
          jobs: mine.length,
          create_202: summary(mine.map((t) => t.accepted - t.sent)),
          create_to_completed_seen: summary(mine.map((t) => t.completedSeen - t.sent)),
          server_created_to_completed_at: summary(mine.map((t) => t.completedAt - t.createdAt)),
        }
        if (product === 'managed_qpu')
          row.breakdown = {
            sent_to_awaiting_qpu_seen: summary(mine.map((t) => t.awaitingSeen! - t.sent)),
            ...(c === 1
              ? {
                  awaiting_qpu_seen_to_provider_lookup: summary(
                    mine.map((t) => t.providerLookup! - t.awaitingSeen!),
                  ),
                  provider_lookup_to_create: summary(mine.map((t) => t.providerCreate! - t.providerLookup!)),
                }
              : {}),
            awaiting_qpu_seen_to_provider_create: summary(
              mine.map((t) => t.providerCreate! - t.awaitingSeen!),
            ),
            provider_create_to_results_read: summary(mine.map((t) => t.providerResults! - t.providerCreate!)),
            results_read_to_completed_at: summary(mine.map((t) => t.completedAt - t.providerResults!)),
            completed_at_to_completed_seen: summary(mine.map((t) => t.completedSeen - t.completedAt)),
          }
        return row
      }),
    )
    const report = {
      runtime: 'miniflare',
      at: new Date().toISOString(),
      jobs_per_cell: JOBS,
      poll_ms: POLL_MS,
      provider: {
        fake: 'ionq v0.3, in-process',
        target: QPU_TARGET,
        queue_ms: 0,
        lifecycle_ms: { ready: 0, running: 0, completed: 0 },
      },
      load,
      results,
      raw: timings,
    }
    const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)
    const out = path.join(BENCH_DIR, 'results', `reasoning-qpu-${stamp}.json`)
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`)
    console.log(JSON.stringify({ ...report, raw: undefined }, null, 2))
    console.log(`written to ${out}`)
  } finally {
    await stack.stop()
    await ionq.stop()
    await upstream.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
