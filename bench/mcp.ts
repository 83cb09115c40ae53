/**
 * The hosted MCP server's cost against its own floor: the REST route a tool wraps, called through
 * the same gateway with the same key, in the same run (the benchmark: `tools/list` and a
 * cheap `tools/call` at c=1 and c=32 beside the same work on the REST route).
 *
 * Targets, all through the gateway of the product started in-process on plain `workerd serve`
 * (scripts/stack.ts, the production path; STACK_RUNTIME=miniflare for Miniflare), interleaved with
 * the order rotated each round:
 * - `rest`: GET /platform/v1/crypto/algorithms?type=kem with a live API key (the floor: what
 *   `crypto_algorithm_lookup` runs);
 * - `mcp tools/call`: POST /mcp calling `crypto_algorithm_lookup` {type: kem}, as a 2026-07-28
 *   client sends it (headers plus the `_meta` envelope, no handshake) and as a 2025-11-25 client
 *   does after initialize (the stateless legacy leg: no session id);
 * - `mcp tools/list`: both revisions (no route call: the endpoint, the SDK and the server built
 *   per request).
 * Each target's answer is checked once before measuring (a JSON-RPC or tool error inside a 200
 * would not show in wrk's counts): the tool's structured content must equal the REST body.
 * Per target: p50/p99 at c=1 and requests/s at c=32 with wrk, CPU per request at c=32 from
 * /proc/<pid>/stat of the stack's workerd, and the foreign CPU other processes used meanwhile.
 *
 *   ROUNDS=2 C1_SECONDS=5 C32_SECONDS=5 npx tsx bench/mcp.ts
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { LogLevel } from 'miniflare'
import { type StackRuntime, startStack } from '../scripts/stack.ts'
import {
  cpuSeconds,
  descendantsNamed,
  machineBusySeconds,
  median,
  round,
  type WrkResult,
  wrk,
} from './bench-support.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 2)
const C1_SECONDS = Number(process.env.C1_SECONDS ?? 5)
const C32_SECONDS = Number(process.env.C32_SECONDS ?? 5)
const RUNTIME: StackRuntime = process.env.STACK_RUNTIME === 'miniflare' ? 'miniflare' : 'workerd'
const REST_ROUTE = '/platform/v1/crypto/algorithms?type=kem'
const TOOL = { name: 'crypto_algorithm_lookup', arguments: { type: 'kem' } }

interface Target {
  name: string
  path: string
  headers: Record<string, string>
  /** A POST body; none: GET. */
  body?: string
}

interface Sample {
  target: string
  c1: WrkResult
  c32: WrkResult
  cpuUsPerRequest: number
  foreignCores: number
}

/** The 2026-07-28 envelope: every request says its revision and client in `_meta`. */
function modernMessage(method: string, params: Record<string, unknown> = {}): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'svc-bench', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  })
}

function modernHeaders(method: string, name?: string): Record<string, string> {
  return {
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(name ? { 'mcp-name': name } : {}),
  }
}

const legacyHeaders = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' }

