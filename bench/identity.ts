/**
 * Identity and crypto benchmark, on the product started in-process (scripts/stack.ts startStack:
 * workerd through Miniflare's socket, embedded PGlite), once per ML-DSA implementation the product
 * has (shared/crypto/post-quantum.ts) so that one run compares them on the same machine at the same
 * moment: `webcrypto` (every worker's wrangler config sets webcrypto_modern_algorithms: the
 * runtime's ML-DSA) and `noble` (the same stack with that flag left out: @noble/post-quantum).
 * - ML-DSA-65 sign and verify per second inside workerd (a bench worker running N operations per
 *   request on either implementation; ops/s from the wall time of large batches, per-request
 *   overhead subtracted);
 * - token issue latency: POST /auth/service-token (first call: Argon2id check of the secret; then
 *   the per-isolate verified-secret cache) and POST /auth/login (Argon2id, m=19 MiB, t=2, p=1);
 * - gateway verify latency on GET /platform/v1/crypto/algorithms?type=kem: API key (cached),
 *   an ML-DSA-65 token seen before (cached: SHA-256 + map lookups) and fresh tokens (cold: full
 *   ML-DSA-65 verification), sequential requests, p50/p99; plus wrk c=1/c=32 for a cached token.
 *
 *   npx tsx bench/identity.ts          # N_TOKENS=200 N_LOGINS=20 IMPLEMENTATIONS=noble,webcrypto
 *                                      # PORT=0 (the stack's; the bench worker's is PORT+1), DATA_DIR=tmp
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from 'miniflare'
import { startStack } from '../scripts/stack.ts'
import { bundleWorker } from '../scripts/workers.ts'
import type { PostQuantumImplementation } from '../shared/crypto/post-quantum.ts'
import { cpuSeconds, descendantsNamed, median, round, wrk } from './bench-support.ts'

const N_TOKENS = Number(process.env.N_TOKENS ?? 200)
const N_LOGINS = Number(process.env.N_LOGINS ?? 20)
const IMPLEMENTATIONS = (process.env.IMPLEMENTATIONS ?? 'noble,webcrypto').split(
  ',',
) as PostQuantumImplementation[]
const ROUTE = '/platform/v1/crypto/algorithms?type=kem'
const MODERN_ALGORITHMS_FLAG = 'webcrypto_modern_algorithms'
const PORT = Number(process.env.PORT ?? 0)

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

async function timed(fn: () => Promise<Response>, expected = 200): Promise<number> {
  const start = performance.now()
  const res = await fn()
  await res.arrayBuffer()
  const ms = performance.now() - start
  if (res.status !== expected) throw new Error(`status ${res.status}`)
  return ms
}

function stats(samples: readonly number[]) {
  return { n: samples.length, p50_ms: round(percentile(samples, 50)), p99_ms: round(percentile(samples, 99)) }
}

async function opsPerSecond(
  base: string,
  op: 'sign' | 'verify',
  impl: PostQuantumImplementation,
  n: number,
): Promise<number> {
  const overhead = median(await Promise.all([0, 1, 2].map(() => timed(() => fetch(`${base}/noop`)))))
  const runs: number[] = []
  for (let i = 0; i < 3; i++) {
    const ms = (await timed(() => fetch(`${base}/${op}?impl=${impl}&n=${n}`))) - overhead
    runs.push((n / ms) * 1000)
  }
  return median(runs)
}

/** ML-DSA-65 operations per second inside workerd, on both implementations. */
async function mlDsaThroughput(dataDir: string) {
  const outfile = path.join(dataDir, 'bench-worker', 'index.js')
  await bundleWorker(path.join(import.meta.dirname, 'identity-bench.worker.ts'), outfile)
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      host: '127.0.0.1',
      port: PORT === 0 ? 0 : PORT + 1,
      log: new Log(LogLevel.WARN),
      cf: false,
      workers: [
        {
          name: 'bench',
          modules: true,
          script: readFileSync(outfile, 'utf8'),
          compatibilityDate: '2026-10-01',
          compatibilityFlags: ['nodejs_compat', MODERN_ALGORITHMS_FLAG],
        },
      ],
    }),
  )
  try {
    const base = (await mf.ready).origin
    const result = new Map<PostQuantumImplementation, { sign: number; verify: number }>()
    for (const impl of ['noble', 'webcrypto'] as const) {
      const scale = impl === 'webcrypto' ? 10 : 1
      await fetch(`${base}/sign?impl=${impl}&n=20`)
      await fetch(`${base}/verify?impl=${impl}&n=50`)
      result.set(impl, {
        sign: await opsPerSecond(base, 'sign', impl, 100 * scale),
        verify: await opsPerSecond(base, 'verify', impl, 300 * scale),
      })
    }
    return result
  } finally {
    await mf.dispose()
  }
}

