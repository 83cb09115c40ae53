/**
 * A local IonQ Quantum Cloud API v0.3 for tests and local development: the wire format the real
 * API speaks, written from IonQ's public API reference, with a real statevector simulation of each
 * posted circuit by an independent simulator (ionq-circuit.ts beside it: `quantum-circuit`). It
 * shares no code with the product (scripts/fakes-independence.test.ts), so an encoding bug in the
 * product's adapter or circuits shows here as it would against IonQ.
 *
 * - Auth: `Authorization: apiKey <key>`, exactly. No header, another scheme or an unknown key → 401
 *   `Unauthorized`; a key without QPU access asking for a `qpu.*` target → 403 `Forbidden`. Errors
 *   are IonQ's `{error, message, statusCode}`.
 * - Validation (400 `Bad Request`, naming the field): the body, `input` (ionq.circuit.v0: unknown
 *   gates, qubits out of range, missing rotations), `target` (simulator | qpu.*), `shots` (1 to
 *   10,000), `metadata` (at most 10 string values, keys ≤ 40 characters, values ≤ 400), qubits
 *   beyond the target's size.
 * - Lifecycle on an injectable clock (`clock`): submitted → ready → running → completed, at the
 *   offsets in `lifecycle` (per simulator / QPU), computed from the clock when a job is read, so a
 *   test moves jobs along by advancing the clock; nothing runs in the background.
 * - Results: the simulator returns the exact probabilities; a QPU returns the frequencies of
 *   `shots` sampled shots (seeded by the job id), as a histogram normalised to probabilities.
 * - Faults, scripted by rule (`script`, match on method, path, key or a metadata value, for N
 *   requests or for good): an HTTP status (429 with Retry-After, 500, 503, 52x), the connection
 *   dropped before anything happened or right after the job was created, and job outcomes: `failed`
 *   with a `failure.code`, a QPU target silently run on the simulator (the job record then says
 *   `target: "simulator"`), the quota exhausted (failed with `QuotaExhaustedError`), readout decay
 *   (each measured 1 read as 0 with probability p, as amplitude damping does on hardware), and a
 *   gzip bomb (a 200 whose gzip body inflates to gigabytes).
 * - Keys can have a job quota (`quotaJobs`): jobs beyond it fail with `QuotaExhaustedError`, and a
 *   queue wait (`queueMs`) before their jobs start.
 * - `GET /jobs` pages a key's own jobs newest first (`limit`, `next`, `status`): the lookup by our
 *   metadata that reconciliation does. Cancel: `PUT /jobs/{id}/status/cancel`; `DELETE /jobs/{id}`.
 * Every request is recorded (method, path, key, body, fault served).
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { zeroBomb } from '../support/zero-bomb.ts'
import {
  FAKE_SIMULATOR_MAX_QUBITS,
  IonqInputError,
  type ReadCircuit,
  readCircuit,
  simulate,
} from './ionq-circuit.ts'

export const IONQ_TARGETS: Readonly<Record<string, number>> = {
  simulator: 29,
  'qpu.harmony': 11,
  'qpu.aria-1': 25,
  'qpu.aria-2': 25,
  'qpu.forte-1': 36,
  'qpu.forte-enterprise-1': 36,
}

export type IonqFault =
  | { readonly kind: 'status'; readonly status: number; readonly retryAfter?: string }
  /** The socket is destroyed before the request does anything. */
  | { readonly kind: 'drop' }
  /** The job is created, then the socket is destroyed before the answer. */
  | { readonly kind: 'drop_after_create' }
  | { readonly kind: 'job_fails'; readonly code: string; readonly error?: string }
  /** A qpu.* target silently run on the simulator. */
  | { readonly kind: 'run_on_simulator' }
  | { readonly kind: 'quota_exhausted' }
  | { readonly kind: 'readout_decay'; readonly probability: number }
  /** A 200 whose body is `inflatedBytes` of zeros, gzip-encoded (a multiple of 16 MiB; ~1/1000 on the wire). */
  | { readonly kind: 'gzip_bomb'; readonly inflatedBytes: number }

