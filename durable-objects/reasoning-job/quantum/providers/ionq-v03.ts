/**
 * The IonQ Quantum Cloud API v0.3 adapter (https://api.ionq.co/v0.3):
 *   POST /jobs                     {name, metadata, shots, target, input: ionq.circuit.v0} → {id, status}
 *   GET  /jobs/{id}                the job: status, target, metadata, failure {error, code}, request, cost_usd
 *   GET  /jobs/{id}/results        probabilities keyed by basis-state integer ("0": 0.49, "3": 0.51)
 *   GET  /jobs?limit=&next=        {jobs: [...], next}: newest first, what this key may see
 *   PUT  /jobs/{id}/status/cancel  → {id, status: "canceled"}
 * Authentication `Authorization: apiKey <key>`; errors `{error, message, statusCode}`; 429 with
 * Retry-After. Statuses submitted → ready → running → completed | failed | canceled.
 *
 * v0.3 has no server-side metadata filter, so `findByMetadata` pages through the key's jobs,
 * newest first, until it passes `since`, and compares metadata exactly (docs/quantum-selector.md).
 */
import { z } from 'zod'
import { readAnswerTextWithin } from '../../../../shared/http/bounded-answer'
import {
  type ProviderAccount,
  type ProviderJob,
  type ProviderResult,
  type QpuJobMetadata,
  type QpuJobRequest,
  type QpuProvider,
  QpuProviderError,
} from './qpu-provider'

/** Per request; a create that times out is an unknown outcome, never resent blindly. */
const REQUEST_TIMEOUT_MS = 15_000
/** Pages of 100 jobs searched for a lost submission at most. */
const MAX_LOOKUP_PAGES = 20
/**
 * Most an answer may decode to: a page of 100 job records, or the results of 36 qubits over many
 * shots, are far smaller (a histogram of 10,000 distinct states is ~300 KB).
 */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024

const JobRecordSchema = z.looseObject({
  id: z.string().min(1),
  status: z.enum(['submitted', 'ready', 'running', 'completed', 'failed', 'canceled']),
  target: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).nullable().optional(),
  failure: z.looseObject({ error: z.string().optional(), code: z.string().optional() }).nullable().optional(),
  request: z.number().nullable().optional(),
  cost_usd: z.number().nullable().optional(),
})
type JobRecord = z.infer<typeof JobRecordSchema>

const JobListSchema = z.looseObject({
  jobs: z.array(JobRecordSchema),
  next: z.string().nullable().optional(),
})
const ResultsSchema = z.record(z.string().regex(/^\d+$/), z.number().min(0).max(1.000001))
const ErrorBodySchema = z.looseObject({ error: z.string().optional(), message: z.string().optional() })

function toJob(record: JobRecord): ProviderJob {
  const target = record.target ?? 'simulator'
  const ran = record.status === 'running' || record.status === 'completed' || record.status === 'failed'
  const metadata: Record<string, string> = {}
  for (const [k, v] of Object.entries(record.metadata ?? {})) if (typeof v === 'string') metadata[k] = v
  return {
    id: record.id,
    status: record.status,
    target,
    executedOn: ran ? (target.startsWith('qpu') ? 'qpu' : 'simulator') : null,
    failure: record.failure
      ? {
          code: record.failure.code ?? 'unknown',
          message: record.failure.error ?? 'the provider gave no reason',
        }
      : null,
    metadata,
    createdAt: record.request ?? null,
    costUsd: record.cost_usd ?? null,
  }
}

/** Retry-After as seconds or an HTTP date, in ms (null when absent or unreadable). */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (!header) return null
  if (/^\d+(\.\d+)?$/.test(header.trim())) return Math.round(Number(header) * 1000)
  const at = Date.parse(header)
  return Number.isNaN(at) ? null : Math.max(0, at - now)
}

export class IonqV03Provider implements QpuProvider {
  readonly kind = 'ionq' as const
  private readonly base: string

  private readonly account: Pick<ProviderAccount, 'baseUrl' | 'apiKey'>
  private readonly fetcher: typeof fetch

  constructor(account: Pick<ProviderAccount, 'baseUrl' | 'apiKey'>, fetcher?: typeof fetch) {
    this.account = account
    this.fetcher = fetcher ?? ((input, init) => fetch(input, init))
    this.base = account.baseUrl.replace(/\/+$/, '')
  }

  async submit(request: QpuJobRequest): Promise<ProviderJob> {
    const body = {
      name: request.name,
      metadata: request.metadata,
      shots: request.shots,
      target: request.target,
      input: {
        format: 'ionq.circuit.v0',
        gateset: request.circuit.gateset ?? 'qis',
        qubits: request.circuit.qubits,
        circuit: request.circuit.circuit,
      },
    }
    const created = await this.call(
      'POST',
      '/jobs',
      body,
      z.looseObject({ id: z.string().min(1), status: JobRecordSchema.shape.status }),
    )
    return {
      id: created.id,
      status: created.status,
      target: request.target,
      executedOn: null,
      failure: null,
      metadata: { ...request.metadata },
      createdAt: null,
      costUsd: null,
    }
  }

