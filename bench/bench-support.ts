/**
 * Shared pieces of the benchmarks: wrk runs with a JSON result line, CPU time of process trees
 * from /proc, "foreign" CPU (what other processes on the machine used meanwhile), medians and
 * percentiles, and the reasoning benchmarks' plan catalog and job watcher.
 */
import { execFileSync, spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { PLAN_CATALOG_CONFIG } from '../shared/plans/plan-catalog.ts'

export const BENCH_DIR = import.meta.dirname
const TICK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100

export interface WrkResult {
  requests: number
  duration_s: number
  rps: number
  p50_ms: number
  p90_ms: number
  p99_ms: number
  mean_ms: number
  non2xx: number
  sock_err: number
}

/**
 * Runs wrk against `url` with headers and returns its result line; refuses runs with non-2xx
 * answers or socket errors. With `tokensFile`, each request carries the next bearer token of that
 * file (bench/identity-wrk-tokens.lua) and wrk stops once every token was used once.
 */
export function wrk(
  url: string,
  headers: Record<string, string>,
  connections: number,
  seconds: number,
  tokensFile?: string,
  /** A POST body (JSON); the request is then a POST (bench/wrk-post-report.lua). */
  body?: string,
): Promise<WrkResult> {
  const hdrs = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join(';;')
  const script = path.join(
    BENCH_DIR,
    tokensFile
      ? 'identity-wrk-tokens.lua'
      : body !== undefined
        ? 'wrk-post-report.lua'
        : 'gateway-wrk-report.lua',
  )
  return new Promise((resolve, reject) => {
    const child = spawn(
      'wrk',
      ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, url],
      {
        env: {
          ...process.env,
          HDRS: hdrs,
          ...(tokensFile ? { TOKENS: tokensFile } : {}),
          ...(body !== undefined ? { BODY: body } : {}),
        },
      },
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

function childrenOf(pid: number): number[] {
  const out: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid) out.push(Number(entry))
    } catch {}
  }
  return out
}

/** The pid and all its descendants. */
export function processTree(pid: number): number[] {
  const all = [pid]
  for (let i = 0; i < all.length; i++) all.push(...childrenOf(all[i]!))
  return all
}

export function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
  } catch {
    return ''
  }
}

/** Descendants of `root` whose command name is `name` (e.g. workerd). */
export function descendantsNamed(root: number, name: string): number[] {
  return processTree(root).filter((p) => p !== root && commandOf(p) === name)
}

/** user+system CPU seconds of the given processes. */
export function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {}
  }
  return ticks / TICK
}

/** Busy CPU seconds of the whole machine (user+nice+system). */
export function machineBusySeconds(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/)
  return (Number(cpu[1]) + Number(cpu[2]) + Number(cpu[3])) / TICK
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

export const round = (value: number, digits = 3) => Number(value.toFixed(digits))

/** The value at percentile `p` (0–100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/**
 * The built-in plan catalog (a PLAN_CATALOG value) with the per-minute limits, the monthly token
 * and real_qpu allowances, the reasoning queue limit and its run slots lifted out of a benchmark's
 * way: the plan checks, the RateLimiter's reservations, the run queue and metering still run, they
 * just never refuse or hold a job back.
 */
export function benchPlanCatalog(): string {
  return JSON.stringify({
    ...PLAN_CATALOG_CONFIG,
    version: '2026-08-02',
    plans: PLAN_CATALOG_CONFIG.plans.map((plan) => ({
      ...plan,
      requestsPerMinute: 1_000_000_000,
      tokensPerMinute: 1_000_000_000_000,
      monthlyTokenAllowance: plan.monthlyTokenAllowance === null ? null : 1_000_000_000_000,
      reasoningQueueLimit: 1_000_000,
      reasoningConcurrency: 1_000_000,
      toolAllowances: {
        ...plan.toolAllowances,
        ...((plan.features as readonly string[]).includes('real_qpu') ? { real_qpu: 1_000_000_000 } : {}),
      },
    })),
  })
}

const TERMINAL_JOB_STATUSES = new Set(['completed', 'classical_fallback', 'failed', 'cancelled'])

export interface WatchedJob {
  /** The job as its last read returned it (terminal). */
  readonly job: Record<string, unknown> & { id: string; status: string }
  /** Epoch ms (performance.timeOrigin based) at which each status was first read. */
  readonly firstSeen: Readonly<Record<string, number>>
}

/** Epoch milliseconds with sub-millisecond resolution (comparable with Date.now()). */
export const epochMs = () => performance.timeOrigin + performance.now()

/**
 * Reads a reasoning job every `pollMs` until it is terminal, noting when each status was first
 * seen (so a status shorter than one poll plus one read may be missed). Refuses anything but 200.
 */
export async function watchJob(
  jobsUrl: string,
  auth: Record<string, string>,
  id: string,
  pollMs: number,
  limitMs = 120_000,
): Promise<WatchedJob> {
  const firstSeen: Record<string, number> = {}
  const deadline = Date.now() + limitMs
  for (;;) {
    const res = await fetch(`${jobsUrl}/${id}`, { headers: auth })
    const text = await res.text()
    const seen = epochMs()
    if (res.status !== 200) throw new Error(`GET job ${id}: ${res.status} ${text.slice(0, 300)}`)
    const { job } = JSON.parse(text) as WatchedJob
    firstSeen[job.status] ??= seen
    if (TERMINAL_JOB_STATUSES.has(job.status)) return { job, firstSeen }
    if (Date.now() > deadline) throw new Error(`job ${id} is still ${job.status} after ${limitMs} ms`)
    await new Promise((r) => setTimeout(r, pollMs))
  }
}