export interface IonqRule {
  readonly match: {
    readonly method?: string
    /** A regular expression tested against the path (query included). */
    readonly path?: string
    readonly apiKey?: string
    /** A metadata value that the created job must carry (create requests only). */
    readonly metadataValue?: string
  }
  readonly fault: IonqFault
  /** Default: for good. */
  readonly times?: number
}

export interface IonqKey {
  readonly qpu: boolean
  /** Jobs this key may create before they fail with QuotaExhaustedError (default unlimited). */
  readonly quotaJobs?: number
  /**
   * ms this key's jobs wait in the provider's queue before the lifecycle starts (a busy QPU);
   * changed by adding the key again, which moves its waiting jobs on at their next read.
   */
  readonly queueMs?: number
}

export interface IonqLifecycle {
  /** ms after creation: ready, running, completed. */
  readonly simulator: readonly [number, number, number]
  readonly qpu: readonly [number, number, number]
}

export interface FakeIonqJob {
  id: string
  apiKey: string
  name: string | null
  target: string
  /** What ran it (differs from what was asked under `run_on_simulator`). */
  ranOn: string
  shots: number
  metadata: Record<string, string>
  input: unknown
  createdAt: number
  canceledAt: number | null
  failure: { error: string; code: string } | null
  /** The results, computed when first read (null: failed, or not read yet). */
  probabilities: Record<string, number> | null
  /** How the results are computed: the read circuit and what a fault changes in it. */
  run: { circuit: ReadCircuit; readoutDecay: number | null } | null
  qubits: number
  gateCounts: { '1q': number; '2q': number }
}

export interface RecordedIonqRequest {
  readonly method: string
  readonly path: string
  readonly apiKey: string | null
  readonly body: unknown
  readonly at: number
  fault: IonqFault | null
}

export interface FakeIonq {
  readonly url: string
  /** `${url}/v0.3`: the base URL an adapter is configured with. */
  readonly baseUrl: string
  readonly requests: RecordedIonqRequest[]
  readonly jobs: FakeIonqJob[]
  script(rule: IonqRule): void
  addKey(key: string, options: IonqKey): void
  /** Switches to a manual clock at `now` (ms) or moves it on; `real` returns to Date.now(). */
  setClock(clock: { mode: 'real' } | { mode: 'manual'; now?: number } | { advanceMs: number }): void
  now(): number
  reset(): void
  stop(): Promise<void>
}

export interface FakeIonqOptions {
  readonly keys?: Readonly<Record<string, IonqKey>>
  readonly lifecycle?: IonqLifecycle
  readonly host?: string
  readonly port?: number
}

const DEFAULT_LIFECYCLE: IonqLifecycle = { simulator: [10, 50, 150], qpu: [100, 400, 1200] }
const MAX_SHOTS = 10_000

