/**
 * Gateway routing benchmark: what authentication (API key), the tenant check and routing over a
 * service binding to a family worker cost, against the bare pass-through worker the issue's
 * reference figures come from (the team's peer-bench harness's worker, kept in this repository as
 * bench/chat-floor-worker/index.js: forwards each request to an upstream and streams the answer
 * back), the upstream returning the same bytes the gateway's route returns.
 *
 * Targets, all measured in one run, interleaved (order rotated each round):
 * - `gateway`: the product started in-process with scripts/stack.ts startStack on plain `workerd
 *   serve` (the production path: no Miniflare entry worker or outbound interceptor; set
 *   STACK_RUNTIME=miniflare to run it through Miniflare instead), GET /platform/v1/crypto/algorithms?type=kem with
 *   `Authorization: Bearer <live API key>` and `x-svc-tenant` (a cheap authenticated route: no
 *   database work once the key is cached);
 * - `passthrough-workerd`: the pass-through on its own plain `workerd serve`
 *   (scripts/workerd-runtime.ts, as the gateway), forwarding to bench/static-upstream.mjs (a
 *   node:http server answering the gateway's response body); the issue's baseline;
 * - `passthrough-miniflare` / `passthrough-wrangler-dev`: the same worker in its own Miniflare and
 *   under `wrangler dev` (references: the issue asks for the `wrangler dev` figure beside);
 * - `bare-workerd`: a stricter baseline than the issue's: a worker that returns the body itself
 *   (no upstream, no outbound fetch), on plain workerd;
 * - `two-isolate-workerd`: the architecture's floor: a front worker whose whole code hands the
 *   request to that bare worker over a service binding (`env.BACK.fetch(request)`), on plain
 *   workerd: the gateway → family hop with no authentication, checks or routing.
 * Per target: p50/p99 at concurrency 1, requests/s (and p50/p99) at concurrency 32 with wrk, and
 * CPU per request at c=32 from /proc/<pid>/stat of the target's workerd processes (wrangler dev:
 * its whole process tree); the upstream's CPU is reported apart (the issue's reference counts the
 * pass-through's workerd alone, as here). "foreign" is CPU other processes used meanwhile
 * (shared machine).
 *
 *   npx tsx bench/gateway-routing.ts            # ROUNDS=3 C1_SECONDS=8 C32_SECONDS=8
 *   BREAKDOWN=1 npx tsx bench/gateway-routing.ts  # also /healthz and a public family route
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from 'miniflare'
import { type StackRuntime, startStack } from '../scripts/stack.ts'
import { startWorkerd, type WorkerdWorker } from '../scripts/workerd-runtime.ts'
import { ROOT } from '../scripts/workers.ts'
import {
  BENCH_DIR,
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
  /** Processes the target calls that are not part of it (the pass-through's upstream). */
  upstreamPids?: () => number[]
}

interface Sample {
  target: string
  round: number
  c1: WrkResult
  c32: WrkResult
  cpuUsPerRequest: number
  upstreamUsPerRequest: number
  foreignCores: number
}

/** A difference with its sign: +0.1, −0.05. */
function signed(value: number): string {
  return value < 0 ? `−${-value}` : `+${value}`
}

/** The issue's bare pass-through (peer-bench's worker): forwards to env.UPSTREAM. */
const PASSTHROUGH_SOURCE = readFileSync(path.join(BENCH_DIR, 'chat-floor-worker', 'index.js'), 'utf8')

/** One worker of a benchmark's own plain-workerd config: its script file in `dir`, its bindings. */
function benchWorker(
  dir: string,
  name: string,
  file: string,
  options: Record<string, unknown>,
): WorkerdWorker {
  return {
    name,
    scriptPath: path.join(dir, file),
    compatibilityDate: '2026-10-01',
    compatibilityFlags: [],
    options,
    durableObjectClasses: new Map(),
  }
}

