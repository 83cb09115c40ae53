import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import { createChatCompletion } from './chat-completions'
import type { ProviderChatRequest } from './chat-wire'
import { BreakerBoard } from './circuit-breaker'
import { type ProviderRegistry, parseProviderConfig } from './provider-config'
import { backoffDelay, parseRetryAfter } from './retry-policy'
import { SseParser } from './sse'
import type { UpstreamDeps } from './upstream-client'

const config = {
  version: 1,
  providers: [
    {
      id: 'primary',
      kind: 'openai-compatible',
      baseUrl: 'https://primary.test/v1/',
      apiKeySecret: 'PRIMARY_KEY',
      models: { 'svc-cell': 'gpt-4o-mini' },
      timeoutMs: 200,
    },
    {
      id: 'backup',
      kind: 'openai-compatible',
      baseUrl: 'https://backup.test/v1',
      apiKeySecret: 'BACKUP_KEY',
      models: { 'svc-cell': 'llama-3.1-8b' },
      timeoutMs: 200,
    },
  ],
  retry: { maxRounds: 2, baseDelayMs: 100, maxDelayMs: 1000, maxRetryAfterMs: 3000 },
  breaker: { failureThreshold: 2, cooldownMs: 10_000 },
}
const env = { PRIMARY_KEY: 'sk-primary-secret', BACKUP_KEY: 'sk-backup-secret' }
const request: ProviderChatRequest = { model: 'svc-cell', messages: [{ role: 'user', content: 'Hi' }] }

type Handler = (body: Record<string, unknown>, init: RequestInit) => Response | Promise<Response>

function completion(model: string, text = 'Hello!') {
  return Response.json({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1700000000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 8, completion_tokens: 2, total_tokens: 10 },
  })
}

function sse(events: string[]): Response {
  return new Response(events.map((e) => `data: ${e}\n\n`).join(''), {
    headers: { 'content-type': 'text/event-stream' },
  })
}

const hang = (init: RequestInit) =>
  new Promise<Response>((_, reject) => {
    init.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')))
  })

/** A fetch that answers per host from a queue of handlers and records every call. */
function scripted(script: Record<string, Handler[]>) {
  const calls: { host: string; url: string; headers: Headers; body: Record<string, unknown> }[] = []
  const fetchImpl = (async (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = String(input)
    const host = new URL(url).host
    const body = JSON.parse(String(init.body)) as Record<string, unknown>
    calls.push({ host, url, headers: new Headers(init.headers), body })
    const handler = script[host]?.shift()
    if (!handler) throw new TypeError('fetch failed: connection refused')
    return handler(body, init)
  }) as typeof fetch
  return { fetchImpl, calls }
}

function setup(
  script: Record<string, Handler[]>,
  registry: ProviderRegistry = parseProviderConfig(JSON.stringify(config)),
) {
  const { fetchImpl, calls } = scripted(script)
  const sleeps: number[] = []
  let clock = 1_000_000
  const deps: Partial<UpstreamDeps> = {
    fetch: fetchImpl,
    now: () => clock,
    sleep: async (ms) => {
      sleeps.push(ms)
      clock += ms
    },
    random: () => 0.5,
    breakers: new BreakerBoard(),
  }
  const run = (overrides: Partial<Parameters<typeof createChatCompletion>[0]> = {}) =>
    createChatCompletion({ request, alias: 'svc-cell', mode: 'live', registry, env, deps, ...overrides })
  return {
    run,
    calls,
    sleeps,
    deps,
    advance: (ms: number) => {
      clock += ms
    },
  }
}

async function failure(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
  throw new Error('expected an AppError')
}