interface StackFigures {
  firstIssue: number
  issue: ReturnType<typeof stats>
  login: ReturnType<typeof stats>
  firstToken: number
  cold: Awaited<ReturnType<typeof wrk>>
  cached: { c1: Awaited<ReturnType<typeof wrk>>; c32: Awaited<ReturnType<typeof wrk>>; cpuUs: number }
  apiKey: { c1: Awaited<ReturnType<typeof wrk>>; c32: Awaited<ReturnType<typeof wrk>>; cpuUs: number }
}

/** The whole product, started with or without the runtime's ML-DSA. */
async function measureStack(impl: PostQuantumImplementation, dataDir: string): Promise<StackFigures> {
  const before = new Set(descendantsNamed(process.pid, 'workerd'))
  const stack = await startStack({
    host: '127.0.0.1',
    port: PORT,
    dataDir,
    logLevel: LogLevel.WARN,
    withoutCompatibilityFlags: impl === 'noble' ? [MODERN_ALGORITHMS_FLAG] : [],
  })
  try {
    const workerd = descendantsNamed(process.pid, 'workerd').filter((p) => !before.has(p))
    const { credentials: creds } = stack
    const base = stack.baseUrl
    const json = { 'content-type': 'application/json' }

    // 1. Token issue and login.
    const serviceBody = JSON.stringify({
      client_id: creds.serviceAccountId,
      client_secret: creds.serviceAccountSecret,
    })
    const issue = () =>
      fetch(`${base}/auth/service-token`, { method: 'POST', headers: json, body: serviceBody })
    const firstIssue = await timed(issue)
    const issueSamples: number[] = []
    for (let i = 0; i < N_TOKENS; i++) issueSamples.push(await timed(issue))
    const loginBody = JSON.stringify({ email: creds.ownerEmail, password: creds.ownerPassword })
    const loginSamples: number[] = []
    for (let i = 0; i < N_LOGINS; i++) {
      loginSamples.push(
        await timed(() =>
          fetch(`${base}/auth/login`, {
            method: 'POST',
            headers: { ...json, 'cf-connecting-ip': `2001:db8::${i}` },
            body: loginBody,
          }),
        ),
      )
    }

    // 2. Gateway verification: fresh tokens (cold) vs one token again and again (cached).
    const tokens: string[] = []
    for (let i = 0; i < N_TOKENS; i++) {
      const res = await issue()
      tokens.push(((await res.json()) as { access_token: string }).access_token)
    }
    const headers = (credential: string) => ({ authorization: `Bearer ${credential}` })
    const target = `${base}${ROUTE}`
    // First use in this gateway isolate: JWKS over RPC, ML-DSA-65 self-tests, principal, policy.
    const firstToken = await timed(() => fetch(target, { headers: headers(tokens[0]!) }))
    const tokensFile = path.join(dataDir, 'tokens.txt')
    writeFileSync(tokensFile, `${tokens.slice(1).join('\n')}\n`)
    await wrk(target, headers(creds.liveKey), 8, 2) // warm-up
    const cold = await wrk(target, {}, 1, 120, tokensFile)
    const measure = async (credential: string) => {
      const c0 = cpuSeconds(workerd)
      const c1 = await wrk(target, headers(credential), 1, 5)
      const c32 = await wrk(target, headers(credential), 32, 5)
      const used = cpuSeconds(workerd) - c0
      return { c1, c32, cpuUs: (used / (c1.requests + c32.requests)) * 1e6 }
    }
    const cached = await measure(tokens[0]!)
    const apiKey = await measure(creds.liveKey)

    return {
      firstIssue,
      issue: stats(issueSamples),
      login: stats(loginSamples),
      firstToken,
      cold,
      cached,
      apiKey,
    }
  } finally {
    await stack.stop()
  }
}

