/**
 * Decompression bombs at the OTLP receiver (issue 27, item 1), on a stack of its own so that the
 * memory measured is this file's alone, and with no collector configured: a bomb is 413 whatever
 * is configured (the shared stack's telemetry tests have a collector and send one too).
 *
 * A bomb is 7 GiB of zeros, about 7.3 MB compressed, generated and sent as a stream
 * (test/support/zero-bomb.ts). Before the receiver capped its inflation, one such bomb took 10-21 s
 * to refuse, grew the runtime from 1.1 to 7.2 GB and stalled every other tenant for 10-15 s. Now:
 * a 413 well under a second, the memory of the stack's processes (node, workerd; read from /proc)
 * within tens of MiB of where it was, and another tenant's requests answered meanwhile in normal
 * time. The time bounds are an order of magnitude above what the receiver needs and below what
 * a bomb used to cost.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import WebSocket from 'ws'
import { ensureWorkspace } from '../../scripts/db/seed.ts'
import { generateApiKey } from '../../shared/auth/api-keys.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { createScratchDatabase } from '../support/scratch-postgres.ts'
import { launchStack, type RunningStack } from '../support/stack-process.ts'
import { BOMB_UNIT_BYTES, type ZeroBomb, zeroBomb } from '../support/zero-bomb.ts'

const fixture = inject('stack')
const GiB = 2 ** 30
const MiB = 2 ** 20
/**
 * "Well under a second" for the 413, and "normal time" for another tenant meanwhile, with room for
 * a CI machine running the whole suite on two cores (1.06 s seen there once). What this bound
 * catches: inflating one 7 GiB bomb takes the isolate several seconds (~1 GB/s), and another
 * tenant's request waiting behind it would take as long.
 */
const ANSWER_WITHIN_MS = 2000
/**
 * Four bombs at once are four 7.3 MB bodies arriving together, read whole before they are
 * inflated: they take what four legitimate exports of that size take on the local runtime
 * (0.4-1.1 s measured on two shared cores), not what inflating them would.
 */
const FOUR_ANSWERED_WITHIN_MS = 3000
/** "Within tens of MiB": the most the stack's memory may grow while bombs are refused. */
const ONE_BOMB_MEMORY = 64 * MiB
const FOUR_BOMBS_MEMORY = 128 * MiB

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
  ms: number
}

/**
 * POSTs a bomb piece by piece with its Content-Length (node:http, so nothing is buffered whole, and
 * an answer that arrives while the body is still being written is read). A connection that closes
 * without an answer is an error: the client would not have seen the refusal.
 */
function sendBomb(
  baseUrl: string,
  signal: string,
  bomb: ZeroBomb,
  headers: Record<string, string>,
): Promise<Answer> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    let answered = false
    const req = request(
      `${baseUrl}/otlp/v1/${signal}`,
      { method: 'POST', agent: false, headers: { ...headers, 'content-length': String(bomb.length) } },
      (res) => {
        answered = true
        const parts: Buffer[] = []
        res.on('data', (d: Buffer) => parts.push(d))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(parts).toString('utf8'),
            ms: performance.now() - started,
          }),
        )
      },
    )
    req.on('error', (err: NodeJS.ErrnoException) => {
      // Writing after the answer came and the receiver closed is expected; before it, a failure.
      if (!answered) reject(err)
    })
    ;(async () => {
      for (const piece of bomb.pieces()) {
        if (req.destroyed) return
        if (!req.write(piece)) await new Promise((r) => req.once('drain', r))
      }
      req.end()
    })().catch(reject)
  })
}

/** The pids of a process and all its descendants (node, workerd, anything they started). */
function processTree(root: number): number[] {
  const parentOf = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      parentOf.set(Number(entry), ppid)
    } catch {
      // exited while listed
    }
  }
  const tree = [root]
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, ppid] of parentOf) if (ppid === tree[i]) tree.push(pid)
  }
  return tree
}

/** Resident memory of these processes, in bytes (VmRSS of /proc/<pid>/status). */
function residentBytes(pids: number[]): number {
  let total = 0
  for (const pid of pids) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
      if (m) total += Number(m[1]) * 1024
    } catch {
      // exited
    }
  }
  return total
}

