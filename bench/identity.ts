/**
 * Identity and crypto benchmark: the product started in-process twice, side by side (scripts/stack.ts
 * startStack: workerd through Miniflare's socket, embedded PGlite), once per ML-DSA implementation
 * it has (shared/crypto/post-quantum.ts): `webcrypto` (every worker's wrangler config sets
 * webcrypto_modern_algorithms: the runtime's ML-DSA) and `noble` (the same stack with that flag
 * left out: @noble/post-quantum). Requests alternate between the two stacks, so both see the same
 * load on a shared machine and their ratio holds even when the absolute figures do not.
 * - ML-DSA-65 sign and verify per second inside workerd (a bench worker running N operations per
 *   request on either implementation; ops/s from the wall time of large batches, per-request
 *   overhead subtracted);
 * - token issue latency: POST /auth/service-token (first call: Argon2id check of the secret; then
 *   the per-isolate verified-secret cache) and POST /auth/login (Argon2id, m=19 MiB, t=2, p=1);
 * - on GET /platform/v1/crypto/algorithms?type=kem: the first token request of a fresh gateway
 *   isolate, a fresh token's first request (full ML-DSA-65 verification), the same token again
 *   (cached: SHA-256 + map lookups), an API key; sequential requests, p50/p99; wrk c=32.
 *
 *   npx tsx bench/identity.ts    # N_TOKENS=200 N_LOGINS=20 IMPLEMENTATIONS=noble,webcrypto
 *                                # PORT=0: the bench worker's is PORT+1, the stacks' PORT+2, PORT+4
 *                                # DATA_DIR (default the system's temporary folder)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
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

interface Variant {
  impl: PostQuantumImplementation
  stack: Awaited<ReturnType<typeof startStack>>
  workerd: number[]
  issue: () => Promise<Response>
  login: (i: number) => Promise<Response>
}

/** The whole product, started with or without the runtime's ML-DSA. */
async function startVariant(
  impl: PostQuantumImplementation,
  dataDir: string,
  port: number,
): Promise<Variant> {
  const before = new Set(descendantsNamed(process.pid, 'workerd'))
  const stack = await startStack({
    host: '127.0.0.1',
    port,
    dataDir,
    logLevel: LogLevel.WARN,
    withoutCompatibilityFlags: impl === 'noble' ? [MODERN_ALGORITHMS_FLAG] : [],
  })
  const { credentials: creds, baseUrl: base } = stack
  const json = { 'content-type': 'application/json' }
  const serviceBody = JSON.stringify({
    client_id: creds.serviceAccountId,
    client_secret: creds.serviceAccountSecret,
  })
  const loginBody = JSON.stringify({ email: creds.ownerEmail, password: creds.ownerPassword })
  return {
    impl,
    stack,
    workerd: descendantsNamed(process.pid, 'workerd').filter((p) => !before.has(p)),
    issue: () => fetch(`${base}/auth/service-token`, { method: 'POST', headers: json, body: serviceBody }),
    login: (i) =>
      fetch(`${base}/auth/login`, {
        method: 'POST',
        headers: { ...json, 'cf-connecting-ip': `2001:db8::${i}` },
        body: loginBody,
      }),
  }
}

/** Runs `fn` for each variant in turn, `n` times: both see the same moments of the machine's load. */
async function interleaved(
  variants: readonly Variant[],
  n: number,
  fn: (v: Variant, i: number) => Promise<number>,
) {
  const samples = new Map<PostQuantumImplementation, number[]>(variants.map((v) => [v.impl, []]))
  for (let i = 0; i < n; i++) {
    for (const v of i % 2 === 0 ? variants : [...variants].reverse())
      samples.get(v.impl)!.push(await fn(v, i))
  }
  return samples
}