describe('upstream client: failover', () => {
  it('sends the upstream model name, the key from the named secret, and returns the alias to the client', async () => {
    const t = setup({ 'primary.test': [(body) => completion(String(body.model))] })
    const result = await t.run({ requestId: 'req_1' })
    expect(result.kind).toBe('json')
    if (result.kind !== 'json') return
    expect(t.calls[0]?.url).toBe('https://primary.test/v1/chat/completions')
    expect(t.calls[0]?.body.model).toBe('gpt-4o-mini')
    expect(t.calls[0]?.headers.get('authorization')).toBe('Bearer sk-primary-secret')
    expect(result.completion.model).toBe('svc-cell')
    expect(result.usage).toMatchObject({ promptTokens: 8, completionTokens: 2, totalTokens: 10 })
    expect(result.usageSource).toBe('upstream')
    expect(result.target).toEqual({ providerId: 'primary', upstreamModel: 'gpt-4o-mini' })
  })

  it.each([
    ['a 500', () => new Response('{}', { status: 500 })],
    ['a 503', () => new Response('down', { status: 503 })],
    ['a 429', () => new Response('{}', { status: 429 })],
    ['a connect error', () => Promise.reject(new TypeError('fetch failed'))],
    ['an invalid body', () => new Response('<html>', { status: 200 })],
    ['a 401 (our key is wrong)', () => new Response('{}', { status: 401 })],
  ])('fails over to the next target on %s', async (_, handler) => {
    const t = setup({ 'primary.test': [handler], 'backup.test': [(body) => completion(String(body.model))] })
    const result = await t.run()
    expect(result.target.providerId).toBe('backup')
    expect(t.calls.map((c) => c.host)).toEqual(['primary.test', 'backup.test'])
    expect(t.calls[1]?.body.model).toBe('llama-3.1-8b')
    expect(t.calls[1]?.headers.get('authorization')).toBe('Bearer sk-backup-secret')
    expect(result.attempts.map((a) => a.outcome)[1]).toBe('ok')
  })

  it('fails over when a target hangs past its timeout', async () => {
    const t = setup({
      'primary.test': [(_, init) => hang(init)],
      'backup.test': [(body) => completion(String(body.model))],
    })
    const result = await t.run()
    expect(result.target.providerId).toBe('backup')
    expect(result.attempts[0]).toMatchObject({ outcome: 'timeout', detail: 'timed out after 200 ms' })
  })

  it('does not fail over on a 4xx the client caused: the upstream message comes back as a client error', async () => {
    const t = setup({
      'primary.test': [
        () =>
          Response.json(
            {
              error: {
                message: "Invalid 'messages[0].content': gpt-4o-mini cannot read this",
                type: 'invalid_request_error',
                param: 'messages',
                code: 'invalid_value',
              },
            },
            { status: 400 },
          ),
      ],
      'backup.test': [(body) => completion(String(body.model))],
    })
    const err = await failure(t.run())
    expect(err.status).toBe(400)
    expect(err.code).toBe('invalid_value')
    expect(err.param).toBe('messages')
    expect(err.message).toBe("Invalid 'messages[0].content': svc-cell cannot read this")
    expect(t.calls.map((c) => c.host)).toEqual(['primary.test'])
  })

  it('answers 502 listing every target and how it failed, without secrets', async () => {
    const t = setup({
      'primary.test': [() => new Response('', { status: 503 }), () => new Response('', { status: 503 })],
      'backup.test': [
        () => Promise.reject(new TypeError('boom')),
        () => Promise.reject(new TypeError('boom')),
      ],
    })
    const err = await failure(t.run())
    expect(err.status).toBe(502)
    expect(err.code).toBe('upstream_unavailable')
    expect(err.message).toBe(
      'Every model provider for svc-cell failed: primary: HTTP 503 (2 attempts); backup: connection failed (TypeError) (2 attempts). Retry the request later.',
    )
    expect(JSON.stringify(err.toBody())).not.toContain('sk-')
  })

  it('answers 503 naming the missing configuration', async () => {
    const noConfig = await failure(setup({}).run({ registry: null }))
    expect(noConfig.status).toBe(503)
    expect(noConfig.message).toContain('MODEL_PROVIDERS')

    const noSecrets = await failure(setup({}).run({ env: {} }))
    expect(noSecrets.status).toBe(503)
    expect(noSecrets.code).toBe('provider_not_configured')
    expect(noSecrets.message).toContain('secret PRIMARY_KEY is not set')
    expect(noSecrets.message).toContain('secret BACKUP_KEY is not set')

    const registry = parseProviderConfig(JSON.stringify(config))
    const unmapped = await failure(
      setup({}, registry).run({ alias: 'svc-swarm', request: { ...request, model: 'svc-swarm' } }),
    )
    expect(unmapped.status).toBe(503)
    expect(unmapped.message).toContain('No model provider is configured for svc-swarm')
  })
})