/** The stack's memory before `work` and the most it reached while `work` ran (sampled every 5 ms). */
async function memoryDuring<T>(
  pids: number[],
  work: () => Promise<T>,
): Promise<{ result: T; growth: number }> {
  const before = residentBytes(pids)
  let peak = before
  const sampler = setInterval(() => {
    peak = Math.max(peak, residentBytes(pids))
  }, 5)
  try {
    const result = await work()
    peak = Math.max(peak, residentBytes(pids))
    return { result, growth: peak - before }
  } finally {
    clearInterval(sampler)
  }
}

describe(`OTLP decompression bombs (${fixture.kind})`, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-otlp-bomb-'))
  let stack: RunningStack | null = null
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | null = null
  let stackPids: number[] = []
  let token = ''
  const otherTenantKey = generateApiKey('live')

  const exportHeaders = (extra: Record<string, string>) => ({
    authorization: `Bearer ${token}`,
    'content-type': 'application/x-protobuf',
    ...extra,
  })
  const gzipHeaders = () => exportHeaders({ 'content-encoding': 'gzip' })
  const grpcHeaders = () => exportHeaders({ 'content-type': 'application/grpc', 'grpc-encoding': 'gzip' })

  /** Another workspace's requests, one after another while `busy` runs: the slowest answer. */
  async function otherTenantDuring<T>(
    busy: Promise<T>,
  ): Promise<{ result: T; slowestMs: number; requests: number }> {
    let done = false
    let slowestMs = 0
    let requests = 0
    const answer = busy.finally(() => {
      done = true
    })
    const paths = ['/svc/models', '/svc/memories']
    const caller = (async () => {
      while (!done || requests < 2) {
        const started = performance.now()
        const res = await fetch(`${stack!.baseUrl}${paths[requests % 2]}`, {
          headers: { authorization: `Bearer ${otherTenantKey}` },
        })
        await res.arrayBuffer()
        expect(res.status).toBe(200)
        slowestMs = Math.max(slowestMs, performance.now() - started)
        requests++
      }
    })()
    const [result] = await Promise.all([answer, caller])
    return { result, slowestMs, requests }
  }

  beforeAll(async () => {
    scratch = fixture.kind === 'postgres' ? await createScratchDatabase() : null
    // No OTLP_COLLECTOR_URL: exports without a bomb answer 503, bombs must still be 413.
    stack = await launchStack({ dataDir, ...(scratch ? { databaseUrl: scratch.url } : {}) })
    const runtime = JSON.parse(readFileSync(path.join(dataDir, 'runtime.json'), 'utf8')) as { pid: number }
    stackPids = processTree(runtime.pid)

    const created = await fetch(`${stack.baseUrl}/platform/v1/observability-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.credentials.liveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bombs' }),
    })
    expect(created.status).toBe(201)
    ;({ token } = (await created.json()) as { token: string })

    useWebSocketConstructor(WebSocket)
    const database = openDatabase(stack.database, { max: 1 })
    try {
      await ensureWorkspace(database.db, {
        tenantName: 'Bystander',
        planId: 'pro',
        ownerEmail: `bystander-${fixture.kind}@example.test`,
        keys: [{ name: 'bystander', key: otherTenantKey }],
      })
    } finally {
      await database.close()
    }
    // Warm every path measured below (isolates, JIT, the database pool) with small bombs.
    const small = (format: 'gzip' | 'deflate', grpc = false) => zeroBomb(BOMB_UNIT_BYTES, format, { grpc })
    await otherTenantDuring(
      Promise.all([
        sendBomb(stack.baseUrl, 'traces', small('gzip'), gzipHeaders()),
        sendBomb(stack.baseUrl, 'logs', small('deflate'), exportHeaders({ 'content-encoding': 'deflate' })),
        sendBomb(stack.baseUrl, 'metrics', small('gzip', true), grpcHeaders()),
      ]),
    )
  }, 180_000)

  afterAll(async () => {
    await stack?.stop()
    await scratch?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('the generated bombs are what they say: 7 GiB of zeros in under 8 MiB, the limit of the compressed body', () => {
    for (const format of ['gzip', 'deflate'] as const) {
      const bomb = zeroBomb(7 * GiB, format, { grpc: true })
      expect(bomb.inflatedLength).toBe(7 * GiB)
      expect(bomb.length).toBeGreaterThan(7 * MiB * 0.9)
      expect(bomb.length).toBeLessThan(8 * MiB)
    }
  })

  it('a 7 GiB gzip bomb is 413 well under a second; memory stays within tens of MiB; another tenant is answered in normal time', async () => {
    const bomb = zeroBomb(7 * GiB, 'gzip')
    const { result, growth } = await memoryDuring(stackPids, () =>
      otherTenantDuring(sendBomb(stack!.baseUrl, 'traces', bomb, gzipHeaders())),
    )
    console.log(result.result.body, result.result.ms, growth / MiB, result.slowestMs, result.requests)
    expect(result.result.status).toBe(413)
    // google.rpc.Status in protobuf, as the request was; its message is readable in the bytes.
    expect(result.result.body).toMatch(/decompressed request body is larger than 8 MiB/)
    expect(result.result.ms).toBeLessThan(ANSWER_WITHIN_MS)
    expect(growth).toBeLessThan(ONE_BOMB_MEMORY)
    expect(result.slowestMs).toBeLessThan(ANSWER_WITHIN_MS)
  })

  it('deflate (zlib) and gzip inside gRPC framing are refused the same way', async () => {
    const deflate = await memoryDuring(stackPids, () =>
      sendBomb(
        stack!.baseUrl,
        'logs',
        zeroBomb(7 * GiB, 'deflate'),
        exportHeaders({ 'content-encoding': 'deflate', 'content-type': 'application/json' }),
      ),
    )
    expect(deflate.result.status).toBe(413)
    expect(deflate.result.ms).toBeLessThan(ANSWER_WITHIN_MS)
    expect(deflate.growth).toBeLessThan(ONE_BOMB_MEMORY)

    // gRPC: one length-prefixed message flagged compressed, grpc-encoding gzip; refused Trailers-Only
    // style with RESOURCE_EXHAUSTED (8) in the headers.
    const grpc = await memoryDuring(stackPids, () =>
      sendBomb(stack!.baseUrl, 'metrics', zeroBomb(7 * GiB, 'gzip', { grpc: true }), grpcHeaders()),
    )
    expect(grpc.result.status).toBe(200)
    expect(grpc.result.headers['grpc-status']).toBe('8')
    expect(decodeURIComponent(String(grpc.result.headers['grpc-message']))).toMatch(/larger than 8 MiB/)
    expect(grpc.result.ms).toBeLessThan(ANSWER_WITHIN_MS)
    expect(grpc.growth).toBeLessThan(ONE_BOMB_MEMORY)
  })

  it('four bombs at once: all 413, memory within tens of MiB, another tenant still answered in normal time', async () => {
    const bombs = () =>
      Promise.all([
        sendBomb(stack!.baseUrl, 'traces', zeroBomb(7 * GiB, 'gzip'), gzipHeaders()),
        sendBomb(stack!.baseUrl, 'logs', zeroBomb(7 * GiB, 'gzip'), gzipHeaders()),
        sendBomb(
          stack!.baseUrl,
          'metrics',
          zeroBomb(7 * GiB, 'deflate'),
          exportHeaders({ 'content-encoding': 'deflate' }),
        ),
        sendBomb(stack!.baseUrl, 'traces', zeroBomb(7 * GiB, 'gzip', { grpc: true }), grpcHeaders()),
      ])
    const { result, growth } = await memoryDuring(stackPids, () => otherTenantDuring(bombs()))
    console.log(
      result.result.map((r) => r.ms),
      growth / MiB,
      result.slowestMs,
      result.requests,
    )
    const [a, b, c, grpc] = result.result
    expect([a!.status, b!.status, c!.status]).toEqual([413, 413, 413])
    expect(grpc!.headers['grpc-status']).toBe('8')
    for (const answer of result.result) expect(answer.ms).toBeLessThan(FOUR_ANSWERED_WITHIN_MS)
    expect(growth).toBeLessThan(FOUR_BOMBS_MEMORY)
    expect(result.slowestMs).toBeLessThan(ANSWER_WITHIN_MS)
  })
})
