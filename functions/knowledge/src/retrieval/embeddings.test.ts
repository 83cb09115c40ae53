/**
 * The OpenAI-compatible embeddings client against the wire-faithful fake (test/fakes/
 * openai-embeddings.ts), failures included, and the configuration it is built from.
 */
import { describe, expect, it } from 'vitest'
import { AppError } from '../../../../shared/http/errors'
import type { Identity } from '../../../../shared/worker/request-context'
import { createOpenAiEmbeddingsFake, fakeEmbedding } from '../../../../test/fakes/openai-embeddings'
import { embedderFor, embeddingsProviderFromEnv } from './embeddings'
import { testEmbedding } from './test-embedding'

const live: Identity = {
  tenantId: crypto.randomUUID(),
  mode: 'live',
  principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'live' },
  role: 'owner',
  planId: 'pro',
  scopes: [],
}
const test: Identity = {
  ...live,
  mode: 'test',
  principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
}

function setup(overrides: Record<string, unknown> = {}) {
  const fake = createOpenAiEmbeddingsFake()
  const env = {
    EMBEDDINGS_PROVIDER: JSON.stringify({
      kind: 'openai-compatible',
      baseUrl: 'https://embeddings.example/v1',
      apiKeySecret: 'EMBEDDINGS_API_KEY',
      model: 'text-embedding-3-small',
      dimensions: 256,
      timeoutMs: 300,
      retries: 2,
      ...overrides,
    }),
    EMBEDDINGS_API_KEY: fake.apiKey,
  }
  const embedder = embedderFor(env, live, fake.fetch)!
  return { fake, embedder }
}

async function failure(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(AppError)
  return err as AppError
}

describe('OpenAI-compatible embeddings', () => {
  it('sends the wire request, decodes base64 float32 in input order, in batches', async () => {
    const { fake, embedder } = setup({ batchSize: 64 })
    const texts = Array.from({ length: 130 }, (_, i) => `text number ${i} about topic ${i % 7}`)
    const vectors = await embedder.embed(texts)
    expect(embedder.space).toEqual({
      id: 'text-embedding-3-small@256',
      model: 'text-embedding-3-small',
      dimensions: 256,
    })
    expect(fake.requests).toHaveLength(3)
    expect(fake.requests[0]).toMatchObject({
      path: '/v1/embeddings',
      authorization: `Bearer ${fake.apiKey}`,
      body: { model: 'text-embedding-3-small', encoding_format: 'base64', dimensions: 256 },
    })
    expect((fake.requests[2]!.body as { input: string[] }).input).toHaveLength(2)
    vectors.forEach((vector, i) => {
      // What the fake sent for this input, decoded exactly (float32 carries it).
      expect(vector).toEqual(fakeEmbedding(texts[i]!, 'text-embedding-3-small', 256))
    })
  })

  it('the built-in test embedding serves test keys with no provider at all', async () => {
    const embedder = embedderFor({}, test)!
    expect(embedder.space.id).toBe('svc-test-embedding@256')
    expect(await embedder.embed(['a b'])).toEqual([testEmbedding('a b')])
    expect(embedderFor({}, live)).toBeNull()
  })

  it('retries a 429 (Retry-After), a 500, a timeout, a broken body, then succeeds', async () => {
    for (const kind of ['status_429', 'status_500', 'timeout', 'malformed_json', 'truncated'] as const) {
      const { fake, embedder } = setup()
      fake.fail(kind, 2)
      const [vector] = await embedder.embed(['hello world'])
      expect(vector, kind).toHaveLength(256)
      expect(
        fake.requests.map((r) => r.failure),
        kind,
      ).toEqual([kind, kind, null])
    }
  })

  it('gives up with 502 embeddings_provider_failed after its retries, and at once on a 401', async () => {
    const { fake, embedder } = setup()
    fake.fail('status_500')
    const err = await failure(embedder.embed(['x']))
    expect([err.status, err.code]).toEqual([502, 'embeddings_provider_failed'])
    expect(err.message).not.toContain('500')
    expect(fake.requests).toHaveLength(3)

    const other = setup()
    other.fake.fail('status_401')
    expect((await failure(other.embedder.embed(['x']))).status).toBe(502)
    expect(other.fake.requests).toHaveLength(1)
  })

  it('refuses vectors of another dimension than configured', async () => {
    const { fake, embedder } = setup()
    fake.fail('wrong_dimensions', 1)
    const err = await failure(embedder.embed(['x']))
    expect([err.status, err.code]).toEqual([502, 'embedding_dimension_mismatch'])
    expect(err.message).toContain('128 dimensions')
  })
})

describe('EMBEDDINGS_PROVIDER', () => {
  it('names every problem in the log and answers 503 embeddings_provider_invalid', () => {
    for (const raw of [
      'not json',
      '{"kind":"openai-compatible"}',
      '{"kind":"workers-ai","binding":"AI","model":"m","dimensions":5000}',
    ]) {
      let caught: unknown
      try {
        embeddingsProviderFromEnv({ EMBEDDINGS_PROVIDER: raw })
      } catch (err) {
        caught = err
      }
      expect(caught, raw).toBeInstanceOf(AppError)
      expect((caught as AppError).code).toBe('embeddings_provider_invalid')
      expect((caught as AppError).status).toBe(503)
    }
    expect(embeddingsProviderFromEnv({})).toBeNull()
  })

  it('refuses a configuration whose key secret or binding is missing (503)', () => {
    const config = (p: object) => ({ EMBEDDINGS_PROVIDER: JSON.stringify(p) })
    const base = { model: 'm', dimensions: 8 }
    for (const env of [
      config({
        kind: 'openai-compatible',
        baseUrl: 'https://x.example/v1',
        apiKeySecret: 'MISSING_KEY',
        ...base,
      }),
      config({ kind: 'workers-ai', binding: 'AI', ...base }),
    ]) {
      let caught: unknown
      try {
        embedderFor(env, live)
      } catch (err) {
        caught = err
      }
      expect((caught as AppError).code).toBe('embeddings_provider_invalid')
    }
  })
})
