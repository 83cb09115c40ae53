/**
 * Test support for the AgentRun tests that run inside the code worker (vitest project do-code):
 * turn calls as the code worker builds them, NDJSON readers, a scriptable OpenAI-compatible
 * upstream on the global fetch (the object runs in the test's isolate, so it sees the replacement), and a
 * RateLimiter stand-in for live-key tests (the real one needs Postgres for live balances).
 */
import { runInDurableObject } from 'cloudflare:test'
import { env } from 'cloudflare:workers'
import { vi } from 'vitest'
import type { AcquireInput, AcquireResult, RateLimitSnapshot, SettleInput } from '../../shared/metering'
import type { Identity } from '../../shared/worker/request-context'
import { type AgentEvent, NdjsonEventParser } from './agent-events'
import type { AgentRunEnv } from './agent-run.context'
import type { AgentRun, RunOwner, TurnCall } from './agent-run.do'
import { parseTurnRequest, turnBodyHash } from './turn.schemas'
import { turnSettingsOf } from './turn-settings'

/** Waits until the run's row in the Postgres index is as new as the run (no index write due). */
export async function indexWritten(run: RunHandle): Promise<void> {
  await vi.waitFor(
    async () => {
      const due = await runInDurableObject(run.object, (_instance: AgentRun, state) =>
        state.storage.sql.exec(`SELECT 1 FROM due_work WHERE kind = 'index_sync'`).toArray(),
      )
      if (due.length > 0) throw new Error('the index write is still due')
    },
    { timeout: 5_000, interval: 20 },
  )
}

/** The hosting worker's env as the tests see it: the object's env plus its namespace. */
export const codeEnv = env as unknown as AgentRunEnv & {
  readonly AGENT_RUN: DurableObjectNamespace<AgentRun>
}
/** The worker's env is one object shared with the objects: tests may set variables on it. */
export const mutableEnv = env as unknown as Record<string, unknown>

export function identityFor(
  mode: 'test' | 'live',
  planId = 'team',
  tenantId = crypto.randomUUID(),
): Identity {
  return {
    tenantId,
    mode,
    principal: { kind: 'api_key', keyId: `key-${mode}`, mode },
    role: 'owner',
    planId,
    scopes: [],
  }
}

export function ownerOf(identity: Identity): RunOwner {
  return {
    tenantId: identity.tenantId,
    mode: identity.mode,
    principalId: identity.principal.kind === 'api_key' ? `key:${identity.principal.keyId}` : 'sub:x',
  }
}

export const READ_FILE = {
  name: 'read_file',
  description: 'Reads a file of the workspace',
  input_schema: {
    type: 'object',
    properties: { path: { type: 'string' } },
    required: ['path'],
    additionalProperties: false,
  },
  tags: ['read-only'],
}

export const WRITE_FILE = {
  name: 'write_file',
  description: 'Writes a file of the workspace',
  input_schema: {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' } },
    required: ['path', 'content'],
  },
  tags: ['edit'],
}

export const DELETE_TREE = {
  name: 'delete_tree',
  description: 'Deletes a directory tree',
  input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  tags: ['destructive'],
}

export interface RunHandle {
  runId: string
  identity: Identity
  object: DurableObjectStub<AgentRun>
  turns: number
  /** Highest seq seen: what a client sends as `cursor` with its next turn. */
  lastSeq: number
}

export function newRun(mode: 'test' | 'live' = 'test', planId = 'team'): RunHandle {
  const runId = crypto.randomUUID()
  const identity = identityFor(mode, planId)
  return {
    runId,
    identity,
    object: codeEnv.AGENT_RUN.get(codeEnv.AGENT_RUN.newUniqueId()),
    turns: 0,
    lastSeq: 0,
  }
}

export async function turnCall(run: RunHandle, body: Record<string, unknown>): Promise<TurnCall> {
  const request = parseTurnRequest({
    protocol: 'svc.code.v1',
    session_id: 'sess-1',
    run_id: run.runId,
    model: 'svc-comb',
    mode: 'edit',
    request: '',
    workspace: { root: '/repo' },
    transcript: [],
    capabilities: {},
    ...body,
  })
  const testMode = run.identity.principal.kind === 'api_key' && run.identity.principal.mode === 'test'
  return {
    owner: ownerOf(run.identity),
    identity: run.identity,
    runId: run.runId,
    request,
    bodyHash: await turnBodyHash(request, run.runId),
    settings: turnSettingsOf(request, {
      testMode,
      billingPlanId: run.identity.planId,
      webSearch: true,
      requestId: 'req-test',
    }),
  }
}

