/**
 * The product's crypto primitives timed inside workerd (the production runtime): access-token
 * signing and verification per JWS algorithm (and the token's length), the power-on self-test
 * suite (cold: the isolate's first run, JIT cold; then warm), and Argon2id at the production
 * parameters. Figures are wall times of requests running the operations, seen from this process:
 * per token, the difference between a request doing 2N and one doing N, divided by N (the request
 * overhead cancels out); otherwise a request's time minus an empty request's. Requests run one at
 * a time, each figure the median of three; the worker runs alone in its own workerd (Miniflare).
 * docs/crypto.md quotes these.
 *
 *   npx tsx bench/crypto-timings.ts          # N_TOKENS=20 N_ARGON2=5
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from 'miniflare'
import { bundleWorker } from '../scripts/workers.ts'
import { JWS_ALGORITHMS } from '../shared/crypto/jws-algorithms.ts'
import { CURRENT_PASSWORD_PARAMS } from '../shared/crypto/password.ts'
import { median, round } from './bench-support.ts'

const N_TOKENS = Number(process.env.N_TOKENS ?? 20)
const N_ARGON2 = Number(process.env.N_ARGON2 ?? 5)

async function timed(url: string): Promise<{ ms: number; body: Record<string, unknown> }> {
  const start = performance.now()
  const res = await fetch(url)
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>
  const ms = performance.now() - start
  if (res.status !== 200) throw new Error(`${url}: status ${res.status}`)
  return { ms, body }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-crypto-'))
  const outfile = path.join(dataDir, 'index.js')
  await bundleWorker(path.join(import.meta.dirname, 'crypto-timings.worker.ts'), outfile)
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
          script: readFileSync(outfile, 'utf8'),
          compatibilityDate: '2026-10-01',
          compatibilityFlags: ['nodejs_compat'],
        },
      ],
    }),
  )
  try {
    const base = (await mf.ready).origin
    const medianOf3 = async (url: string) => {
      const samples: number[] = []
      for (let i = 0; i < 3; i++) samples.push((await timed(url)).ms)
      return median(samples)
    }
    // The first request of the isolate runs the self-tests cold; everything after runs warm.
    const coldSelfTest = (await timed(`${base}/self-test`)).ms
    const overhead = await medianOf3(`${base}/noop`)
    const warmSelfTest = (await medianOf3(`${base}/self-test`)) - overhead

    const rows: string[] = []
    for (const alg of JWS_ALGORITHMS) {
      await timed(`${base}/sign?alg=${alg}&n=2`) // key generation, self-tests of the algorithm, JIT
      await timed(`${base}/verify?alg=${alg}&n=2`)
      // EdDSA is ~100 times cheaper: larger batches keep its figure above the noise.
      const n = alg === 'EdDSA' ? 20 * N_TOKENS : N_TOKENS
      const perOp = async (op: 'sign' | 'verify') => {
        const once = await medianOf3(`${base}/${op}?alg=${alg}&n=${n}`)
        const twice = await medianOf3(`${base}/${op}?alg=${alg}&n=${2 * n}`)
        return `${round((twice - once) / n, 3)} ms`
      }
      const { length } = (await timed(`${base}/sign?alg=${alg}&n=1`)).body
      rows.push(`| ${alg} | ${await perOp('sign')} | ${await perOp('verify')} | ${length} chars |`)
    }

    await timed(`${base}/argon2?op=verify`) // the stored hash, and the Argon2id self-test
    const hashes: number[] = []
    const verifies: number[] = []
    for (let i = 0; i < N_ARGON2; i++) {
      hashes.push((await timed(`${base}/argon2?op=hash`)).ms - overhead)
      verifies.push((await timed(`${base}/argon2?op=verify`)).ms - overhead)
    }

    const load = os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')
    console.log(
      `\n${os.cpus().length} CPUs, load ${load}; token figures from batches of ${N_TOKENS} and ${2 * N_TOKENS} (EdDSA: 20 times more)\n`,
    )
    console.log('| algorithm | signAccessToken | verifyAccessToken | token length |')
    console.log('|---|---|---|---|')
    for (const row of rows) console.log(row)
    const { m, t, p } = CURRENT_PASSWORD_PARAMS
    console.log('\n| measurement | result |')
    console.log('|---|---|')
    console.log(`| self-tests, every algorithm, cold isolate | ${round(coldSelfTest, 0)} ms |`)
    console.log(`| self-tests, every algorithm, warm (median of 3) | ${round(warmSelfTest, 0)} ms |`)
    console.log(
      `| Argon2id m=${m} KiB t=${t} p=${p}: hash (median of ${N_ARGON2}) | ${round(median(hashes), 0)} ms |`,
    )
    console.log(`| Argon2id: verify (median of ${N_ARGON2}) | ${round(median(verifies), 0)} ms |`)
  } finally {
    await mf.dispose()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