/** The stricter baseline: answers the body itself, no upstream. */
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
  const upstream = target.upstreamPids?.() ?? []
  const ourPids = [...pids, ...upstream, process.pid]
  const cpu0 = cpuSeconds(pids)
  const up0 = cpuSeconds(upstream)
  const busy0 = machineBusySeconds()
  const all0 = cpuSeconds(ourPids)
  const started = performance.now()
  const c32 = await wrk(target.url, target.headers, 32, C32_SECONDS)
  const wall = (performance.now() - started) / 1000
  const cpu = cpuSeconds(pids) - cpu0
  const upstreamCpu = cpuSeconds(upstream) - up0
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
    upstreamUsPerRequest: (upstreamCpu / c32.requests) * 1e6,
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

    // The pass-through's upstream: a node:http server answering the same bytes.
    const bodyFile = path.join(dataDir, 'body.json')
    writeFileSync(bodyFile, body)
    const upstreamProcess = spawn(process.execPath, [path.join(BENCH_DIR, 'static-upstream.mjs'), bodyFile], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    stops.push(async () => {
      upstreamProcess.kill()
    })
    const upstreamUrl = await new Promise<string>((resolve, reject) => {
      upstreamProcess.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))
      upstreamProcess.once('exit', (code) => reject(new Error(`static upstream exited (${code})`)))
    })
    const upstreamPids = () => [upstreamProcess.pid!]

    const passthroughMiniflare = new Miniflare(
      convertV4MiniflareOptions({
        host: '127.0.0.1',
        port: 0,
        log: new Log(LogLevel.WARN),
        cf: false,
        workers: [
          {
            name: 'passthrough',
            modules: true,
            script: PASSTHROUGH_SOURCE,
            bindings: { UPSTREAM: upstreamUrl },
            compatibilityDate: '2026-10-01',
          },
        ],
      }),
    )
    stops.push(() => passthroughMiniflare.dispose())
    const passthroughMiniflareUrl = await passthroughMiniflare.ready
    const passthroughMiniflarePids = descendantsNamed(process.pid, 'workerd').filter(
      (p) => !before.has(p) && !stackWorkerd.includes(p),
    )

    const passthroughDir = path.join(dataDir, 'passthrough-workerd')
    mkdirSync(passthroughDir, { recursive: true })
    writeFileSync(path.join(passthroughDir, 'index.js'), PASSTHROUGH_SOURCE)
    const passthroughRuntime = await startWorkerd({
      host: '127.0.0.1',
      port: 0,
      entry: 'passthrough',
      dataDir: passthroughDir,
      workers: [
        benchWorker(passthroughDir, 'passthrough', 'index.js', { bindings: { UPSTREAM: upstreamUrl } }),
      ],
    })
    stops.push(() => passthroughRuntime.stop())

    const bareDir = path.join(dataDir, 'bare-workerd')
    mkdirSync(bareDir, { recursive: true })
    writeFileSync(path.join(bareDir, 'index.js'), bareWorkerSource())
    const bareWorkerdRuntime = await startWorkerd({
      host: '127.0.0.1',
      port: 0,
      entry: 'bare',
      dataDir: bareDir,
      workers: [benchWorker(bareDir, 'bare', 'index.js', { bindings: { BODY: body } })],
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
        benchWorker(floorDir, 'front', 'front.js', { serviceBindings: { BACK: 'bare' } }),
        benchWorker(floorDir, 'bare', 'index.js', { bindings: { BODY: body } }),
      ],
    })
    stops.push(() => floorRuntime.stop())

    const wranglerDir = path.join(dataDir, 'passthrough-wrangler')
    mkdirSync(wranglerDir, { recursive: true })
    writeFileSync(path.join(wranglerDir, 'index.js'), PASSTHROUGH_SOURCE)
    writeFileSync(
      path.join(wranglerDir, 'wrangler.toml'),
      `name = "bench-passthrough"\nmain = "index.js"\ncompatibility_date = "2026-10-01"\n[vars]\nUPSTREAM = ${JSON.stringify(upstreamUrl)}\n`,
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
        name: 'passthrough-workerd',
        url: `${passthroughRuntime.url.origin}${ROUTE}`,
        headers: {},
        pids: () => [passthroughRuntime.pid],
        upstreamPids,
      },
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
      {
        name: 'passthrough-miniflare',
        url: `${passthroughMiniflareUrl.origin}${ROUTE}`,
        headers: {},
        pids: () => passthroughMiniflarePids,
        upstreamPids,
      },
      {
        name: 'passthrough-wrangler-dev',
        url: `${wranglerUrl.replace(/\/$/, '')}${ROUTE}`,
        headers: {},
        pids: () => processTree(wrangler.pid!),
        upstreamPids,
      },
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
          `round ${r} ${target.name}: c1 p50 ${round(sample.c1.p50_ms)} ms, c32 ${round(sample.c32.rps, 0)} req/s, ${round(sample.cpuUsPerRequest, 0)} µs CPU/req${target.upstreamPids ? ` (upstream ${round(sample.upstreamUsPerRequest, 0)})` : ''}, foreign ${round(sample.foreignCores, 2)} cores`,
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
        upstream_us_per_request: t.upstreamPids
          ? String(
              round(
                m((s) => s.upstreamUsPerRequest),
                0,
              ),
            )
          : '–',
        max_foreign_cores: round(Math.max(...mine.map((s) => s.foreignCores)), 2),
      }
    })
    // The gateway against the issue's pass-through on the same runtime, so the difference is the
    // product's; then against the stricter bare worker and the two-isolate floor (plain workerd).
    const row = (name: string) => summary.find((s) => s.target === name)
    const gw = row('gateway')!
    const delta = (name: string) => {
      const other = row(name)!
      return `p50 ${signed(round(gw.c1_p50_ms - other.c1_p50_ms))} ms, CPU ${signed(round(gw.cpu_us_per_request - other.cpu_us_per_request, 0))} µs/request`
    }
    console.log(
      `\nMedians of ${ROUNDS} rounds; c1 ${C1_SECONDS} s, c32 ${C32_SECONDS} s; ${os.cpus().length} CPUs, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; gateway on runtime ${RUNTIME}\n`,
    )
    console.log(
      '| target | c=1 p50 (ms) | c=1 p99 (ms) | c=32 req/s | c=32 p50 (ms) | c=32 p99 (ms) | CPU/request (µs) | upstream CPU/request (µs) | max foreign cores |',
    )
    console.log('|---|---|---|---|---|---|---|---|---|')
    for (const s of summary) {
      console.log(
        `| ${s.target} | ${s.c1_p50_ms} | ${s.c1_p99_ms} | ${s.c32_rps} | ${s.c32_p50_ms} | ${s.c32_p99_ms} | ${s.cpu_us_per_request} | ${s.upstream_us_per_request} | ${s.max_foreign_cores} |`,
      )
    }
    const baseline = RUNTIME === 'workerd' ? 'passthrough-workerd' : 'passthrough-miniflare'
    console.log(
      `\ngateway − ${baseline} (the issue's baseline): ${delta(baseline)} (targets ≤ 0.3 ms, ≤ 100 µs)`,
    )
    if (RUNTIME === 'workerd') {
      const bare = row('bare-workerd')!
      const floor = row('two-isolate-workerd')!
      console.log(`gateway − bare-workerd (stricter: no upstream): ${delta('bare-workerd')}`)
      console.log(
        `two-isolate floor − bare-workerd: p50 +${round(floor.c1_p50_ms - bare.c1_p50_ms)} ms, CPU +${round(floor.cpu_us_per_request - bare.cpu_us_per_request, 0)} µs/request (the hop alone, no code); gateway − floor: ${delta('two-isolate-workerd')}`,
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