/** Reads a whole NDJSON body. */
export async function readAll(response: Response): Promise<AgentEvent[]> {
  const parser = new NdjsonEventParser()
  const events: AgentEvent[] = []
  const reader = response.body!.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    events.push(...parser.push(value))
  }
  events.push(...parser.end())
  return events
}

/**
 * Posts the run's next turn with `cursor` = the last seq seen (as a client does) and reads its
 * whole stream; non-200 answers come back with their status and no events.
 */
export async function runTurn(
  run: RunHandle,
  body: Record<string, unknown>,
): Promise<{ status: number; events: AgentEvent[] }> {
  run.turns += 1
  const call = await turnCall(run, { turn_id: `t${run.turns}`, cursor: run.lastSeq, ...body })
  const response = await run.object.postTurn(call)
  if (response.status !== 200) return { status: response.status, events: [] }
  const events = await readAll(response)
  run.lastSeq = Math.max(run.lastSeq, ...events.map((e) => e.seq))
  return { status: 200, events }
}

/** Reads a stream event by event. */
export class EventReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>
  private readonly parser = new NdjsonEventParser()
  private queue: AgentEvent[] = []
  readonly seen: AgentEvent[] = []
  done = false

  constructor(response: Response) {
    this.reader = response.body!.getReader()
  }

  /** The next event, or null at the end of the stream. */
  async next(): Promise<AgentEvent | null> {
    while (this.queue.length === 0) {
      if (this.done) return null
      const { done, value } = await this.reader.read()
      if (done) {
        this.done = true
        this.queue.push(...this.parser.end())
      } else {
        this.queue.push(...this.parser.push(value))
      }
    }
    const event = this.queue.shift()!
    this.seen.push(event)
    return event
  }

  /** Reads until an event of `type` (returned) or the end (throws). */
  async until(type: AgentEvent['type']): Promise<AgentEvent> {
    for (;;) {
      const event = await this.next()
      if (!event)
        throw new Error(`stream ended before ${type}; saw ${this.seen.map((e) => e.type).join(', ')}`)
      if (event.type === type) return event
    }
  }

  async rest(): Promise<AgentEvent[]> {
    const out: AgentEvent[] = []
    for (;;) {
      const event = await this.next()
      if (!event) return out
      out.push(event)
    }
  }

  cancel(): Promise<void> {
    return this.reader.cancel()
  }
}

// ---------------------------------------------------------------------------------------------
// A scriptable OpenAI-compatible upstream on the global fetch

export const UPSTREAM = 'https://upstream.agent-test/v1'

export type UpstreamScript =
  | { kind: 'text'; pieces: string[] }
  | { kind: 'status'; status: number }
  /** Never answers until the request is aborted. */
  | { kind: 'hang' }

export interface UpstreamFake {
  /** Answers, in order; the last one repeats. */
  script: UpstreamScript[]
  requests: { body: Record<string, unknown>; signal: AbortSignal | null }[]
  aborted: number
}

export const upstream: UpstreamFake = { script: [], requests: [], aborted: 0 }

export function providersConfig(): string {
  return JSON.stringify({
    version: 1,
    providers: [
      {
        id: 'fake',
        kind: 'openai-compatible',
        baseUrl: UPSTREAM,
        models: { 'svc-comb': 'fake-model', 'svc-cell': 'fake-small' },
        timeoutMs: 60_000,
      },
    ],
    retry: { maxRounds: 1, baseDelayMs: 0, maxDelayMs: 0, maxRetryAfterMs: 0 },
    breaker: { failureThreshold: 100, cooldownMs: 1_000 },
  })
}

function sse(chunks: unknown[]): string {
  return `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`
}

