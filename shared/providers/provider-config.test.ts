import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import { createChatCompletion } from './chat-completions'
import {
  ProviderConfigError,
  parseProviderConfig,
  providerRegistryFromEnv,
  requireProvider,
} from './provider-config'
import { upstreamRequestBody } from './upstream-client'
import type { WorkersAiBinding } from './workers-ai'

const example = {
  version: 1,
  providers: [
    {
      id: 'openai',
      kind: 'openai-compatible',
      baseUrl: 'https://api.openai.com/v1',
      apiKeySecret: 'OPENAI_API_KEY',
      models: { 'svc-cell': 'gpt-4o-mini', 'svc-comb': 'gpt-4o' },
      reasoningEffort: { ultracode: 'high', max: null },
    },
    {
      id: 'workers-ai',
      kind: 'workers-ai',
      binding: 'AI',
      models: { 'svc-cell': '@cf/meta/llama-3.1-8b-instruct' },
    },
  ],
  routes: { 'svc-cell': ['workers-ai', 'openai'] },
}

describe('provider configuration', () => {
  it('parses the documented example with defaults and resolves ordered targets per alias', () => {
    const registry = parseProviderConfig(JSON.stringify(example))
    expect(registry.targetsFor('svc-cell').map((t) => t.key)).toEqual([
      'workers-ai/@cf/meta/llama-3.1-8b-instruct',
      'openai/gpt-4o-mini',
    ])
    expect(registry.targetsFor('svc-comb').map((t) => t.provider.id)).toEqual(['openai'])
    expect(registry.targetsFor('svc-swarm')).toEqual([])
    expect(registry.config.retry).toEqual({
      maxRounds: 2,
      baseDelayMs: 200,
      maxDelayMs: 2000,
      maxRetryAfterMs: 5000,
    })
    expect(registry.config.providers[0]?.timeoutMs).toBe(30_000)
  })

  it.each([
    ['{', /not valid JSON/],
    [JSON.stringify({ ...example, version: 2 }), /version/],
    [
      JSON.stringify({ ...example, routes: { 'svc-cell': ['nope'] } }),
      /routes\.svc-cell\[0\]: unknown provider "nope"/,
    ],
    [JSON.stringify({ ...example, routes: { 'svc-comb': ['workers-ai'] } }), /has no model for svc-comb/],
    [
      JSON.stringify({ ...example, providers: [example.providers[0], example.providers[0]] }),
      /duplicate provider id/,
    ],
    [
      JSON.stringify({ ...example, providers: [{ ...example.providers[0], apiKey: 'sk-inline' }] }),
      /providers\[0\] has unknown field apiKey; remove it/,
    ],
    [
      JSON.stringify({
        ...example,
        providers: [{ ...example.providers[0], headers: { Authorization: 'Bearer x' } }],
      }),
      /must not contain authorization/,
    ],
    [
      JSON.stringify({ ...example, providers: [{ ...example.providers[0], models: { 'gpt-4': 'x' } }] }),
      /models/,
    ],
  ])('rejects an invalid configuration with the problem named (%#)', (json, pattern) => {
    expect(() => parseProviderConfig(json)).toThrowError(ProviderConfigError)
    expect(() => parseProviderConfig(json)).toThrowError(pattern)
  })

  it('reads MODEL_PROVIDERS once per isolate and answers 503 when it is invalid', () => {
    expect(providerRegistryFromEnv({})).toBeNull()
    const json = JSON.stringify(example)
    const first = providerRegistryFromEnv({ MODEL_PROVIDERS: json })
    expect(providerRegistryFromEnv({ MODEL_PROVIDERS: json })).toBe(first)
    try {
      providerRegistryFromEnv({ MODEL_PROVIDERS: '{"version":1}' })
      expect.unreachable()
    } catch (err) {
      expect(err).toBeInstanceOf(AppError)
      expect((err as AppError).status).toBe(503)
      expect((err as AppError).code).toBe('provider_config_invalid')
      expect((err as AppError).internalMessage).toContain('providers')
    }
  })

  it('maps reasoning_effort per provider (default: xhigh/max/ultracode → high) and drops stream_options on JSON requests', () => {
    const registry = parseProviderConfig(JSON.stringify(example))
    const openai = registry.targetsFor('svc-cell')[1]!
    const req = {
      model: 'svc-cell',
      messages: [{ role: 'user' as const, content: 'x' }],
      stream_options: { include_usage: true },
    }
    expect(upstreamRequestBody({ ...req, reasoning_effort: 'ultracode' }, openai).reasoning_effort).toBe(
      'high',
    )
    expect(upstreamRequestBody({ ...req, reasoning_effort: 'max' }, openai)).not.toHaveProperty(
      'reasoning_effort',
    )
    expect(upstreamRequestBody({ ...req, reasoning_effort: 'low' }, openai).reasoning_effort).toBe('low')
    expect(upstreamRequestBody(req, openai)).not.toHaveProperty('stream_options')
    const defaults = parseProviderConfig(
      JSON.stringify({ version: 1, providers: [{ ...example.providers[0], reasoningEffort: undefined }] }),
    ).targetsFor('svc-cell')[0]!
    expect(upstreamRequestBody({ ...req, reasoning_effort: 'xhigh' }, defaults).reasoning_effort).toBe('high')
  })
})