async function answerOf(baseUrl: string, target: Target, auth: Record<string, string>): Promise<unknown> {
  const res = await fetch(`${baseUrl}${target.path}`, {
    method: target.body === undefined ? 'GET' : 'POST',
    headers: { ...auth, ...target.headers, ...(target.body ? { 'content-type': 'application/json' } : {}) },
    ...(target.body === undefined ? {} : { body: target.body }),
  })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${target.name}: HTTP ${res.status} ${text}`)
  const type = res.headers.get('content-type') ?? ''
  console.error(`${target.name}: answered ${type}`)
  // An event stream carries the JSON-RPC answer in its data lines.
  return JSON.parse(
    type.includes('text/event-stream')
      ? text
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5))
          .join('')
      : text,
  )
}

async function measure(baseUrl: string, target: Target, pids: number[], auth: Record<string, string>) {
  const headers = { ...auth, ...target.headers }
  const url = `${baseUrl}${target.path}`
  const c1 = await wrk(url, headers, 1, C1_SECONDS, undefined, target.body)
  const cpu0 = cpuSeconds(pids)
  const busy0 = machineBusySeconds()
  const own0 = cpuSeconds([...pids, process.pid])
  const started = performance.now()
  const c32 = await wrk(url, headers, 32, C32_SECONDS, undefined, target.body)
  const wall = (performance.now() - started) / 1000
  const cpu = cpuSeconds(pids) - cpu0
  const foreign = Math.max(0, machineBusySeconds() - busy0 - (cpuSeconds([...pids, process.pid]) - own0))
  return {
    target: target.name,
    c1,
    c32,
    cpuUsPerRequest: (cpu / c32.requests) * 1e6,
    foreignCores: foreign / wall,
  } satisfies Sample
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-mcp-'))
  const before = new Set(descendantsNamed(process.pid, 'workerd'))
  const stack = await startStack({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    logLevel: LogLevel.WARN,
    runtime: RUNTIME,
  })
  try {
    const pids = descendantsNamed(process.pid, 'workerd').filter((p) => !before.has(p))
    const auth = {
      authorization: `Bearer ${stack.credentials.liveKey}`,
      'x-svc-tenant': stack.credentials.tenantId,
    }
    const targets: Target[] = [
      { name: 'rest GET algorithms?type=kem', path: REST_ROUTE, headers: {} },
      {
        name: 'mcp tools/call 2026-07-28',
        path: '/mcp',
        headers: modernHeaders('tools/call', TOOL.name),
        body: modernMessage('tools/call', TOOL),
      },
      {
        name: 'mcp tools/call 2025-11-25',
        path: '/mcp',
        headers: legacyHeaders,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: TOOL }),
      },
      {
        name: 'mcp tools/list 2026-07-28',
        path: '/mcp',
        headers: modernHeaders('tools/list'),
        body: modernMessage('tools/list'),
      },
      {
        name: 'mcp tools/list 2025-11-25',
        path: '/mcp',
        headers: legacyHeaders,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      },
    ]

    // Each answer once: the tool's structured content is the REST body; lists are not empty.
    const restBody = await answerOf(stack.baseUrl, targets[0]!, auth)
    for (const target of targets.slice(1)) {
      const answer = (await answerOf(stack.baseUrl, target, auth)) as {
        result?: { isError?: boolean; structuredContent?: unknown; tools?: unknown[] }
        error?: unknown
      }
      if (!answer.result) throw new Error(`${target.name}: ${JSON.stringify(answer.error)}`)
      if (target.name.includes('tools/call')) {
        if (answer.result.isError) throw new Error(`${target.name}: ${JSON.stringify(answer.result)}`)
        if (JSON.stringify(answer.result.structuredContent) !== JSON.stringify(restBody))
          throw new Error(`${target.name}: structured content differs from the REST body`)
      }
      if (target.name.includes('tools/list') && (answer.result.tools?.length ?? 0) === 0)
        throw new Error(`${target.name}: no tools`)
    }

    for (const t of targets)
      await wrk(`${stack.baseUrl}${t.path}`, { ...auth, ...t.headers }, 8, 2, undefined, t.body)

    const samples: Sample[] = []
    for (let r = 1; r <= ROUNDS; r++) {
      for (let k = 0; k < targets.length; k++) {
        const target = targets[(k + r - 1) % targets.length]!
        const sample = await measure(stack.baseUrl, target, pids, auth)
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
        c1_p50: round(m((s) => s.c1.p50_ms)),
        c1_p99: round(m((s) => s.c1.p99_ms)),
        c32_rps: round(
          m((s) => s.c32.rps),
          0,
        ),
        c32_p50: round(m((s) => s.c32.p50_ms)),
        c32_p99: round(m((s) => s.c32.p99_ms)),
        cpu: round(
          m((s) => s.cpuUsPerRequest),
          0,
        ),
        foreign: round(Math.max(...mine.map((s) => s.foreignCores)), 2),
      }
    })
    console.log(
      `\nMedians of ${ROUNDS} rounds; c1 ${C1_SECONDS} s, c32 ${C32_SECONDS} s; ${os.cpus().length} CPUs, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; stack on runtime ${RUNTIME}\n`,
    )
    console.log(
      '| target | c=1 p50 (ms) | c=1 p99 (ms) | c=32 req/s | c=32 p50 (ms) | c=32 p99 (ms) | CPU/request (µs) | max foreign cores |',
    )
    console.log('|---|---|---|---|---|---|---|---|')
    for (const s of summary) {
      console.log(
        `| ${s.target} | ${s.c1_p50} | ${s.c1_p99} | ${s.c32_rps} | ${s.c32_p50} | ${s.c32_p99} | ${s.cpu} | ${s.foreign} |`,
      )
    }
    const rest = summary[0]!
    console.log('')
    for (const s of summary.slice(1)) {
      console.log(
        `${s.target} − rest: p50 +${round(s.c1_p50 - rest.c1_p50)} ms, CPU +${round(s.cpu - rest.cpu, 0)} µs/request, c=32 ${round(s.c32_rps / rest.c32_rps, 2)}× the route's req/s`,
      )
    }
  } finally {
    await stack.stop().catch(() => {})
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
process.exit(0)
