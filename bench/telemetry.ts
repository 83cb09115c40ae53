/**
 * OTLP ingestion benchmark: a 100-span ExportTraceServiceRequest in protobuf (serialized by the
 * OpenTelemetry JS exporter's own serializer), gzip and not, POSTed with wrk at concurrency 1 and
 * 32 through the gateway (observability token, validation and counting, forwarding to the
 * collector fake, the result stored in Postgres), beside the same bytes POSTed straight to the
 * collector fake (the floor), in one run, interleaved per round.
 *
 * The product runs in-process with scripts/stack.ts on plain workerd (STACK_RUNTIME=miniflare to
 * compare) and embedded PGlite; the collector fake (test/fakes/otlp-collector.ts, recording off)
 * runs in a child process of its own so its CPU is counted apart. Per target: requests/s, MB/s of
 * request bodies, p50/p99, and CPU per request: the stack's workerd processes ("product"), this
 * process (embedded Postgres and its bridge: "database"), and the collector fake ("collector");
 * "foreign" is what other processes on the machine used meanwhile.
 *
 *   flock /tmp/svc-e2e.lock npx tsx bench/telemetry.ts     # ROUNDS=3 SECONDS=6
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { SpanKind } from '@opentelemetry/api'
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { LogLevel } from 'miniflare'
import { type StackRuntime, startStack } from '../scripts/stack.ts'
import { PLAN_CATALOG_CONFIG } from '../shared/plans/plan-catalog.ts'
import {
  BENCH_DIR,
  cpuSeconds,
  descendantsNamed,
  machineBusySeconds,
  median,
  round,
  type WrkResult,
} from './bench-support.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 3)
const SECONDS = Number(process.env.SECONDS ?? 6)
const RUNTIME: StackRuntime = process.env.STACK_RUNTIME === 'miniflare' ? 'miniflare' : 'workerd'

/**
 * The built-in catalog with ingestion's per-minute limits and monthly bytes raised out of reach:
 * the benchmark measures ingestion (the RateLimiter's admission and settle included), not refusals.
 */
const catalog = {
  ...PLAN_CATALOG_CONFIG,
  version: '2026-08-03',
  plans: PLAN_CATALOG_CONFIG.plans.map((plan) => ({
    ...plan,
    ingestRequestsPerMinute: 1_000_000_000,
    ingestBytesPerMinute: 1_000_000_000_000,
    toolAllowances: { ...plan.toolAllowances, telemetry_ingest: 1_000_000_000_000_000 },
  })),
}

function wrkPost(
  url: string,
  bodyFile: string,
  headers: Record<string, string>,
  connections: number,
): Promise<WrkResult> {
  const hdrs = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join(';;')
  return new Promise((resolve, reject) => {
    const child = spawn(
      'wrk',
      [
        '-t1',
        `-c${connections}`,
        `-d${SECONDS}s`,
        '--timeout',
        '10s',
        '-s',
        path.join(BENCH_DIR, 'wrk-post-report.lua'),
        url,
      ],
      { env: { ...process.env, HDRS: hdrs, BODY_FILE: bodyFile } },
    )
    let out = ''
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.on('exit', (code) => {
      const line = /RESULT (\{.*\})/.exec(out)
      const result = line ? (JSON.parse(line[1]!) as WrkResult) : null
      if (code !== 0 || !result) reject(new Error(`wrk failed (${code}): ${out}`))
      else if (result.non2xx || result.sock_err)
        reject(new Error(`${url}: errors in ${JSON.stringify(result)}`))
      else resolve(result)
    })
  })
}

async function hundredSpans(): Promise<Uint8Array> {
  const memory = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'bench-emitter',
      'service.version': '1.0.0',
      'deployment.environment': 'bench',
    }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  })
  const tracer = provider.getTracer('bench', '1.0.0')
  for (let i = 0; i < 100; i++) {
    const span = tracer.startSpan(`GET /api/items/${i % 10}`, {
      kind: SpanKind.SERVER,
      attributes: {
        'http.method': 'GET',
        'http.status_code': 200,
        'http.route': '/api/items/:id',
        'db.system': 'postgresql',
        'db.operation': 'SELECT',
        'net.peer.name': 'db.internal',
      },
    })
    span.addEvent('cache.miss', { 'cache.key': `item:${i}` })
    span.end()
  }
  await provider.forceFlush()
  const bytes = ProtobufTraceSerializer.serializeRequest(memory.getFinishedSpans())
  if (!bytes) throw new Error('serializer returned nothing')
  return bytes
}

interface Target {
  name: string
  url: string
  bodyFile: string
  bytes: number
  headers: Record<string, string>
}