describe('upstream client: retries', () => {
  it('retries after backoff, waiting at least the Retry-After the upstream asked for', async () => {
    const t = setup({
      'primary.test': [
        () => new Response('{}', { status: 429, headers: { 'retry-after': '2' } }),
        (body) => completion(String(body.model)),
      ],
      'backup.test': [() => new Response('{}', { status: 500 })],
    })
    const result = await t.run()
    expect(result.target.providerId).toBe('primary')
    expect(t.sleeps).toEqual([2000])
    expect(t.calls.map((c) => c.host)).toEqual(['primary.test', 'backup.test', 'primary.test'])
  })

  it('does not wait for a Retry-After beyond the cap: that target is dropped from the retry round', async () => {
    const t = setup({
      'primary.test': [() => new Response('{}', { status: 429, headers: { 'retry-after': '120' } })],
      'backup.test': [() => new Response('{}', { status: 500 }), (body) => completion(String(body.model))],
    })
    const result = await t.run()
    expect(result.target.providerId).toBe('backup')
    expect(t.calls.map((c) => c.host)).toEqual(['primary.test', 'backup.test', 'backup.test'])
    expect(t.sleeps[0]).toBeLessThanOrEqual(1000)
  })

  it('bounds the work: maxRounds passes, then 502 with a Retry-After for the client', async () => {
    const limited = () => new Response('{}', { status: 429, headers: { 'retry-after-ms': '1500' } })
    const t = setup({
      'primary.test': [limited, limited, limited],
      'backup.test': [limited, limited, limited],
    })
    const err = await failure(t.run())
    expect(t.calls).toHaveLength(4)
    expect(err.status).toBe(502)
    expect(err.headers['retry-after']).toBe('2')
  })

  it('parses Retry-After as seconds, HTTP date, or retry-after-ms, and jitters the backoff', () => {
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(parseRetryAfter(new Headers({ 'retry-after': '3' }), now)).toBe(3000)
    expect(parseRetryAfter(new Headers({ 'retry-after': '0.5' }), now)).toBe(500)
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:07 GMT' }), now)).toBe(7000)
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(250)
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }), now)).toBeNull()
    const settings = { maxRounds: 3, baseDelayMs: 100, maxDelayMs: 1000, maxRetryAfterMs: 5000 }
    expect(backoffDelay(1, settings, () => 0)).toBe(50)
    expect(backoffDelay(1, settings, () => 1)).toBe(100)
    expect(backoffDelay(3, settings, () => 1)).toBe(400)
    expect(backoffDelay(10, settings, () => 1)).toBe(1000)
  })
})

describe('upstream client: circuit breaker', () => {
  it('opens after consecutive failures, skips the dead target, then probes it after the cool-down', async () => {
    const ok = (body: Record<string, unknown>) => completion(String(body.model))
    const down = () => new Response('', { status: 503 })
    const t = setup({
      'primary.test': [down, down, ok],
      'backup.test': [ok, ok, ok, ok],
    })
    const oneRound = { ...config, retry: { ...config.retry, maxRounds: 1 } }
    const registry = parseProviderConfig(JSON.stringify(oneRound))
    await t.run({ registry })
    await t.run({ registry }) // second consecutive failure: breaker opens
    const skipped = await t.run({ registry })
    expect(skipped.attempts[0]).toMatchObject({ providerId: 'primary', outcome: 'circuit_open' })
    expect(t.calls.filter((c) => c.host === 'primary.test')).toHaveLength(2)
    t.advance(10_000)
    const probed = await t.run({ registry })
    expect(probed.target.providerId).toBe('primary')
    expect(t.calls.filter((c) => c.host === 'primary.test')).toHaveLength(3)
  })
})

