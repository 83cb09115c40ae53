/**
 * The product's crypto primitives timed inside workerd (the production runtime): access-token
 * signing and verification per JWS algorithm (and the token's length), inference-receipt signing
 * (a DSSE envelope, ML-DSA-65), the power-on self-test suite (cold: the isolate's first run, JIT
 * cold; then warm), and Argon2id at the production parameters. The same worker runs twice, side by
 * side: with webcrypto_modern_algorithms (ML-DSA on the runtime's WebCrypto, as deployed) and
 * without (the @noble/post-quantum fallback), measured alternately so their ratio holds whatever
 * the machine's load. Figures are wall times of requests running the operations, seen from this process:
 * per token, the difference between a request doing 2N and one doing N, divided by N (the request
 * overhead cancels out); otherwise a request's time minus an empty request's. Requests run one at
 * a time, each figure the median of three; the worker runs alone in its own workerd (Miniflare).
 * docs/crypto.md quotes these.
 *
 *   npx tsx bench/crypto-timings.ts          # N_TOKENS=20 N_ARGON2=5 PORT=0 (and PORT+1)
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

const PORT = Number(process.env.PORT ?? 0)

interface Target {
  label: string
  flags: string[]
  base: string
  coldSelfTest: number
  overhead: number
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(process.env.DATA_DIR ?? os.tmpdir(), 'svc-bench-crypto-'))
  const outfile = path.join(dataDir, 'index.js')
  await bundleWorker(path.join(import.meta.dirname, 'crypto-timings.worker.ts'), outfile)
  const instances: Miniflare[] = []
  const start = async (flags: string[], offset: number) => {
    const mf = new Miniflare(
      convertV4MiniflareOptions({
        host: '127.0.0.1',
        port: PORT === 0 ? 0 : PORT + offset,
        log: new Log(LogLevel.WARN),
        cf: false,
        workers: [
          {
            name: 'bench',
            modules: true,
            script: readFileSync(outfile, 'utf8'),
            compatibilityDate: '2026-10-01',
            compatibilityFlags: flags,
          },
        ],
      }),
    )
    instances.push(mf)
    return (await mf.ready).origin
  }
  try {
    const medianOf3 = async (url: string) => {
      const samples: number[] = []
      for (let i = 0; i < 3; i++) samples.push((await timed(url)).ms)
      return median(samples)
    }
    const targets: Target[] = []
    for (const [offset, flags] of [
      [0, ['nodejs_compat', 'webcrypto_modern_algorithms']],
      [1, ['nodejs_compat']],
    ] as const) {
      const base = await start([...flags], offset)
      // The first request of the isolate runs the self-tests cold; everything after runs warm.
      const cold = await timed(`${base}/self-test`)
      const label = cold.body.implementation === 'webcrypto' ? 'WebCrypto' : 'noble'
      targets.push({
        label,
        flags: [...flags],
        base,
        coldSelfTest: cold.ms,
        overhead: await medianOf3(`${base}/noop`),
      })
    }
    const loads = [os.loadavg()[0]!.toFixed(2)]
    const warmSelfTest = new Map<string, number>()
    for (const t of targets) warmSelfTest.set(t.label, (await medianOf3(`${t.base}/self-test`)) - t.overhead)

    /** ms per operation: a request doing 2n minus one doing n, over n (the request overhead cancels). */
    const perOp = async (t: Target, route: string, n: number) => {
      const once = await medianOf3(`${t.base}${route}&n=${n}`)
      const twice = await medianOf3(`${t.base}${route}&n=${2 * n}`)
      return (twice - once) / n
    }
    const cell = (ms: number) => `${round(ms, 3)} ms`
    const rows: string[] = []
    for (const alg of JWS_ALGORITHMS) {
      const figures: { sign: number; verify: number }[] = []
      for (const t of targets) {
        await timed(`${t.base}/sign?alg=${alg}&n=2`) // key generation, self-tests of the algorithm, JIT
        await timed(`${t.base}/verify?alg=${alg}&n=2`)
        // EdDSA and native ML-DSA are far cheaper: larger batches keep their figures above the noise.
        const n = alg === 'EdDSA' ? 100 * N_TOKENS : t.label === 'WebCrypto' ? 50 * N_TOKENS : N_TOKENS
        figures.push({
          sign: await perOp(t, `/sign?alg=${alg}`, n),
          verify: await perOp(t, `/verify?alg=${alg}`, n),
        })
      }
      const { length } = (await timed(`${targets[0]!.base}/sign?alg=${alg}&n=1`)).body
      rows.push(
        `| ${alg} | ${figures.map((f) => cell(f.sign)).join(' | ')} | ${figures.map((f) => cell(f.verify)).join(' | ')} | ${length} chars |`,
      )
    }
    const receipts: number[] = []
    for (const t of targets) {
      await timed(`${t.base}/receipt?n=2`)
      receipts.push(await perOp(t, '/receipt?', t.label === 'WebCrypto' ? 50 * N_TOKENS : N_TOKENS))
    }
    loads.push(os.loadavg()[0]!.toFixed(2))

    const native = targets[0]!
    await timed(`${native.base}/argon2?op=verify`) // the stored hash, and the Argon2id self-test
    const hashes: number[] = []
    const verifies: number[] = []
    for (let i = 0; i < N_ARGON2; i++) {
      hashes.push((await timed(`${native.base}/argon2?op=hash`)).ms - native.overhead)
      verifies.push((await timed(`${native.base}/argon2?op=verify`)).ms - native.overhead)
    }
    loads.push(os.loadavg()[0]!.toFixed(2))

    const labels = targets.map((t) => t.label)
    console.log(
      `\n${os.cpus().length} CPUs, 1-minute load average ${loads.join(' → ')}; token figures from batches of n and 2n (noble n=${N_TOKENS}, WebCrypto ML-DSA 50n, EdDSA 100n)\n`,
    )
    console.log(
      `| algorithm | ${labels.map((l) => `signAccessToken (${l})`).join(' | ')} | ${labels.map((l) => `verifyAccessToken (${l})`).join(' | ')} | token length |`,
    )
    console.log(`|---|${labels.map(() => '---|---|').join('')}---|`)
    for (const row of rows) console.log(row)
    const { m, t, p } = CURRENT_PASSWORD_PARAMS
    console.log(`\n| measurement | ${labels.join(' | ')} |`)
    console.log(`|---|${labels.map(() => '---|').join('')}`)
    console.log(
      `| inference receipt signing (DSSE envelope, ML-DSA-65) | ${receipts.map(cell).join(' | ')} |`,
    )
    console.log(
      `| self-tests, every algorithm, cold isolate | ${targets.map((x) => `${round(x.coldSelfTest, 0)} ms`).join(' | ')} |`,
    )
    console.log(
      `| self-tests, every algorithm, warm (median of 3) | ${targets.map((x) => `${round(warmSelfTest.get(x.label)!, 0)} ms`).join(' | ')} |`,
    )
    console.log(
      `\n| Argon2id m=${m} KiB t=${t} p=${p} (median of ${N_ARGON2}) | hash | verify |\n|---|---|---|`,
    )
    console.log(`| WebCrypto worker | ${round(median(hashes), 0)} ms | ${round(median(verifies), 0)} ms |`)
  } finally {
    for (const mf of instances) await mf.dispose()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