  async get(providerJobId: string): Promise<ProviderJob> {
    return toJob(
      await this.call('GET', `/jobs/${encodeURIComponent(providerJobId)}`, undefined, JobRecordSchema),
    )
  }

  async results(providerJobId: string): Promise<ProviderResult> {
    const raw = await this.call(
      'GET',
      `/jobs/${encodeURIComponent(providerJobId)}/results`,
      undefined,
      ResultsSchema,
    )
    const probabilities = new Map<number, number>()
    for (const [k, v] of Object.entries(raw)) probabilities.set(Number(k), v)
    return { probabilities }
  }

  async findByMetadata(metadata: QpuJobMetadata, since: number): Promise<ProviderJob | null> {
    let next: string | null = null
    for (let page = 0; page < MAX_LOOKUP_PAGES; page++) {
      const query: string = `/jobs?limit=100${next ? `&next=${encodeURIComponent(next)}` : ''}`
      const list = await this.call('GET', query, undefined, JobListSchema)
      for (const record of list.jobs) {
        const m = record.metadata ?? {}
        if (m.svc_job_id === metadata.svc_job_id && m.svc_attempt === metadata.svc_attempt)
          return toJob(record)
      }
      const oldest = list.jobs.at(-1)?.request
      if (!list.next || list.jobs.length === 0 || (typeof oldest === 'number' && oldest * 1000 < since))
        return null
      next = list.next
    }
    return null
  }

  async cancel(providerJobId: string): Promise<ProviderJob> {
    await this.call(
      'PUT',
      `/jobs/${encodeURIComponent(providerJobId)}/status/cancel`,
      undefined,
      z.looseObject({ id: z.string() }),
    )
    return this.get(providerJobId)
  }

  async verify(): Promise<void> {
    await this.call('GET', '/jobs?limit=1', undefined, JobListSchema)
  }

  private async call<T>(method: string, path: string, body: unknown, schema: z.ZodType<T>): Promise<T> {
    const creates = method === 'POST'
    let res: Response
    try {
      res = await this.fetcher(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `apiKey ${this.account.apiKey}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      })
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err)
      // A create may have reached the provider before the connection failed: its outcome is unknown.
      throw new QpuProviderError(
        creates ? 'outcome_unknown' : 'retryable',
        `IonQ ${method} ${path.split('?')[0]} got no answer (${reason})`,
      )
    }
    // Read within a cap (decoded): a compressed bomb from the provider costs this worker no more
    // than the cap (shared/http/bounded-answer.ts).
    const answer = await readAnswerTextWithin(res, MAX_ANSWER_BYTES).catch(() => '')
    if (answer === null) {
      throw new QpuProviderError(
        creates ? 'outcome_unknown' : 'retryable',
        `IonQ answered ${method} ${path.split('?')[0]} with more than ${MAX_ANSWER_BYTES / (1024 * 1024)} MiB; nothing past that was read`,
        { status: res.status },
      )
    }
    const text = answer
    if (!res.ok) {
      const parsed = ErrorBodySchema.safeParse(safeJson(text))
      const detail = parsed.success
        ? [parsed.data.error, parsed.data.message].filter(Boolean).join(': ')
        : text.slice(0, 200)
      const message = `IonQ answered ${res.status} to ${method} ${path.split('?')[0]}${detail ? ` (${detail})` : ''}`
      const details = {
        status: res.status,
        ...(parsed.success && parsed.data.error ? { code: parsed.data.error } : {}),
      }
      if (res.status === 429 || res.status >= 500) {
        const after = retryAfterMs(res.headers.get('retry-after'))
        throw new QpuProviderError(
          'retryable',
          message,
          after === null ? details : { ...details, retryAfterMs: after },
        )
      }
      if (res.status === 401 || res.status === 403)
        throw new QpuProviderError('credentials', message, details)
      if (res.status === 404) throw new QpuProviderError('not_found', message, details)
      throw new QpuProviderError('rejected', message, details)
    }
    const parsed = schema.safeParse(safeJson(text))
    if (!parsed.success) {
      throw new QpuProviderError(
        creates ? 'outcome_unknown' : 'retryable',
        `IonQ answered ${method} ${path.split('?')[0]} with a body this adapter cannot read (${parsed.error.issues[0]?.message ?? 'not JSON'})`,
      )
    }
    return parsed.data
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The adapter for an account (one kind today). */
export function openQpuProvider(
  account: Pick<ProviderAccount, 'kind' | 'baseUrl' | 'apiKey'>,
  fetcher?: typeof fetch,
): QpuProvider {
  switch (account.kind) {
    case 'ionq':
      return new IonqV03Provider(account, fetcher)
  }
}