describe('requireProvider', () => {
  it('returns the targets of a served alias and one 503 naming the alias otherwise, set or not', () => {
    const env = { MODEL_PROVIDERS: JSON.stringify(example) }
    expect(requireProvider(env, 'svc-cell').targets.map((t) => t.provider.id)).toEqual([
      'workers-ai',
      'openai',
    ])
    for (const [unserved, alias] of [
      [{}, 'svc-cell'],
      [env, 'svc-swarm'],
    ] as const) {
      let error: unknown
      try {
        requireProvider(unserved, alias)
      } catch (err) {
        error = err
      }
      expect(error).toBeInstanceOf(AppError)
      expect(error).toMatchObject({
        status: 503,
        code: 'provider_not_configured',
        message: `No model provider is configured for ${alias} on this deployment. The operator must map ${alias} to a provider in MODEL_PROVIDERS (see docs/providers.md); test keys (svc_sk_test_) use the built-in model and need none.`,
      })
    }
  })
})

describe('Workers AI targets', () => {
  const registry = parseProviderConfig(JSON.stringify({ ...example, routes: { 'svc-cell': ['workers-ai'] } }))
  const request = {
    model: 'svc-cell',
    messages: [{ role: 'user' as const, content: [{ type: 'text', text: 'Hi' }] }],
  }

  it('turns a native Workers AI answer into a chat.completion', async () => {
    const seen: { model: string; inputs: Record<string, unknown> }[] = []
    const AI: WorkersAiBinding = {
      run: async (model, inputs) => {
        seen.push({ model, inputs })
        return {
          response: 'Hello from the edge',
          usage: { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 },
        }
      },
    }
    const result = await createChatCompletion({
      request,
      alias: 'svc-cell',
      mode: 'live',
      registry,
      env: { AI },
    })
    if (result.kind !== 'json') throw new Error('expected JSON')
    expect(seen[0]?.model).toBe('@cf/meta/llama-3.1-8b-instruct')
    expect(seen[0]?.inputs.messages).toEqual([{ role: 'user', content: 'Hi' }])
    expect(result.completion.choices[0]?.message.content).toBe('Hello from the edge')
    expect(result.completion.model).toBe('svc-cell')
    expect(result.usage.totalTokens).toBe(9)
  })

  it('turns a native Workers AI stream into chat.completion.chunk events with usage', async () => {
    const native = [
      'data: {"response":"Hel"}\n\n',
      'data: {"response":"lo"}\n\n',
      'data: {"response":"","usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n',
      'data: [DONE]\n\n',
    ]
    const AI: WorkersAiBinding = {
      run: async () =>
        new ReadableStream<Uint8Array>({
          start(controller) {
            for (const line of native) controller.enqueue(new TextEncoder().encode(line))
            controller.close()
          },
        }),
    }
    const result = await createChatCompletion({
      request: { ...request, stream: true },
      alias: 'svc-cell',
      mode: 'live',
      registry,
      env: { AI },
    })
    if (result.kind !== 'stream') throw new Error('expected a stream')
    const text = await new Response(result.stream).text()
    const chunks = text
      .split('\n\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)))
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello')
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop')
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
    expect((await result.outcome).usage.totalTokens).toBe(5)
  })

  it('treats a missing binding as missing configuration (503) and a thrown error as an upstream failure (502)', async () => {
    const missing = await createChatCompletion({
      request,
      alias: 'svc-cell',
      mode: 'live',
      registry,
      env: {},
    }).catch((e) => e)
    expect(missing).toMatchObject({ status: 503, code: 'provider_not_configured' })
    expect((missing as AppError).message).toContain('Workers AI binding AI is not bound')
    const AI: WorkersAiBinding = {
      run: async () => {
        throw new Error('3040: Capacity temporarily exceeded')
      },
    }
    const failed = await createChatCompletion({
      request,
      alias: 'svc-cell',
      mode: 'live',
      registry,
      env: { AI },
      deps: { sleep: async () => {} },
    }).catch((e) => e)
    expect(failed).toMatchObject({ status: 502, code: 'upstream_unavailable' })
  })
})
