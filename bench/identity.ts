/**
 * Identity and crypto benchmark, on the product started in-process (scripts/stack.ts startStack:
 * workerd through Miniflare's socket, embedded PGlite):
 * - ML-DSA-65 sign and verify per second inside workerd (a bench worker running N operations per
 *   request; ops/s from the wall time of large batches, per-request overhead subtracted);
 * - token issue latency: POST /auth/service-token (first call: Argon2id check of the secret; then
 *   the per-isolate verified-secret cache) and POST /auth/login (Argon2id, m=19 MiB, t=2, p=1);
 * - gateway verify latency on GET /platform/v1/crypto/algorithms?type=kem: API key (cached),
 *   an ML-DSA-65 token seen before (cached: SHA-256 + map lookups) and fresh tokens (cold: full
 *   ML-DSA-65 verification), sequential requests, p50/p99; plus wrk c=1/c=32 for a cached token.
 *
 *   npx tsx bench/identity.ts          # N_TOKENS=200 N_LOGINS=20
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from 'miniflare'
import { startStack } from '../scripts/stack.ts'
import { bundleWorker } from '../scripts/workers.ts'
import { cpuSeconds, descendantsNamed, median, round, wrk } from './bench-support.ts'

const N_TOKENS = Number(process.env.N_TOKENS ?? 200)
const N_LOGINS = Number(process.env.N_LOGINS ?? 20)
const ROUTE = '/platform/v1/crypto/algorithms?type=kem'

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

function stats(label: string, samples: readonly number[]) {
  return {
    label,
    n: samples.length,
    p50_ms: round(percentile(samples, 50)),
    p99_ms: round(percentile(samples, 99)),
  }
}

async function opsPerSecond(base: string, op: 'sign' | 'verify', n: number): Promise<number> {
  const overhead = median(await Promise.all([0, 1, 2].map(() => timed(() => fetch(`${base}/noop`)))))
  const runs: number[] = []
  for (let i = 0; i < 3; i++) {
    const ms = (await timed(() => fetch(`${base}/${op}?n=${n}`))) - overhead
    runs.push((n / ms) * 1000)
  }
  return median(runs)
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-identity-'))
  const stops: (() => Promise<void>)[] = []
  try {
    const before = new Set(descendantsNamed(process.pid, 'workerd'))
    const stack = await startStack({ host: '127.0.0.1', port: 0, dataDir, logLevel: LogLevel.WARN })
    stops.push(() => stack.stop())
    const workerd = descendantsNamed(process.pid, 'workerd').filter((p) => !before.has(p))
    const { credentials: creds } = stack
    const base = stack.baseUrl
    const json = { 'content-type': 'application/json' }

    // 1. ML-DSA-65 inside workerd.
    const outfile = path.join(dataDir, 'bench-worker', 'index.js')
    await bundleWorker(path.join(import.meta.dirname, 'identity-bench.worker.ts'), outfile)
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
    stops.push(() => mf.dispose())
    const benchUrl = (await mf.ready).origin
    await fetch(`${benchUrl}/sign?n=20`)
    await fetch(`${benchUrl}/verify?n=50`)
    const signPerSecond = await opsPerSecond(benchUrl, 'sign', 200)
    const verifyPerSecond = await opsPerSecond(benchUrl, 'verify', 1000)

    // 2. Token issue and login.
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

    // 3. Gateway verification: fresh tokens (cold) vs one token again and again (cached).
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

    const load = os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')
    console.log(`\n${os.cpus().length} CPUs, load ${load}\n`)
    console.log('| measurement | result |')
    console.log('|---|---|')
    const each = (perSecond: number) => `${round(perSecond, 0)} /s (${round(1000 / perSecond, 2)} ms each)`
    console.log(`| ML-DSA-65 sign in workerd (noble, hedged) | ${each(signPerSecond)} |`)
    console.log(`| ML-DSA-65 verify in workerd | ${each(verifyPerSecond)} |`)
    const row = (s: ReturnType<typeof stats>) =>
      `| ${s.label} (n=${s.n}) | p50 ${s.p50_ms} ms, p99 ${s.p99_ms} ms |`
    console.log(
      `| POST /auth/service-token, first call (Argon2id check of the secret) | ${round(firstIssue)} ms |`,
    )
    console.log(
      row(stats('POST /auth/service-token, secret verified before (sign + 3 queries)', issueSamples)),
    )
    console.log(
      row(stats('POST /auth/login (Argon2id m=19 MiB t=2 p=1, sign, refresh family)', loginSamples)),
    )
    console.log(
      `| first token request in a fresh gateway isolate (JWKS RPC, self-tests, lookups) | ${round(firstToken)} ms |`,
    )
    const line = (label: string, r: { p50_ms: number; p99_ms: number; requests: number }) =>
      `| ${label} (wrk c=1, n=${r.requests}) | p50 ${round(r.p50_ms)} ms, p99 ${round(r.p99_ms)} ms |`
    console.log(line('gateway + family, API key (cached)', apiKey.c1))
    console.log(line('gateway + family, ML-DSA-65 token seen before (cached)', cached.c1))
    console.log(line('gateway + family, a fresh ML-DSA-65 token per request (cold)', cold))
    console.log(
      `| gateway verification cost (cold − cached, p50) | ${round(cold.p50_ms - cached.c1.p50_ms)} ms |`,
    )
    for (const [label, r] of [
      ['cached token', cached],
      ['API key', apiKey],
    ] as const) {
      console.log(
        `| ${label}: c=32 req/s; workerd CPU/request | ${round(r.c32.rps, 0)} req/s; ${round(r.cpuUs, 0)} µs |`,
      )
    }
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
process.exit(0)
