/**
 * Gateway routing benchmark: what authentication (API key), the tenant check and routing over a
 * service binding to a family worker cost, against a bare worker returning the same bytes.
 *
 * Targets, all measured in one run, interleaved (order rotated each round):
 * - `gateway`: the product started in-process with scripts/stack.ts startStack on plain `workerd
 *   serve` (the production path: no Miniflare entry worker or outbound interceptor; set
 *   STACK_RUNTIME=miniflare to run it through Miniflare instead), GET /platform/v1/crypto/algorithms?type=kem with
 *   `Authorization: Bearer <live API key>` and `x-svc-tenant` (a cheap authenticated route: no
 *   database work once the key is cached);
 * - `bare-workerd`: a minimal worker returning the same JSON body, on its own plain `workerd serve`
 *   (scripts/workerd-runtime.ts, as the gateway);
 * - `two-isolate-workerd`: the architecture's floor: a front worker whose whole code hands the
 *   request to that minimal worker over a service binding (`env.BACK.fetch(request)`), on plain
 *   workerd: the gateway → family hop with no authentication, checks or routing;
 * - `bare-miniflare`: the same minimal worker in its own Miniflare/workerd;
 * - `bare-wrangler-dev`: the same minimal worker under `wrangler dev` (reference only).
 * Per target: p50/p99 at concurrency 1, requests/s (and p50/p99) at concurrency 32 with wrk, and
 * CPU per request at c=32 from /proc/<pid>/stat of the target's workerd processes (wrangler dev:
 * its whole process tree). "foreign" is CPU other processes used meanwhile (shared machine).
 *
 *   npx tsx bench/gateway-routing.ts            # ROUNDS=3 C1_SECONDS=8 C32_SECONDS=8
 *   BREAKDOWN=1 npx tsx bench/gateway-routing.ts  # also /healthz and a public family route
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from 'miniflare'
import { type StackRuntime, startStack } from '../scripts/stack.ts'
import { startWorkerd } from '../scripts/workerd-runtime.ts'
import { ROOT } from '../scripts/workers.ts'
import {
  cpuSeconds,
  descendantsNamed,
  machineBusySeconds,
  median,
  processTree,
  round,
  type WrkResult,
  wrk,
} from './bench-support.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 3)
const C1_SECONDS = Number(process.env.C1_SECONDS ?? 8)
const C32_SECONDS = Number(process.env.C32_SECONDS ?? 8)
const ROUTE = '/platform/v1/crypto/algorithms?type=kem'
const RUNTIME: StackRuntime = process.env.STACK_RUNTIME === 'miniflare' ? 'miniflare' : 'workerd'

interface Target {
  name: string
  url: string
  headers: Record<string, string>
  pids: () => number[]
}

interface Sample {
  target: string
  round: number
  c1: WrkResult
  c32: WrkResult
  cpuUsPerRequest: number
  foreignCores: number
}

function bareWorkerSource(): string {
  return `export default {
  fetch(request, env) {
    return new Response(env.BODY, { headers: { 'content-type': 'application/json' } })
  },
}
`
}

async function waitFor(url: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    try {
      if ((await fetch(url)).ok) return
    } catch {}
    await new Promise((r) => setTimeout(r, 250))
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`)
}

async function measure(target: Target, roundNo: number): Promise<Sample> {
  const c1 = await wrk(target.url, target.headers, 1, C1_SECONDS)
  const pids = target.pids()
  const ourPids = [...pids, process.pid]
  const cpu0 = cpuSeconds(pids)
  const busy0 = machineBusySeconds()
  const all0 = cpuSeconds(ourPids)
  const started = performance.now()
  const c32 = await wrk(target.url, target.headers, 32, C32_SECONDS)
  const wall = (performance.now() - started) / 1000
  const cpu = cpuSeconds(pids) - cpu0
  // Foreign: machine busy time not spent by the target or this process (wrk's own CPU is included
  // in it; it is roughly constant across targets).
  const foreign = Math.max(0, machineBusySeconds() - busy0 - (cpuSeconds(ourPids) - all0))
  for (const r of [c1, c32])
    if (r.non2xx || r.sock_err) throw new Error(`${target.name}: errors ${JSON.stringify(r)}`)
  return {
    target: target.name,
    round: roundNo,
    c1,
    c32,
    cpuUsPerRequest: (cpu / c32.requests) * 1e6,
    foreignCores: foreign / wall,
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-gateway-'))
  const stops: (() => Promise<void>)[] = []
  try {
    const before = new Set(descendantsNamed(process.pid, 'workerd'))
    const stack = await startStack({
      host: '127.0.0.1',
      port: 0,
      dataDir,
      logLevel: LogLevel.WARN,
      runtime: RUNTIME,
    })
    stops.push(() => stack.stop())
    const stackWorkerd = descendantsNamed(process.pid, 'workerd').filter((p) => !before.has(p))
    const headers = {
      authorization: `Bearer ${stack.credentials.liveKey}`,
      'x-svc-tenant': stack.credentials.tenantId,
    }
    const probe = await fetch(`${stack.baseUrl}${ROUTE}`, { headers })
    if (probe.status !== 200) throw new Error(`gateway answered ${probe.status}: ${await probe.text()}`)
    const body = await probe.text()

    const bare = new Miniflare(
      convertV4MiniflareOptions({
        host: '127.0.0.1',
        port: 0,
        log: new Log(LogLevel.WARN),
        cf: false,
        workers: [
          {
            name: 'bare',
            modules: true,
            script: bareWorkerSource(),
            bindings: { BODY: body },
            compatibilityDate: '2026-10-01',
          },
        ],
      }),
    )
    stops.push(() => bare.dispose())
    const bareUrl = await bare.ready
    const bareWorkerd = descendantsNamed(process.pid, 'workerd').filter(
      (p) => !before.has(p) && !stackWorkerd.includes(p),
    )

    const bareDir = path.join(dataDir, 'bare-workerd')
    mkdirSync(bareDir, { recursive: true })
    writeFileSync(path.join(bareDir, 'index.js'), bareWorkerSource())
    const bareWorkerdRuntime = await startWorkerd({
      host: '127.0.0.1',
      port: 0,
      entry: 'bare',
      dataDir: bareDir,
      workers: [
        {
          name: 'bare',
          scriptPath: path.join(bareDir, 'index.js'),
          compatibilityDate: '2026-10-01',
          compatibilityFlags: [],
          options: { bindings: { BODY: body } },
          durableObjectClasses: new Map(),
        },
      ],
    })
    stops.push(() => bareWorkerdRuntime.stop())

    const floorDir = path.join(dataDir, 'two-isolate-workerd')
    mkdirSync(floorDir, { recursive: true })
    writeFileSync(path.join(floorDir, 'index.js'), bareWorkerSource())
    writeFileSync(
      path.join(floorDir, 'front.js'),
      'export default { fetch(request, env) { return env.BACK.fetch(request) } }\n',
    )
    const floorRuntime = await startWorkerd({
      host: '127.0.0.1',
      port: 0,
      entry: 'front',
      dataDir: floorDir,
      workers: [
        {
          name: 'front',
          scriptPath: path.join(floorDir, 'front.js'),
          compatibilityDate: '2026-10-01',
          compatibilityFlags: [],
          options: { serviceBindings: { BACK: 'bare' } },
          durableObjectClasses: new Map(),
        },
        {
          name: 'bare',
          scriptPath: path.join(floorDir, 'index.js'),
          compatibilityDate: '2026-10-01',
          compatibilityFlags: [],
          options: { bindings: { BODY: body } },
          durableObjectClasses: new Map(),
        },
      ],
    })
    stops.push(() => floorRuntime.stop())

    const wranglerDir = path.join(dataDir, 'bare-wrangler')
    mkdirSync(wranglerDir, { recursive: true })
    writeFileSync(path.join(wranglerDir, 'index.js'), bareWorkerSource())
    writeFileSync(
      path.join(wranglerDir, 'wrangler.toml'),
      `name = "bench-bare"\nmain = "index.js"\ncompatibility_date = "2026-10-01"\n[vars]\nBODY = ${JSON.stringify(body)}\n`,
    )
    const wranglerPort = 18000 + Math.floor(Math.random() * 1000)
    const wrangler: ChildProcess = spawn(
      path.join(ROOT, 'node_modules/.bin/wrangler'),
      ['dev', '--ip', '127.0.0.1', '--port', String(wranglerPort), '--log-level', 'warn'],
      {
        cwd: wranglerDir,
        detached: true,
        stdio: 'ignore',
        env: { ...process.env, CI: '1', WRANGLER_SEND_METRICS: 'false', XDG_CONFIG_HOME: dataDir },
      },
    )
    stops.push(async () => {
      try {
        process.kill(-wrangler.pid!, 'SIGTERM')
      } catch {}
    })
    const wranglerUrl = `http://127.0.0.1:${wranglerPort}/`
    await waitFor(wranglerUrl, 60_000)

    const targets: Target[] = [
      { name: 'gateway', url: `${stack.baseUrl}${ROUTE}`, headers, pids: () => stackWorkerd },
      {
        name: 'bare-workerd',
        url: `${bareWorkerdRuntime.url.origin}/`,
        headers: {},
        pids: () => [bareWorkerdRuntime.pid],
      },
      {
        name: 'two-isolate-workerd',
        url: `${floorRuntime.url.origin}/`,
        headers: {},
        pids: () => [floorRuntime.pid],
      },
      { name: 'bare-miniflare', url: `${bareUrl.origin}/`, headers: {}, pids: () => bareWorkerd },
      { name: 'bare-wrangler-dev', url: wranglerUrl, headers: {}, pids: () => processTree(wrangler.pid!) },
    ]
    if (process.env.BREAKDOWN) {
      // Where the time goes: the gateway alone, the gateway plus authentication, and the gateway
      // plus the service-binding hop to a family (a public route with a small JSON answer).
      targets.push(
        {
          name: 'gw-healthz (no auth, no family)',
          url: `${stack.baseUrl}/healthz`,
          headers: {},
          pids: () => stackWorkerd,
        },
        {
          name: 'gw-public-family (RPC hop, no auth)',
          url: `${stack.baseUrl}/oauth/protected-resource`,
          headers: {},
          pids: () => stackWorkerd,
        },
      )
    }
    for (const t of targets) await wrk(t.url, t.headers, 8, 3) // warm-up (JIT, caches, key cache)

    const samples: Sample[] = []
    for (let r = 1; r <= ROUNDS; r++) {
      for (let k = 0; k < targets.length; k++) {
        const target = targets[(k + r - 1) % targets.length]!
        const sample = await measure(target, r)
        samples.push(sample)
        console.error(
          `round ${r} ${target.name}: c1 p50 ${round(sample.c1.p50_ms)} ms, c32 ${round(sample.c32.rps, 0)} req/s, ${round(sample.cpuUsPerRequest, 0)} µs CPU/req, foreign ${round(sample.foreignCores, 2)} cores`,
        )
      }
    }

    const summary = targets.map((t) => {
      const mine = samples.filter((s) => s.target === t.name)
      const m = (f: (s: Sample) => number) => median(mine.map(f))
      return {
        target: t.name,
        c1_p50_ms: round(m((s) => s.c1.p50_ms)),
        c1_p99_ms: round(m((s) => s.c1.p99_ms)),
        c32_rps: round(
          m((s) => s.c32.rps),
          0,
        ),
        c32_p50_ms: round(m((s) => s.c32.p50_ms)),
        c32_p99_ms: round(m((s) => s.c32.p99_ms)),
        cpu_us_per_request: round(
          m((s) => s.cpuUsPerRequest),
          0,
        ),
        max_foreign_cores: round(Math.max(...mine.map((s) => s.foreignCores)), 2),
      }
    })
    // The gateway against the bare worker on the same runtime, so the difference is the product's.
    const bareName = RUNTIME === 'workerd' ? 'bare-workerd' : 'bare-miniflare'
    const gw = summary.find((s) => s.target === 'gateway')!
    const bareRow = summary.find((s) => s.target === bareName)!
    console.log(
      `\nMedians of ${ROUNDS} rounds; c1 ${C1_SECONDS} s, c32 ${C32_SECONDS} s; ${os.cpus().length} CPUs, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; gateway on runtime ${RUNTIME}\n`,
    )
    console.log(
      '| target | c=1 p50 (ms) | c=1 p99 (ms) | c=32 req/s | c=32 p50 (ms) | c=32 p99 (ms) | CPU/request (µs) | max foreign cores |',
    )
    console.log('|---|---|---|---|---|---|---|---|')
    for (const s of summary) {
      console.log(
        `| ${s.target} | ${s.c1_p50_ms} | ${s.c1_p99_ms} | ${s.c32_rps} | ${s.c32_p50_ms} | ${s.c32_p99_ms} | ${s.cpu_us_per_request} | ${s.max_foreign_cores} |`,
      )
    }
    console.log(
      `\ngateway − ${bareName}: p50 +${round(gw.c1_p50_ms - bareRow.c1_p50_ms)} ms (target ≤ 0.3), CPU +${round(gw.cpu_us_per_request - bareRow.cpu_us_per_request, 0)} µs/request (target ≤ 100)`,
    )
    const floor = summary.find((s) => s.target === 'two-isolate-workerd')
    if (floor && RUNTIME === 'workerd') {
      console.log(
        `two-isolate floor − ${bareName}: p50 +${round(floor.c1_p50_ms - bareRow.c1_p50_ms)} ms, CPU +${round(floor.cpu_us_per_request - bareRow.cpu_us_per_request, 0)} µs/request (the hop alone, no code); gateway − floor: p50 +${round(gw.c1_p50_ms - floor.c1_p50_ms)} ms, CPU +${round(gw.cpu_us_per_request - floor.cpu_us_per_request, 0)} µs/request`,
      )
    }
    console.log(
      `\nraw: ${JSON.stringify(samples.map((s) => ({ target: s.target, round: s.round, c1_p50: s.c1.p50_ms, c32_rps: s.c32.rps, cpu_us: round(s.cpuUsPerRequest, 0) })))}`,
    )
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
process.exit(0)