async function main(): Promise<void> {
  const root = mkdtempSync(path.join(process.env.DATA_DIR ?? os.tmpdir(), 'svc-bench-identity-'))
  try {
    const loads: string[] = [os.loadavg()[0]!.toFixed(2)]
    const throughput = await mlDsaThroughput(root)
    loads.push(os.loadavg()[0]!.toFixed(2))
    const figures = new Map<PostQuantumImplementation, StackFigures>()
    for (const impl of IMPLEMENTATIONS) {
      figures.set(impl, await measureStack(impl, path.join(root, impl)))
      loads.push(os.loadavg()[0]!.toFixed(2))
    }

    console.log(
      `\n${os.cpus().length} CPUs, 1-minute load average before and after each part: ${loads.join(', ')}\n`,
    )
    const columns = IMPLEMENTATIONS.map((impl) =>
      impl === 'webcrypto' ? 'WebCrypto (native)' : 'noble (JS)',
    )
    console.log(`| measurement | ${columns.join(' | ')} |`)
    console.log(`|---|${IMPLEMENTATIONS.map(() => '---|').join('')}`)
    const each = (perSecond: number) => `${round(perSecond, 0)} /s (${round(1000 / perSecond, 2)} ms each)`
    const row = (label: string, cell: (impl: PostQuantumImplementation) => string) =>
      console.log(`| ${label} | ${IMPLEMENTATIONS.map(cell).join(' | ')} |`)
    row('ML-DSA-65 sign in workerd (hedged)', (impl) => each(throughput.get(impl)!.sign))
    row('ML-DSA-65 verify in workerd', (impl) => each(throughput.get(impl)!.verify))
    const f = (impl: PostQuantumImplementation) => figures.get(impl)!
    const pct = (s: { n: number; p50_ms: number; p99_ms: number }) =>
      `p50 ${s.p50_ms} ms, p99 ${s.p99_ms} ms (n=${s.n})`
    const wrkCell = (r: { p50_ms: number; p99_ms: number; requests: number }) =>
      `p50 ${round(r.p50_ms)} ms, p99 ${round(r.p99_ms)} ms (n=${r.requests})`
    row(
      'POST /auth/service-token, first call (Argon2id check of the secret)',
      (i) => `${round(f(i).firstIssue)} ms`,
    )
    row('POST /auth/service-token, secret verified before (sign + 3 queries)', (i) => pct(f(i).issue))
    row('POST /auth/login (Argon2id m=19 MiB t=2 p=1, sign, refresh family)', (i) => pct(f(i).login))
    row(
      'first token request in a fresh gateway isolate (JWKS RPC, self-tests, lookups)',
      (i) => `${round(f(i).firstToken)} ms`,
    )
    row('gateway + family, API key (cached), wrk c=1', (i) => wrkCell(f(i).apiKey.c1))
    row('gateway + family, ML-DSA-65 token seen before (cached), wrk c=1', (i) => wrkCell(f(i).cached.c1))
    row("gateway + family, a fresh ML-DSA-65 token per request (each token's first request), wrk c=1", (i) =>
      wrkCell(f(i).cold),
    )
    row(
      'gateway verification cost (cold − cached, p50)',
      (i) => `${round(f(i).cold.p50_ms - f(i).cached.c1.p50_ms)} ms`,
    )
    row(
      'c=32 req/s, cached token / API key',
      (i) => `${round(f(i).cached.c32.rps, 0)} / ${round(f(i).apiKey.c32.rps, 0)}`,
    )
    row(
      'workerd CPU per request at c=1+c=32, cached token / API key',
      (i) => `${round(f(i).cached.cpuUs, 0)} / ${round(f(i).apiKey.cpuUs, 0)} µs`,
    )
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

await main()
process.exit(0)
