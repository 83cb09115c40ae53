/**
 * Test support for the ReasoningJob tests inside the reasoning worker (vitest project
 * do-reasoning): the worker's env, tenants in the unit database, callers, a scriptable
 * OpenAI-compatible upstream on the global fetch for live keys (the objects run in the test's
 * isolate and see the replacement), and a driver that runs a job's alarm until it ends.
 */
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test'
import { env } from 'cloudflare:workers'
import { sql } from 'drizzle-orm'
import { type DatabaseEnv, openDatabase } from '../../shared/db/client'
import { tenants } from '../../shared/db/schema'
import type { Identity } from '../../shared/worker/request-context'
import { isTerminal, type JobCreateRequest, type ReasoningJob as JobRecord } from './job.schemas'
import { type JobCaller, type JobReply, jobObjectName } from './job-calls'
import type { ReasoningJobEnv } from './reasoning-job.context'
import type { ReasoningJob } from './reasoning-job.do'

export const reasoningEnv = env as unknown as ReasoningJobEnv &
  Required<Pick<DatabaseEnv, 'DATABASE_URL'>> & {
    readonly REASONING_JOB: DurableObjectNamespace<ReasoningJob>
  }
/** The worker's env is one object shared with the objects: tests may set variables on it. */
export const mutableEnv = env as unknown as Record<string, unknown>

export async function withDb<T>(work: (db: ReturnType<typeof openDatabase>['db']) => Promise<T>): Promise<T> {
  const database = openDatabase(reasoningEnv, { max: 1 })
  try {
    return await work(database.db)
  } finally {
    await database.close()
  }
}

export async function createTenant(planId = 'team'): Promise<string> {
  return withDb(async (db) => {
    const [row] = await db
      .insert(tenants)
      .values({ name: `reasoning ${crypto.randomUUID()}`, planId })
      .returning({ id: tenants.id })
    return row!.id
  })
}

export async function identityFor(
  mode: 'test' | 'live',
  planId = 'team',
  options: { tenantId?: string; role?: Identity['role']; keyId?: string } = {},
): Promise<Identity> {
  return {
    tenantId: options.tenantId ?? (await createTenant(planId)),
    mode,
    principal: { kind: 'api_key', keyId: options.keyId ?? `key-${mode}`, mode },
    role: options.role ?? 'owner',
    planId,
    scopes: [],
  }
}

export function callerOf(identity: Identity): JobCaller {
  return {
    tenantId: identity.tenantId,
    mode: identity.mode,
    principal: identity.principal.kind === 'api_key' ? `key:${identity.principal.keyId}` : 'sub:x',
    role: identity.role,
  }
}

export function jobStub(tenantId: string, jobId: string): DurableObjectStub<ReasoningJob> {
  return reasoningEnv.REASONING_JOB.get(reasoningEnv.REASONING_JOB.idFromName(jobObjectName(tenantId, jobId)))
}

export function jobRequest(overrides: Partial<JobCreateRequest> = {}): JobCreateRequest {
  return {
    prompt: 'Which is larger, 2^10 or 10^3? Explain briefly.',
    model: 'svc-hive',
    product: 'simulation_cloud',
    ...overrides,
  }
}

export function unwrap(reply: JobReply): JobRecord {
  if (!reply.ok) throw new Error(`job call failed: ${JSON.stringify(reply.error)}`)
  return reply.job
}

export interface JobHandle {
  readonly jobId: string
  readonly identity: Identity
  readonly stub: DurableObjectStub<ReasoningJob>
}

export async function createJob(
  identity: Identity,
  request: JobCreateRequest = jobRequest(),
): Promise<JobHandle & { reply: JobReply }> {
  const jobId = crypto.randomUUID()
  const stub = jobStub(identity.tenantId, jobId)
  const reply = (await stub.create({ jobId, identity, request, requestId: 'req_test' })) as JobReply
  return { jobId, identity, stub, reply }
}

export async function jobOf(handle: JobHandle): Promise<JobRecord> {
  return unwrap((await handle.stub.get(callerOf(handle.identity))) as JobReply)
}

/**
 * Makes every due time now (time travel for retries), then runs the alarm. Now, not 0: anything that
 * re-arms the alarm meanwhile (a call from the run queue) must get a real time.
 */
export async function runDueNow(handle: JobHandle): Promise<boolean> {
  await runInDurableObject(handle.stub, (_instance: ReasoningJob, state) => {
    state.storage.sql.exec(`UPDATE due_work SET due_at = min(due_at, ?)`, Date.now())
  })
  return runDurableObjectAlarm(handle.stub)
}

/**
 * Runs the job's alarm until the job is terminal and nothing is due (the runtime may run it on its
 * own meanwhile: that is the same alarm). Retries wait for nobody: their due time is moved now.
 */