async function main(): Promise<void> {
  const root = mkdtempSync(path.join(process.env.DATA_DIR ?? os.tmpdir(), 'svc-bench-identity-'))
  const variants: Variant[] = []
  try {
    const loads: string[] = [os.loadavg()[0]!.toFixed(2)]
    const throughput = await mlDsaThroughput(root)
    loads.push(os.loadavg()[0]!.toFixed(2))
    for (const [index, impl] of IMPLEMENTATIONS.entries()) {
      variants.push(await startVariant(impl, path.join(root, impl), PORT === 0 ? 0 : PORT + 2 * index + 2))
    }
    const headers = (credential: string) => ({ authorization: `Bearer ${credential}` })
    const get = (v: Variant, credential: string) =>
      timed(() => fetch(`${v.stack.baseUrl}${ROUTE}`, { headers: headers(credential) }))

    // 1. Token issue (the first exchange checks the secret with Argon2id) and login.
    const firstIssue = await interleaved(variants, 1, (v) => timed(v.issue))
    const issue = await interleaved(variants, N_TOKENS, (v) => timed(v.issue))
    const login = await interleaved(variants, N_LOGINS, (v, i) => timed(() => v.login(i)))

    // 2. Gateway verification. Fresh tokens: each request carries a token the gateway has not seen
    //    (its first request: full ML-DSA-65 verification); cached: one token again and again.
    const tokens = new Map<PostQuantumImplementation, string[]>()
    for (const v of variants) {
      const list: string[] = []
      for (let i = 0; i <= N_TOKENS; i++) {
        list.push(((await (await v.issue()).json()) as { access_token: string }).access_token)
      }
      tokens.set(v.impl, list)
    }
    // First use in each gateway isolate: JWKS over RPC, ML-DSA-65 self-tests, principal, policy.
    const firstToken = await interleaved(variants, 1, (v) => get(v, tokens.get(v.impl)![0]!))
    const fresh = await interleaved(variants, N_TOKENS, (v, i) => get(v, tokens.get(v.impl)![i + 1]!))
    const cached = await interleaved(variants, 2 * N_TOKENS, (v) => get(v, tokens.get(v.impl)![0]!))
    const apiKey = await interleaved(variants, 2 * N_TOKENS, (v) => get(v, v.stack.credentials.liveKey))
    // Throughput at c=32 and workerd CPU per request, each variant twice in alternation.
    const c32 = new Map<PostQuantumImplementation, { rps: number[]; cpuUs: number[] }>(
      variants.map((v) => [v.impl, { rps: [], cpuUs: [] }]),
    )
    for (let round = 0; round < 2; round++) {
      for (const v of round === 0 ? variants : [...variants].reverse()) {
        const c0 = cpuSeconds(v.workerd)
        const r = await wrk(`${v.stack.baseUrl}${ROUTE}`, headers(tokens.get(v.impl)![0]!), 32, 4)
        c32.get(v.impl)!.rps.push(r.rps)
        c32.get(v.impl)!.cpuUs.push(((cpuSeconds(v.workerd) - c0) / r.requests) * 1e6)
      }
    }
    loads.push(os.loadavg()[0]!.toFixed(2))

    console.log(
      `\n${os.cpus().length} CPUs, 1-minute load average at the start, after the ML-DSA part, at the end: ${loads.join(', ')}; the stacks ran side by side, requests alternating between them\n`,
    )
    const columns = IMPLEMENTATIONS.map((impl) =>
      impl === 'webcrypto' ? 'WebCrypto (native)' : 'noble (JS)',
    )
    console.log(`| measurement | ${columns.join(' | ')} |`)
    console.log(`|---|${IMPLEMENTATIONS.map(() => '---|').join('')}`)
    const each = (perSecond: number) => `${round(perSecond, 0)} /s (${round(1000 / perSecond, 2)} ms each)`
    const row = (label: string, cell: (impl: PostQuantumImplementation) => string) =>
      console.log(`| ${label} | ${IMPLEMENTATIONS.map(cell).join(' | ')} |`)
    const pct = (samples: Map<PostQuantumImplementation, number[]>) => (impl: PostQuantumImplementation) => {
      const s = stats(samples.get(impl)!)
      return `p50 ${s.p50_ms} ms, p99 ${s.p99_ms} ms (n=${s.n})`
    }
    const one = (samples: Map<PostQuantumImplementation, number[]>) => (impl: PostQuantumImplementation) =>
      `${round(samples.get(impl)![0]!)} ms`
    row('ML-DSA-65 sign in workerd (hedged)', (impl) => each(throughput.get(impl)!.sign))
    row('ML-DSA-65 verify in workerd', (impl) => each(throughput.get(impl)!.verify))
    row('POST /auth/service-token, first call (Argon2id check of the secret)', one(firstIssue))
    row('POST /auth/service-token, secret verified before (ML-DSA-65 sign + 3 queries)', pct(issue))
    row('POST /auth/login (Argon2id m=19 MiB t=2 p=1, sign, refresh family)', pct(login))
    row('first token request in a fresh gateway isolate (JWKS RPC, self-tests, lookups)', one(firstToken))
    row("a fresh ML-DSA-65 token's first request (gateway verifies it), sequential", pct(fresh))
    row('the same token again (verified claims cached), sequential', pct(cached))
    row('API key (cached), sequential', pct(apiKey))
    row('c=32 req/s with a cached token (wrk, 2 × 4 s)', (impl) =>
      c32
        .get(impl)!
        .rps.map((r) => round(r, 0))
        .join(', '),
    )
    row('workerd CPU per request at c=32', (impl) =>
      c32
        .get(impl)!
        .cpuUs.map((c) => `${round(c, 0)} µs`)
        .join(', '),
    )
  } finally {
    for (const v of variants) await v.stack.stop().catch(() => {})
    rmSync(root, { recursive: true, force: true })
  }
}

await main()
process.exit(0)
