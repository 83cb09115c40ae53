/**
 * Audit-log benchmark (docs/benchmarks.md, "Audit log and trust pages"):
 * 1. appends per second into one log, batched: N appends driven over the object's RPC from a worker
 *    in the same workerd (bench/audit-log-bench.worker.ts), 1 and 64 in flight;
 * 2. proof generation latency (inclusion of a random entry, consistency from a random size, both
 *    against the latest signed checkpoint) at 10^3, 10^5 and 10^6 entries, the request overhead
 *    (a no-op request) subtracted;
 * 3. the public pages' latency through the product's gateway (plain workerd, as production):
 *    /trust/conformance and /trust/entropy, JSON and HTML, sequential, p50/p99.
 *
 *   npx tsx bench/audit-log.ts                     # SIZES=1000,100000,1000000 PROOFS=200 PAGES=300
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from 'miniflare'
import { localLogSigningKeys, startStack } from '../scripts/stack.ts'
import { bundleWorker } from '../scripts/workers.ts'
import { median, round } from './bench-support.ts'

const SIZES = (process.env.SIZES ?? '1000,100000,1000000').split(',').map(Number)
const PROOFS = Number(process.env.PROOFS ?? 200)
const PAGES = Number(process.env.PAGES ?? 300)
const FILL_CHUNK = 20_000

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

async function timed(url: string, init?: RequestInit): Promise<number> {
  const start = performance.now()
  const res = await fetch(url, init)
  await res.arrayBuffer()
  if (!res.ok) throw new Error(`${url}: ${res.status}`)
  return performance.now() - start
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-audit-'))
  const stops: (() => Promise<void>)[] = []
  const results: Record<string, unknown> = {
    taken: new Date().toISOString(),
    machine: `${os.cpus().length} cores, shared`,
  }
  try {
    const outfile = path.join(dataDir, 'bench-worker', 'index.js')
    await bundleWorker(path.join(import.meta.dirname, 'audit-log-bench.worker.ts'), outfile)
    const mf = new Miniflare(
      convertV4MiniflareOptions({
        host: '127.0.0.1',
        port: 0,
        log: new Log(LogLevel.WARN),
        cf: false,
        workers: [
          {
            name: 'bench',
            modules: true,
            scriptPath: outfile,
            modulesRoot: path.dirname(outfile),
            compatibilityDate: '2026-10-01',
            compatibilityFlags: ['nodejs_compat'],
            bindings: {
              LOG_SIGNING_KEYS: await localLogSigningKeys(dataDir),
              AUDIT_CHECKPOINT_INTERVAL_MS: '3600000',
            },
            durableObjects: { AUDIT_LOG: { className: 'AuditLog', useSQLite: true } },
          },
        ],
      }),
    )
    stops.push(() => mf.dispose())
    const base = (await mf.ready).origin

    // 1. Appends per second.
    const appends: Record<string, number> = {}
    for (const inflight of [1, 64, 256]) {
      const n = inflight === 1 ? 2_000 : 20_000
      await fetch(`${base}/fill?log=rate-${inflight}&n=100&inflight=${inflight}`)
      const ms = await timed(`${base}/fill?log=rate-${inflight}&n=${n}&inflight=${inflight}`)
      appends[`inflight_${inflight}`] = Math.round((n / ms) * 1000)
    }
    results.appends_per_second = appends

    // 2. Proof latency by log size.
    const noops: number[] = []
    for (let i = 0; i < 50; i++) noops.push(await timed(`${base}/noop`))
    const overhead = median(noops)
    const proofs: Record<string, unknown>[] = []
    let filled = 0
    const fillStart = performance.now()
    for (const size of SIZES) {
      while (filled < size) {
        const chunk = Math.min(FILL_CHUNK, size - filled)
        await timed(`${base}/fill?log=proofs&n=${chunk}&inflight=256`)
        filled += chunk
      }
      await timed(`${base}/checkpoint?log=proofs`)
      const inclusion: number[] = []
      const consistency: number[] = []
      for (let i = 0; i < PROOFS; i++) {
        inclusion.push(
          (await timed(`${base}/proof?log=proofs&index=${Math.floor(Math.random() * size)}`)) - overhead,
        )
        consistency.push(
          (await timed(`${base}/consistency?log=proofs&first=${1 + Math.floor(Math.random() * size)}`)) -
            overhead,
        )
      }
      proofs.push({
        entries: size,
        inclusion_p50_ms: round(percentile(inclusion, 50)),
        inclusion_p99_ms: round(percentile(inclusion, 99)),
        consistency_p50_ms: round(percentile(consistency, 50)),
        consistency_p99_ms: round(percentile(consistency, 99)),
      })
      console.error(`  ${size} entries filled after ${round((performance.now() - fillStart) / 1000, 1)} s`)
    }
    results.request_overhead_ms = round(overhead)
    results.proofs = proofs

    // 3. Public pages through the gateway.
    const stack = await startStack({
      host: '127.0.0.1',
      port: 0,
      dataDir: path.join(dataDir, 'stack'),
      runtime: 'workerd',
    })
    stops.push(() => stack.stop())
    const pages: Record<string, unknown>[] = []
    for (const [page, accept] of [
      ['/trust/conformance', 'application/json'],
      ['/trust/conformance', 'text/html'],
      ['/trust/entropy', 'application/json'],
    ] as const) {
      const first = await timed(`${stack.baseUrl}${page}`, { headers: { accept } })
      const samples: number[] = []
      for (let i = 0; i < PAGES; i++)
        samples.push(await timed(`${stack.baseUrl}${page}`, { headers: { accept } }))
      pages.push({
        page,
        accept,
        first_ms: round(first),
        p50_ms: round(percentile(samples, 50)),
        p99_ms: round(percentile(samples, 99)),
      })
    }
    results.pages = pages
    console.log(JSON.stringify(results, null, 2))
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