export async function driveToEnd(handle: JobHandle, rounds = 20): Promise<JobRecord> {
  for (let i = 0; i < rounds; i++) {
    await runDueNow(handle)
    const job = await jobOf(handle)
    const idle = await runInDurableObject(
      handle.stub,
      (_instance: ReasoningJob, state) =>
        state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM due_work`).one().n === 0,
    )
    if (isTerminal(job.status) && idle) return job
  }
  throw new Error(`job ${handle.jobId} did not end`)
}

export async function indexRow(
  jobId: string,
): Promise<{ status: string; record: JobRecord; record_version: number } | null> {
  return withDb(async (db) => {
    const result = await db.execute<{ status: string; record: JobRecord; record_version: number }>(
      sql`select status, record, record_version from reasoning_jobs where id = ${jobId}::uuid`,
    )
    return result.rows[0] ?? null
  })
}

export async function ledgerRows(tenantId: string): Promise<
  {
    request_id: string
    endpoint: string
    model: string
    prompt_tokens: number
    completion_tokens: number
    mode: string
  }[]
> {
  return withDb(async (db) => {
    const result = await db.execute<{
      request_id: string
      endpoint: string
      model: string
      prompt_tokens: number
      completion_tokens: number
      mode: string
    }>(
      sql`select request_id, endpoint, model, prompt_tokens, completion_tokens, mode from usage_ledger where tenant_id = ${tenantId}::uuid order by created_at`,
    )
    return result.rows
  })
}

// --- a scriptable upstream for live keys ----------------------------------------------------------

export const UPSTREAM = 'https://upstream.reasoning-test/v1'

export type UpstreamStep =
  /** A chat.completion whose text depends on the seed, with logprobs when asked. */
  | { kind: 'answer' }
  | { kind: 'status'; status: number }
  /** Never answers until released (or the request is aborted). */
  | { kind: 'hang' }

export interface UpstreamFake {
  /** Answers, in order; the last one repeats. */
  script: UpstreamStep[]
  requests: Record<string, unknown>[]
  /**
   * Resolves the hanging requests (they then answer normally). Call it inside the job's object
   * (runInDurableObject): the waits belong to its I/O context.
   */
  release(): void
  /** Drops the hanging requests of an object that was torn down. */
  forget(): void
}

let waiting: (() => void)[] = []
export const upstream: UpstreamFake = {
  script: [],
  requests: [],
  release() {
    const all = waiting
    waiting = []
    for (const w of all) w()
  },
  forget() {
    waiting = []
  },
}

export function providersConfig(): string {
  return JSON.stringify({
    version: 1,
    providers: [
      {
        id: 'fake',
        kind: 'openai-compatible',
        baseUrl: UPSTREAM,
        models: { 'svc-hive': 'fake-hive', 'svc-swarm': 'fake-swarm' },
        timeoutMs: 60_000,
      },
    ],
    retry: { maxRounds: 1, baseDelayMs: 0, maxDelayMs: 0, maxRetryAfterMs: 0 },
    breaker: { failureThreshold: 100, cooldownMs: 1_000 },
  })
}

function answerFor(body: Record<string, unknown>): Response {
  const seed = Number(body.seed ?? 0)
  const format = body.response_format as { type?: string } | undefined
  const text =
    format?.type === 'json_schema'
      ? JSON.stringify({ verdict: 'A', reason: 'A is more complete' })
      : `Answer ${seed}: 2^10 = 1024 is larger than 10^3 = 1000${'!'.repeat(seed)}`
  const words = text.split(' ')
  const logprobs =
    body.logprobs === true
      ? {
          content: words.map((token, i) => ({
            token,
            logprob: -((seed + 1) * (i % 3)) / 10,
            bytes: [],
            top_logprobs: [],
          })),
          refusal: null,
        }
      : null
  return Response.json({
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1,
    model: String(body.model),
    choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs, finish_reason: 'stop' }],
    usage: { prompt_tokens: 40, completion_tokens: words.length, total_tokens: 40 + words.length },
  })
}

const realFetch = globalThis.fetch

/** Installs the fake upstream (and MODEL_PROVIDERS) for live-key jobs. */
export function installUpstream(script: UpstreamStep[]): void {
  upstream.script = script
  upstream.requests = []
  waiting = []
  mutableEnv.MODEL_PROVIDERS = providersConfig()
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    if (!url.startsWith(UPSTREAM)) return realFetch(input, init)
    const body = JSON.parse(String(init?.body ?? '{}')) as Record<string, unknown>
    upstream.requests.push(body)
    const step = upstream.script.length > 1 ? upstream.script.shift()! : upstream.script[0]!
    if (step.kind === 'status') {
      return Response.json(
        { error: { message: 'upstream trouble', type: 'server_error' } },
        { status: step.status },
      )
    }
    if (step.kind === 'hang') await new Promise<void>((resolve) => waiting.push(resolve))
    return answerFor(body)
  }) as typeof fetch
}

export function uninstallUpstream(): void {
  upstream.forget()
  globalThis.fetch = realFetch
  delete mutableEnv.MODEL_PROVIDERS
}