interface Sample {
  target: string
  c: number
  result: WrkResult
  productUs: number
  databaseUs: number
  collectorUs: number
  foreignCores: number
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-telemetry-'))
  const stops: (() => Promise<void>)[] = []
  try {
    // The collector fake in its own process (recording off: nothing grows during the run).
    const collector = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(BENCH_DIR, 'otlp-collector-fake.ts')],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    stops.push(async () => {
      collector.kill()
    })
    const collectorUrl = await new Promise<string>((resolve, reject) => {
      collector.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))
      collector.once('exit', (code) => reject(new Error(`collector fake exited (${code})`)))
    })

    const before = new Set(descendantsNamed(process.pid, 'workerd'))
    const stack = await startStack({
      host: '127.0.0.1',
      port: 0,
      dataDir,
      logLevel: LogLevel.WARN,
      runtime: RUNTIME,
      bindings: { OTLP_COLLECTOR_URL: collectorUrl, PLAN_CATALOG: JSON.stringify(catalog) },
    })
    stops.push(() => stack.stop())
    const productPids = descendantsNamed(process.pid, 'workerd').filter((p) => !before.has(p))

    const created = await fetch(`${stack.baseUrl}/platform/v1/observability-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.credentials.liveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench' }),
    })
    if (created.status !== 201) throw new Error(`token: ${created.status} ${await created.text()}`)
    const { token } = (await created.json()) as { token: string }

    const plain = await hundredSpans()
    const packed = gzipSync(plain)
    const plainFile = path.join(dataDir, 'traces.pb')
    const packedFile = path.join(dataDir, 'traces.pb.gz')
    writeFileSync(plainFile, plain)
    writeFileSync(packedFile, packed)
    const proto = { 'content-type': 'application/x-protobuf' }
    const auth = { authorization: `Bearer ${token}` }
    const targets: Target[] = [
      {
        name: 'gateway',
        url: `${stack.baseUrl}/otlp/v1/traces`,
        bodyFile: plainFile,
        bytes: plain.length,
        headers: { ...proto, ...auth },
      },
      {
        name: 'gateway-gzip',
        url: `${stack.baseUrl}/otlp/v1/traces`,
        bodyFile: packedFile,
        bytes: packed.length,
        headers: { ...proto, ...auth, 'content-encoding': 'gzip' },
      },
      {
        name: 'floor',
        url: `${collectorUrl}/v1/traces`,
        bodyFile: plainFile,
        bytes: plain.length,
        headers: proto,
      },
      {
        name: 'floor-gzip',
        url: `${collectorUrl}/v1/traces`,
        bodyFile: packedFile,
        bytes: packed.length,
        headers: { ...proto, 'content-encoding': 'gzip' },
      },
    ]
    for (const t of targets) {
      const probe = await fetch(t.url, {
        method: 'POST',
        headers: t.headers,
        body: (t === targets[1] || t === targets[3] ? packed : plain) as BodyInit,
      })
      if (probe.status !== 200) throw new Error(`${t.name}: ${probe.status} ${await probe.text()}`)
    }

    const samples: Sample[] = []
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      const order = targets.map((_, i) => targets[(i + round_) % targets.length]!)
      for (const target of order) {
        for (const c of [1, 32]) {
          const cpu0 = {
            product: cpuSeconds(productPids),
            db: cpuSeconds([process.pid]),
            col: cpuSeconds([collector.pid!]),
          }
          const busy0 = machineBusySeconds()
          const t0 = performance.now()
          const result = await wrkPost(target.url, target.bodyFile, target.headers, c)
          const wall = (performance.now() - t0) / 1000
          const product = cpuSeconds(productPids) - cpu0.product
          const db = cpuSeconds([process.pid]) - cpu0.db
          const col = cpuSeconds([collector.pid!]) - cpu0.col
          const foreign = machineBusySeconds() - busy0 - product - db - col
          const perReq = (s: number) => (s / result.requests) * 1e6
          samples.push({
            target: target.name,
            c,
            result,
            productUs: perReq(product),
            databaseUs: perReq(db),
            collectorUs: perReq(col),
            foreignCores: Math.max(0, foreign) / wall,
          })
          console.error(`${target.name} c=${c}: ${result.rps} req/s p50 ${result.p50_ms} ms`)
        }
      }
    }

    const rows = targets.flatMap((t) =>
      [1, 32].map((c) => {
        const mine = samples.filter((s) => s.target === t.name && s.c === c)
        const rps = median(mine.map((s) => s.result.rps))
        return {
          target: t.name,
          c,
          body_bytes: t.bytes,
          rps: round(rps, 1),
          mb_per_s: round((rps * t.bytes) / 1e6, 2),
          p50_ms: round(median(mine.map((s) => s.result.p50_ms)), 2),
          p99_ms: round(median(mine.map((s) => s.result.p99_ms)), 2),
          product_cpu_us: round(median(mine.map((s) => s.productUs)), 0),
          database_cpu_us: round(median(mine.map((s) => s.databaseUs)), 0),
          collector_cpu_us: round(median(mine.map((s) => s.collectorUs)), 0),
          foreign_cores: round(median(mine.map((s) => s.foreignCores)), 2),
        }
      }),
    )
    console.log(
      JSON.stringify(
        { runtime: RUNTIME, rounds: ROUNDS, seconds: SECONDS, spans: 100, load: os.loadavg(), rows },
        null,
        2,
      ),
    )
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