class HttpFailure extends Error {
  readonly status: number
  readonly error: string
  constructor(status: number, error: string, message: string) {
    super(message)
    this.status = status
    this.error = error
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** Each 1 read as 0 with probability p, independently per qubit (exact, over the distribution). */
function decay(probabilities: Float64Array, qubits: number, p: number): Float64Array {
  let dist = probabilities
  for (let q = 0; q < qubits; q++) {
    const next = new Float64Array(dist.length)
    const bit = 1 << q
    for (let i = 0; i < dist.length; i++) {
      const v = dist[i]!
      if (i & bit) {
        next[i] = next[i]! + v * (1 - p)
        next[i & ~bit] = next[i & ~bit]! + v * p
      } else next[i] = next[i]! + v
    }
    dist = next
  }
  return dist
}

/** mulberry32: a small seeded generator, so a job's shots are the same at every read. */
function seededUniform(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

/** The frequencies of `shots` measurements drawn from `probabilities`. */
function sampleFrequencies(probabilities: Float64Array, shots: number, seed: number): Float64Array {
  const uniform = seededUniform(seed)
  const counts = new Float64Array(probabilities.length)
  for (let s = 0; s < shots; s++) {
    let u = uniform()
    let i = 0
    while (i < probabilities.length - 1 && u >= probabilities[i]!) u -= probabilities[i++]!
    counts[i]!++
  }
  return counts.map((c) => c / shots)
}

/** IonQ's results body: probabilities keyed by basis-state integer (decimal), zeros left out. */
function resultsBody(probabilities: Float64Array): Record<string, number> {
  const out: Record<string, number> = {}
  probabilities.forEach((p, i) => {
    // Rounded to 12 significant digits, as IonQ's JSON carries them (and 0.4999999999999999 is 0.5).
    const rounded = Number(p.toPrecision(12))
    if (rounded > 1e-12) out[String(i)] = rounded
  })
  return out
}

/**
 * Simulations by circuit: the simulator is slow (about 1 ms a gate), and retried or repeated jobs
 * (the benchmarks' identical jobs) post the same circuit again. Bounded, oldest first out.
 */
const simulations = new Map<string, Float64Array>()
function simulateOnce(input: unknown, circuit: ReadCircuit): Float64Array {
  const key = JSON.stringify(input)
  let probabilities = simulations.get(key)
  if (!probabilities) {
    probabilities = simulate(circuit)
    if (simulations.size >= 256) simulations.delete(simulations.keys().next().value!)
    simulations.set(key, probabilities)
  }
  return probabilities
}

export async function startFakeIonq(options: FakeIonqOptions = {}): Promise<FakeIonq> {
  const keys = new Map<string, IonqKey>(Object.entries(options.keys ?? {}))
  const lifecycle = options.lifecycle ?? DEFAULT_LIFECYCLE
  const requests: RecordedIonqRequest[] = []
  const jobs: FakeIonqJob[] = []
  let rules: { rule: IonqRule; left: number }[] = []
  let manualNow: number | null = null
  const now = () => manualNow ?? Date.now()
  const sockets = new Set<Socket>()

  const statusOf = (job: FakeIonqJob): string => {
    if (job.canceledAt !== null) return 'canceled'
    const [ready, running, completed] = job.ranOn.startsWith('qpu') ? lifecycle.qpu : lifecycle.simulator
    const age = now() - job.createdAt - (keys.get(job.apiKey)?.queueMs ?? 0)
    if (age >= completed) return job.failure ? 'failed' : 'completed'
    if (age >= running) return 'running'
    if (age >= ready) return 'ready'
    return 'submitted'
  }

  const view = (job: FakeIonqJob) => {
    const status = statusOf(job)
    const startMs = job.createdAt + (job.ranOn.startsWith('qpu') ? lifecycle.qpu : lifecycle.simulator)[1]
    const endMs = job.createdAt + (job.ranOn.startsWith('qpu') ? lifecycle.qpu : lifecycle.simulator)[2]
    const qpu = job.ranOn.startsWith('qpu')
    return {
      id: job.id,
      status,
      request: Math.floor(job.createdAt / 1000),
      ...(job.name === null ? {} : { name: job.name }),
      target: job.ranOn,
      metadata: job.metadata,
      shots: job.shots,
      qubits: job.qubits,
      gate_counts: job.gateCounts,
      circuits: 1,
      ...(status === 'running' || status === 'completed' || status === 'failed'
        ? { start: Math.floor(startMs / 1000) }
        : {}),
      ...(status === 'completed' || status === 'failed'
        ? {
            response: Math.floor(endMs / 1000),
            execution_time: endMs - startMs,
            cost_usd: qpu ? Math.round((0.3 + 0.03 * job.shots) * 100) / 100 : 0,
          }
        : {}),
      predicted_execution_time: (qpu ? lifecycle.qpu : lifecycle.simulator)[2],
      ...(status === 'completed' ? { results_url: `/v0.3/jobs/${job.id}/results` } : {}),
      ...(status === 'failed' && job.failure ? { failure: job.failure } : {}),
    }
  }

  const takeRule = (
    method: string,
    path: string,
    apiKey: string | null,
    metadata: Record<string, string> | null,
  ) => {
    for (const entry of rules) {
      const { match } = entry.rule
      if (match.method && match.method !== method) continue
      if (match.path && !new RegExp(match.path).test(path)) continue
      if (match.apiKey && match.apiKey !== apiKey) continue
      if (match.metadataValue && !(metadata && Object.values(metadata).includes(match.metadataValue)))
        continue
      if (entry.left === 0) continue
      if (entry.left > 0) entry.left--
      return entry.rule.fault
    }
    return null
  }

  const authenticate = (req: IncomingMessage): string => {
    const header = req.headers.authorization
    if (!header)
      throw new HttpFailure(
        401,
        'Unauthorized',
        'Missing Authorization header; send "Authorization: apiKey <your-api-key>".',
      )
    const m = /^apiKey (\S+)$/.exec(header)
    if (!m)
      throw new HttpFailure(401, 'Unauthorized', 'Malformed Authorization header; the scheme is "apiKey".')
    if (!keys.has(m[1]!))
      throw new HttpFailure(401, 'Unauthorized', 'The supplied API key failed to authenticate.')
    return m[1]!
  }

  const createJob = (apiKey: string, raw: string, jobFault: IonqFault | null): FakeIonqJob => {
    let body: Record<string, unknown>
    try {
      const parsed = JSON.parse(raw)
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object')
      body = parsed as Record<string, unknown>
    } catch {
      throw new HttpFailure(400, 'Bad Request', 'The request body must be a JSON object.')
    }
    const target = body.target === undefined ? 'simulator' : body.target
    if (typeof target !== 'string' || !(target in IONQ_TARGETS))
      throw new HttpFailure(
        400,
        'Bad Request',
        `"target" must be one of ${Object.keys(IONQ_TARGETS).join(', ')} (got ${JSON.stringify(target)}).`,
      )
    if (target.startsWith('qpu') && !keys.get(apiKey)?.qpu)
      throw new HttpFailure(
        403,
        'Forbidden',
        `The supplied API key is not authorized to run jobs on ${target}.`,
      )
    const shots = body.shots === undefined ? 100 : body.shots
    if (typeof shots !== 'number' || !Number.isInteger(shots) || shots < 1 || shots > MAX_SHOTS)
      throw new HttpFailure(
        400,
        'Bad Request',
        `"shots" must be an integer from 1 to ${MAX_SHOTS} (got ${JSON.stringify(shots)}).`,
      )
    const metadata = body.metadata ?? {}
    if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
      throw new HttpFailure(400, 'Bad Request', '"metadata" must be an object of strings.')
    const entries = Object.entries(metadata)
    if (entries.length > 10) throw new HttpFailure(400, 'Bad Request', '"metadata" may have at most 10 keys.')
    for (const [k, v] of entries) {
      if (k.length > 40)
        throw new HttpFailure(
          400,
          'Bad Request',
          `metadata key "${k.slice(0, 40)}…" is longer than 40 characters.`,
        )
      if (typeof v !== 'string' || v.length > 400)
        throw new HttpFailure(400, 'Bad Request', `metadata.${k} must be a string of at most 400 characters.`)
    }
    const input = body.input
    if (!input || typeof input !== 'object')
      throw new HttpFailure(400, 'Bad Request', '"input" is required (an ionq.circuit.v0 program).')
    let circuit: ReadCircuit
    try {
      circuit = readCircuit(input)
    } catch (err) {
      if (err instanceof IonqInputError) throw new HttpFailure(400, 'Bad Request', err.message)
      throw err
    }
    if (circuit.qubits > IONQ_TARGETS[target]!)
      throw new HttpFailure(
        400,
        'Bad Request',
        `The circuit uses ${circuit.qubits} qubits; ${target} has ${IONQ_TARGETS[target]}.`,
      )
    const id = randomUUID()
    const ranOn = jobFault?.kind === 'run_on_simulator' ? 'simulator' : target
    const quota = keys.get(apiKey)?.quotaJobs
    const used = jobs.filter((j) => j.apiKey === apiKey).length
    let failure: FakeIonqJob['failure'] = null
    if (jobFault?.kind === 'job_fails')
      failure = { error: jobFault.error ?? `The job failed (${jobFault.code}).`, code: jobFault.code }
    else if (jobFault?.kind === 'quota_exhausted' || (quota !== undefined && used >= quota))
      failure = {
        error: 'Your organization has an inadequate credit balance to run this job.',
        code: 'QuotaExhaustedError',
      }
    else if (circuit.qubits + circuit.ancillas > FAKE_SIMULATOR_MAX_QUBITS)
      failure = {
        error: `The circuit needs ${circuit.qubits + circuit.ancillas} qubits to simulate; this simulator runs at most ${FAKE_SIMULATOR_MAX_QUBITS}.`,
        code: 'SimulationTimeout',
      }
    const job: FakeIonqJob = {
      id,
      apiKey,
      name: typeof body.name === 'string' ? body.name : null,
      target,
      ranOn,
      shots,
      metadata: metadata as Record<string, string>,
      input,
      createdAt: now(),
      canceledAt: null,
      failure,
      probabilities: null,
      run:
        failure === null
          ? { circuit, readoutDecay: jobFault?.kind === 'readout_decay' ? jobFault.probability : null }
          : null,
      qubits: circuit.qubits,
      gateCounts: { ...circuit.gateCounts },
    }
    jobs.push(job)
    return job
  }

  /** A completed job's results, simulated when first read (as IonQ runs a job after accepting it). */
  const resultsOf = (job: FakeIonqJob): Record<string, number> | null => {
    if (job.probabilities === null && job.run) {
      let dist = simulateOnce(job.input, job.run.circuit)
      if (job.run.readoutDecay !== null) dist = decay(dist, job.qubits, job.run.readoutDecay)
      if (job.ranOn.startsWith('qpu'))
        dist = sampleFrequencies(dist, job.shots, Number.parseInt(job.id.slice(0, 8), 16))
      job.probabilities = resultsBody(dist)
    }
    return job.probabilities
  }

  const ownJob = (apiKey: string, id: string): FakeIonqJob => {
    const job = jobs.find((j) => j.id === id && j.apiKey === apiKey)
    if (!job) throw new HttpFailure(404, 'Not Found', `No job ${id} is visible to this API key.`)
    return job
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET'
    const url = new URL(req.url ?? '/', 'http://fake')
    const raw = await readBody(req)
    const header = req.headers.authorization
    const apiKeyGuess = header?.startsWith('apiKey ') ? header.slice(7) : null
    let bodyJson: unknown = null
    try {
      bodyJson = raw ? JSON.parse(raw) : null
    } catch {
      bodyJson = raw
    }
    const record: RecordedIonqRequest = {
      method,
      path: url.pathname + url.search,
      apiKey: apiKeyGuess,
      body: bodyJson,
      at: now(),
      fault: null,
    }
    requests.push(record)
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
    }
    const metadata =
      bodyJson && typeof bodyJson === 'object' && 'metadata' in bodyJson
        ? ((bodyJson as { metadata: Record<string, string> }).metadata ?? null)
        : null
    const fault = takeRule(method, record.path, apiKeyGuess, metadata)
    record.fault = fault
    try {
      if (fault?.kind === 'drop') {
        req.socket.destroy()
        return
      }
      if (fault?.kind === 'gzip_bomb') {
        const bomb = zeroBomb(fault.inflatedBytes, 'gzip')
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-encoding': 'gzip',
          'content-length': String(bomb.length),
        })
        ;(async () => {
          for (const piece of bomb.pieces()) {
            if (res.destroyed) return
            if (!res.write(piece)) await new Promise((resolve) => res.once('drain', resolve))
          }
          res.end()
        })().catch(() => {})
        return
      }
      if (fault?.kind === 'status') {
        const error =
          fault.status === 429
            ? 'Too Many Requests'
            : fault.status >= 500
              ? 'Internal Server Error'
              : 'Bad Request'
        send(
          fault.status,
          { error, message: `Scripted ${fault.status}.`, statusCode: fault.status },
          fault.retryAfter ? { 'retry-after': fault.retryAfter } : {},
        )
        return
      }
      const m = /^\/v0\.3\/jobs(?:\/([^/]+))?(\/results|\/status\/cancel)?\/?$/.exec(url.pathname)
      if (!m) throw new HttpFailure(404, 'Not Found', `No route ${method} ${url.pathname}.`)
      const apiKey = authenticate(req)
      const [, id, sub] = m
      if (!id && method === 'POST') {
        const job = createJob(apiKey, raw, fault)
        if (fault?.kind === 'drop_after_create') {
          req.socket.destroy()
          return
        }
        send(200, { id: job.id, status: statusOf(job), request: Math.floor(job.createdAt / 1000) })
        return
      }
      if (!id && method === 'GET') {
        const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 25) || 25, 1), 100)
        const status = url.searchParams.get('status')
        let mine = jobs.filter((j) => j.apiKey === apiKey).reverse()
        if (status) mine = mine.filter((j) => statusOf(j) === status)
        const next = url.searchParams.get('next')
        const start = next ? mine.findIndex((j) => j.id === next) : 0
        if (start < 0)
          throw new HttpFailure(400, 'Bad Request', '"next" is not a job id from a previous page.')
        const page = mine.slice(start, start + limit)
        send(200, { jobs: page.map(view), ...(mine[start + limit] ? { next: mine[start + limit]!.id } : {}) })
        return
      }
      if (id && !sub && method === 'GET') return send(200, view(ownJob(apiKey, id)))
      if (id && sub === '/results' && method === 'GET') {
        const job = ownJob(apiKey, id)
        if (statusOf(job) !== 'completed')
          throw new HttpFailure(
            400,
            'Bad Request',
            `Job ${id} is ${statusOf(job)}; results exist once it is completed.`,
          )
        return send(200, resultsOf(job))
      }
      if (id && sub === '/status/cancel' && method === 'PUT') {
        const job = ownJob(apiKey, id)
        const status = statusOf(job)
        if (status === 'completed' || status === 'failed' || status === 'canceled')
          throw new HttpFailure(400, 'Bad Request', `Job ${id} is already ${status}.`)
        job.canceledAt = now()
        return send(200, { id, status: 'canceled' })
      }
      if (id && !sub && method === 'DELETE') {
        const job = ownJob(apiKey, id)
        jobs.splice(jobs.indexOf(job), 1)
        return send(200, { id, status: 'deleted' })
      }
      throw new HttpFailure(404, 'Not Found', `No route ${method} ${url.pathname}.`)
    } catch (err) {
      if (err instanceof HttpFailure)
        return send(err.status, { error: err.error, message: err.message, statusCode: err.status })
      send(500, { error: 'Internal Server Error', message: String(err), statusCode: 500 })
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500).end(String(err))
    })
  })
  server.on('connection', (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const url = `http://${options.host ?? '127.0.0.1'}:${port}`
  return {
    url,
    baseUrl: `${url}/v0.3`,
    requests,
    jobs,
    script(rule) {
      rules.push({ rule, left: rule.times ?? -1 })
    },
    addKey(key, o) {
      keys.set(key, o)
    },
    setClock(clock) {
      if ('advanceMs' in clock) manualNow = (manualNow ?? Date.now()) + clock.advanceMs
      else if (clock.mode === 'real') manualNow = null
      else manualNow = clock.now ?? Date.now()
    },
    now,
    reset() {
      rules = []
      requests.length = 0
      manualNow = null
    },
    async stop() {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