describe('upstream client: streaming', () => {
  const streamRequest: ProviderChatRequest = { ...request, stream: true }
  const chunk = (content: string, finish: string | null = null) =>
    JSON.stringify({
      id: 'c1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'up',
      choices: [{ index: 0, delta: { content }, finish_reason: finish }],
    })
  const usage = JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'up',
    choices: [],
    usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
  })

  async function text(stream: ReadableStream<Uint8Array>) {
    const parser = new SseParser()
    const events: string[] = []
    const reader = stream.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      for (const e of parser.pushBytes(value)) if (e.kind === 'data') events.push(e.data)
    }
    return events
  }

  it('always asks the upstream for usage, and strips it from the client stream unless asked', async () => {
    const t = setup({ 'primary.test': [() => sse([chunk('Hi'), chunk('', 'stop'), usage, '[DONE]'])] })
    const result = await t.run({ request: streamRequest })
    expect(t.calls[0]?.body.stream_options).toEqual({ include_usage: true })
    expect(t.calls[0]?.headers.get('accept')).toBe('text/event-stream')
    if (result.kind !== 'stream') throw new Error('expected a stream')
    const events = await text(result.stream)
    expect(events).toHaveLength(3)
    expect(events.some((e) => e.includes('prompt_tokens'))).toBe(false)
    const outcome = await result.outcome
    expect(outcome).toMatchObject({ status: 'completed', usageSource: 'upstream', usage: { totalTokens: 7 } })
  })

  it('fails over when a stream target answers with an empty body, before any byte reached the client', async () => {
    const t = setup({
      'primary.test': [() => new Response('', { headers: { 'content-type': 'text/event-stream' } })],
      'backup.test': [() => sse([chunk('Hi', 'stop'), '[DONE]'])],
    })
    const result = await t.run({ request: streamRequest })
    expect(result.target.providerId).toBe('backup')
    expect(result.attempts[0]?.outcome).toBe('invalid_response')
  })

  it('does not fail over once streaming started: a cut becomes an error event and counts against the breaker', async () => {
    const encoder = new TextEncoder()
    let sent = false
    const cutAfterOne = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            if (!sent) {
              sent = true
              controller.enqueue(encoder.encode(`data: ${chunk('partial')}\n\n`))
            } else controller.error(new Error('reset'))
          },
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      )
    const t = setup({
      'primary.test': [cutAfterOne],
      'backup.test': [() => sse([chunk('x', 'stop'), '[DONE]'])],
    })
    const result = await t.run({ request: streamRequest })
    if (result.kind !== 'stream') throw new Error('expected a stream')
    const events = await text(result.stream)
    expect(JSON.parse(events.at(-1) ?? '{}').error.code).toBe('upstream_stream_interrupted')
    expect(t.calls.map((c) => c.host)).toEqual(['primary.test'])
    expect((await result.outcome).status).toBe('upstream_cut')
  })

  it('aborts the upstream request when the client aborts', async () => {
    let upstreamSignal: AbortSignal | undefined
    let reached: () => void = () => {}
    const upstreamReached = new Promise<void>((resolve) => {
      reached = resolve
    })
    const t = setup({
      'primary.test': [
        (_, init) => {
          upstreamSignal = init.signal ?? undefined
          reached()
          return hang(init)
        },
      ],
    })
    const client = new AbortController()
    const pending = failure(t.run({ signal: client.signal }))
    await upstreamReached
    client.abort()
    const err = await pending
    expect(err.status).toBe(499)
    expect(upstreamSignal?.aborted).toBe(true)
    expect(t.calls).toHaveLength(1)
  })
})