export function upstreamAnswer(script: UpstreamScript, signal: AbortSignal | null): Response {
  if (script.kind === 'status') {
    return new Response(JSON.stringify({ error: { message: 'upstream trouble', type: 'server_error' } }), {
      status: script.status,
      headers: { 'content-type': 'application/json' },
    })
  }
  if (script.kind === 'hang') {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        signal?.addEventListener('abort', () => {
          upstream.aborted += 1
          controller.error(signal.reason)
        })
      },
    })
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
  }
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: 'fake-model' }
  const chunks: unknown[] = [{ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] }]
  for (const piece of script.pieces)
    chunks.push({ ...base, choices: [{ index: 0, delta: { content: piece } }] })
  chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })
  chunks.push({
    ...base,
    choices: [],
    usage: {
      prompt_tokens: 100,
      completion_tokens: script.pieces.length,
      total_tokens: 100 + script.pieces.length,
    },
  })
  return new Response(sse(chunks), { headers: { 'content-type': 'text/event-stream' } })
}

const realFetch = globalThis.fetch

/** Installs the fake upstream (and MODEL_PROVIDERS) for live-key turns. */
export function installUpstream(script: UpstreamScript[]): void {
  upstream.script = script
  upstream.requests = []
  upstream.aborted = 0
  mutableEnv.MODEL_PROVIDERS = providersConfig()
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    if (!url.startsWith(UPSTREAM)) return realFetch(input, init)
    upstream.requests.push({ body: JSON.parse(String(init?.body ?? '{}')), signal: init?.signal ?? null })
    const step = upstream.script.length > 1 ? upstream.script.shift()! : upstream.script[0]!
    return upstreamAnswer(step, init?.signal ?? null)
  }) as typeof fetch
}

export function uninstallUpstream(): void {
  globalThis.fetch = realFetch
  delete mutableEnv.MODEL_PROVIDERS
}

// ---------------------------------------------------------------------------------------------
// A RateLimiter stand-in

const SNAPSHOT: RateLimitSnapshot = {
  limitRequests: 600,
  remainingRequests: 599,
  resetRequestsMs: 60_000,
  limitTokens: 2_000_000,
  remainingTokens: 1_990_000,
  resetTokensMs: 60_000,
}

export interface LimiterFake {
  acquired: { estimatedTokens: number; estimatedQuantity?: number; model: string }[]
  /** Settles the object stored (acknowledged). */
  settled: SettleInput[]
  refuse: AcquireResult | null
  /** Refusals for acquires of one metered resource only (a model alias, `web_search`, ...). */
  refuseModels: Partial<Record<string, AcquireResult>>
  /** Settle calls still to fail (the object unreachable) before they succeed again. */
  failSettles: number
}

export const limiter: LimiterFake = {
  acquired: [],
  settled: [],
  refuse: null,
  refuseModels: {},
  failSettles: 0,
}

const realLimiter = mutableEnv.RATE_LIMITER

/** Speaks the RateLimiter's RPC protocol (shared/metering/metering.schemas.ts). */
export function installLimiter(): void {
  limiter.acquired = []
  limiter.settled = []
  limiter.refuse = null
  limiter.refuseModels = {}
  limiter.failSettles = 0
  const limiterObject = {
    async acquire(input: AcquireInput): Promise<AcquireResult> {
      limiter.acquired.push({
        estimatedTokens: input.estimatedTokens,
        model: input.model,
        ...(input.estimatedQuantity === undefined ? {} : { estimatedQuantity: input.estimatedQuantity }),
      })
      return limiter.refuseModels[input.model] ?? limiter.refuse ?? { kind: 'granted', snapshot: SNAPSHOT }
    },
    async settleMany(inputs: SettleInput[]) {
      if (limiter.failSettles > 0) {
        limiter.failSettles -= 1
        throw new Error('the RateLimiter is unreachable')
      }
      limiter.settled.push(...inputs)
      return inputs.map(() => ({ recorded: true, creditsUnits: 0 }))
    },
    async snapshot() {
      return SNAPSHOT
    },
  }
  mutableEnv.RATE_LIMITER = { idFromName: (name: string) => name, get: () => limiterObject }
}

export function uninstallLimiter(): void {
  mutableEnv.RATE_LIMITER = realLimiter
}

export const TEST_SNAPSHOT = SNAPSHOT
