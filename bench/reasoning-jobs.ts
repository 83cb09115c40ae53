/**
 * Reasoning jobs benchmark, on the product started in-process (scripts/stack.ts startStack on
 * plain workerd, STACK_RUNTIME=miniflare to compare; embedded PGlite), with the development
 * workspace's test key (the simulated model):
 *
 * - creation: POST /svc/quantum-reasoning/jobs, a fresh Idempotency-Key each, at c=1 and c=32 for
 *   SECONDS each: 202s per second, p50/p99, CPU per create (the stack's workerd processes, and this
 *   process, which runs the embedded Postgres). Everything else is refused as an error.
 * - its floor, measured in the same run: GET /svc/quantum-reasoning/jobs/{id} of an existing job at
 *   c=1 and c=32 (the gateway, the API key, the family hop and one RPC to the job's object: the part
 *   of a create that is not the create's own work), and a replay of one key (200: the floor plus
 *   the key lookup in Postgres).
 * - create → completed of a svc-hive test-key job (4 candidates, scoring, the simulated QAOA
 *   selector), JOBS sequential jobs, polled every 5 ms; its floor: one chat completion of svc-hive
 *   on the same key (the job's four candidate calls run in parallel, so one call is the least a job
 *   can take).
 *
 * PLAN_CATALOG lifts the per-minute limits, the allowance and the queue limit out of the way (the
 * full pipeline still runs: plan checks, the RateLimiter's reservation, metering, the index write).
 * Jobs created by the throughput runs complete in the background meanwhile, as they would in use.
 *
 *   flock /tmp/svc-e2e.lock npx tsx bench/reasoning-jobs.ts     # SECONDS=10 JOBS=20
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { LogLevel } from 'miniflare'
import { type StackRuntime, startStack } from '../scripts/stack.ts'
import {
  BENCH_DIR,
  benchPlanCatalog,
  cpuSeconds,
  descendantsNamed,
  machineBusySeconds,
  median,
  percentile,
  round,
  watchJob,
} from './bench-support.ts'

const SECONDS = Number(process.env.SECONDS ?? 10)
const JOBS = Number(process.env.JOBS ?? 20)
const RUNTIME: StackRuntime = process.env.STACK_RUNTIME === 'miniflare' ? 'miniflare' : 'workerd'

interface LoadResult {
  target: string
  concurrency: number
  requests: number
  per_second: number
  p50_ms: number
  p99_ms: number
  product_cpu_us: number
  database_cpu_us: number
  foreign_cores: number
}

/**
 * `concurrency` loops sending `send()` until `seconds` pass; every answer must have `expected`
 * status (anything else stops the run: a benchmark of errors measures nothing).
 */
async function load(
  target: string,
  concurrency: number,
  seconds: number,
  expected: number,
  send: () => Promise<Response>,
  workerd: readonly number[],
): Promise<LoadResult> {
  const latencies: number[] = []
  const cpu0 = cpuSeconds(workerd)
  const self0 = process.cpuUsage()
  const busy0 = machineBusySeconds()
  const start = performance.now()
  const end = start + seconds * 1000
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now()
        const res = await send()
        const body = await res.text()
        if (res.status !== expected) throw new Error(`${target}: ${res.status} ${body.slice(0, 300)}`)
        latencies.push(performance.now() - t)
      }
    }),
  )
  const elapsed = (performance.now() - start) / 1000
  const product = cpuSeconds(workerd) - cpu0
  const self = process.cpuUsage(self0)
  const database = (self.user + self.system) / 1e6
  const foreign = machineBusySeconds() - busy0 - product - database
  const n = latencies.length
  return {
    target,
    concurrency,
    requests: n,
    per_second: round(n / elapsed, 1),
    p50_ms: round(percentile(latencies, 50)),
    p99_ms: round(percentile(latencies, 99)),
    product_cpu_us: Math.round((product / n) * 1e6),
    database_cpu_us: Math.round((database / n) * 1e6),
    foreign_cores: round(Math.max(0, foreign) / elapsed, 2),
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-reasoning-'))
  const before = new Set(descendantsNamed(process.pid, 'workerd'))
  const stack = await startStack({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    runtime: RUNTIME,
    logLevel: LogLevel.WARN,
    bindings: { PLAN_CATALOG: benchPlanCatalog() },
  })
  try {
    const workerd = descendantsNamed(process.pid, 'workerd').filter((p) => !before.has(p))
    const jobs = `${stack.baseUrl}/svc/quantum-reasoning/jobs`
    const auth = { authorization: `Bearer ${stack.credentials.testKey}` }
    const body = (i: number | string) =>
      JSON.stringify({
        prompt: `Which is larger, 2^10 or 10^3? (${i})`,
        model: 'svc-hive',
        product: 'simulation_cloud',
      })
    let sequence = 0
    const create = (key = `bench-${crypto.randomUUID()}`, text = body(sequence++)) =>
      fetch(jobs, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': key },
        body: text,
      })

    // Warm-up: every isolate and object class on the path, the Postgres connection pools.
    const first = (await (await create()).json()) as { job: { id: string } }
    for (let i = 0; i < 20; i++) await (await create()).text()

    // 1. create → completed, on a quiet stack (before the throughput runs fill it with jobs).
    const completion: number[] = []
    for (let i = 0; i < JOBS; i++) {
      const t = performance.now()
      const res = await create()
      if (res.status !== 202) throw new Error(`create: ${res.status} ${await res.text()}`)
      const { job } = (await res.json()) as { job: { id: string } }
      const { job: end } = await watchJob(jobs, auth, job.id, 5)
      if (end.status !== 'completed') throw new Error(`job ${job.id} ended ${end.status}`)
      completion.push(performance.now() - t)
    }
    const chat: number[] = []
    for (let i = 0; i < JOBS; i++) {
      const t = performance.now()
      const res = await fetch(`${stack.baseUrl}/svc/chat/completions`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'svc-hive',
          messages: [{ role: 'user', content: `Which is larger, 2^10 or 10^3? (${i})` }],
          max_tokens: 1024,
          logprobs: true,
        }),
      })
      await res.text()
      if (res.status !== 200) throw new Error(`chat: ${res.status}`)
      chat.push(performance.now() - t)
    }

    // 2. Throughput: the floor and the replay, then creation, c=1 and c=32.
    const replayKey = `bench-replay-${crypto.randomUUID()}`
    const replayBody = body('replay')
    if ((await create(replayKey, replayBody)).status !== 202) throw new Error('replay key: no 202')
    const results: LoadResult[] = []
    for (const c of [1, 32]) {
      results.push(
        await load(
          'floor: GET job',
          c,
          SECONDS,
          200,
          () => fetch(`${jobs}/${first.job.id}`, { headers: auth }),
          workerd,
        ),
      )
      results.push(
        await load('replay: same key (200)', c, SECONDS, 200, () => create(replayKey, replayBody), workerd),
      )
      results.push(await load('create (202)', c, SECONDS, 202, () => create(), workerd))
    }

    const report = {
      runtime: RUNTIME,
      at: new Date().toISOString(),
      throughput: results,
      completion: {
        jobs: JOBS,
        create_to_completed_p50_ms: round(median(completion)),
        create_to_completed_p99_ms: round(percentile(completion, 99)),
        floor_one_chat_completion_p50_ms: round(median(chat)),
        floor_one_chat_completion_p99_ms: round(percentile(chat, 99)),
      },
    }
    const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)
    const out = path.join(BENCH_DIR, 'results', `reasoning-jobs-${stamp}.json`)
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`)
    console.log(JSON.stringify(report, null, 2))
    console.log(`written to ${out}`)
  } finally {
    await stack.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
