/**
 * Embeddings for retrieval: an OpenAI-compatible `/embeddings` endpoint or the Workers AI
 * binding, configured by the JSON env var `EMBEDDINGS_PROVIDER` (docs/retrieval.md), parsed with
 * zod once per isolate like MODEL_PROVIDERS. The API key lives in the secret the config names.
 *
 * Test keys (`svc_sk_test_`) always use the built-in deterministic embedding (test-embedding.ts),
 * never a provider. Without a configured provider, live keys get full-text retrieval only.
 *
 * Every vector is checked to have the configured dimension (a provider that answers another
 * dimension is refused, nothing is stored) and scaled to unit length, so cosine similarity is a
 * dot product. Vectors of different embedding spaces (`model@dimensions`) are never compared.
 */
import { z } from 'zod'
import { base64Decode } from '../../../../shared/crypto/encoding'
import { AppError } from '../../../../shared/http/errors'
import { type Identity, isTestMode } from '../../../../shared/worker/request-context'
import { TEST_EMBEDDING_DIMENSIONS, TEST_EMBEDDING_MODEL, testEmbedding } from './test-embedding'

export const EMBEDDINGS_PROVIDER_VAR = 'EMBEDDINGS_PROVIDER'

/** Largest dimension accepted: pgvector's HNSW index limit for `vector`. */
export const MAX_EMBEDDING_DIMENSIONS = 2_000

const EnvName = z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'must be an env name in SCREAMING_SNAKE_CASE')
const Dimensions = z.int().min(1).max(MAX_EMBEDDING_DIMENSIONS)

export const EmbeddingsProviderSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('openai-compatible'),
      /** Base URL up to and including the version segment, e.g. https://api.openai.com/v1. */
      baseUrl: z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, '')),
      /** Env secret holding the API key; omit for keyless local servers. */
      apiKeySecret: EnvName.optional(),
      model: z.string().min(1),
      dimensions: Dimensions,
      /** Send `dimensions` in the request (text-embedding-3 models shorten on request). */
      sendDimensions: z.boolean().default(true),
      /** Inputs per request (OpenAI allows 2048; smaller batches keep requests short). */
      batchSize: z.int().min(1).max(2048).default(64),
      timeoutMs: z.int().min(100).max(120_000).default(15_000),
      /** Further tries after a 429, a 5xx, a timeout or a broken answer. */
      retries: z.int().min(0).max(5).default(2),
    })
    .strict(),
  z
    .object({
      kind: z.literal('workers-ai'),
      /** Name of the Workers AI binding (e.g. AI). */
      binding: EnvName,
      model: z.string().min(1),
      dimensions: Dimensions,
      batchSize: z.int().min(1).max(100).default(50),
    })
    .strict(),
])
export type EmbeddingsProvider = z.infer<typeof EmbeddingsProviderSchema>

/** The worker's env: the config var, plus the secret or binding it names (looked up by name). */
export interface EmbeddingsEnv {
  readonly [EMBEDDINGS_PROVIDER_VAR]?: string
}

const named = (env: EmbeddingsEnv, name: string): unknown => (env as Record<string, unknown>)[name]

/** What the vectors of a chunk or query belong to; only vectors of one space are compared. */
export interface EmbeddingSpace {
  /** `model@dimensions`, stored with every vector. */
  readonly id: string
  readonly model: string
  readonly dimensions: number
}

export interface Embedder {
  readonly space: EmbeddingSpace
  /** One unit-length vector per text, in order. Throws AppError 502 when the provider fails. */
  embed(texts: readonly string[]): Promise<number[][]>
}

export function embeddingSpace(model: string, dimensions: number): EmbeddingSpace {
  return { id: `${model}@${dimensions}`, model, dimensions }
}

let parsed: { raw: string; provider: EmbeddingsProvider } | null = null

/** The configured provider (null when EMBEDDINGS_PROVIDER is unset); 503 when it is invalid. */
export function embeddingsProviderFromEnv(env: EmbeddingsEnv): EmbeddingsProvider | null {
  const raw = env[EMBEDDINGS_PROVIDER_VAR]
  if (raw === undefined || raw === '') return null
  if (parsed?.raw === raw) return parsed.provider
  let provider: EmbeddingsProvider
  try {
    provider = EmbeddingsProviderSchema.parse(JSON.parse(raw))
  } catch (err) {
    const detail =
      err instanceof z.ZodError
        ? err.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')
        : (err as Error).message
    throw new AppError(
      503,
      'embeddings_provider_invalid',
      `Document retrieval is misconfigured on this deployment (${EMBEDDINGS_PROVIDER_VAR} is invalid). The operator must fix it.`,
      { internalMessage: `${EMBEDDINGS_PROVIDER_VAR} is invalid: ${detail}`, cause: err },
    )
  }
  parsed = { raw, provider }
  return provider
}

/** The embedder for this caller: the test embedding for test keys, else the provider (or null). */
export function embedderFor(
  env: EmbeddingsEnv,
  identity: Identity,
  fetcher: typeof fetch = fetch,
): Embedder | null {
  if (isTestMode(identity)) return testEmbedder()
  const provider = embeddingsProviderFromEnv(env)
  if (!provider) return null
  return provider.kind === 'openai-compatible'
    ? openAiEmbedder(provider, env, fetcher)
    : workersAiEmbedder(provider, env)
}

export function testEmbedder(): Embedder {
  return {
    space: embeddingSpace(TEST_EMBEDDING_MODEL, TEST_EMBEDDING_DIMENSIONS),
    embed: async (texts) => texts.map((t) => testEmbedding(t)),
  }
}

/** Scales to unit length after checking the dimension and that every value is a finite number. */
export function unitVector(values: ArrayLike<number>, space: EmbeddingSpace, provider: string): number[] {
  if (values.length !== space.dimensions) {
    throw new AppError(
      502,
      'embedding_dimension_mismatch',
      `The embeddings provider answered vectors of ${values.length} dimensions where ${space.model} is configured with ${space.dimensions}. Nothing was stored; the operator must fix ${EMBEDDINGS_PROVIDER_VAR} (changing the dimension means uploading the documents again to re-index them).`,
      { internalMessage: `${provider}: expected ${space.dimensions} dimensions, got ${values.length}` },
    )
  }
  let norm = 0
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!
    if (!Number.isFinite(x))
      throw providerFailure(provider, 'a vector holds a value that is not a finite number')
    norm += x * x
  }
  norm = Math.sqrt(norm)
  if (norm === 0) throw providerFailure(provider, 'a vector is all zeros')
  return Array.from(values, (x) => Math.fround(x / norm))
}

function providerFailure(provider: string, detail: string, cause?: unknown): AppError {
  return new AppError(
    502,
    'embeddings_provider_failed',
    'The embeddings provider failed to embed the text. Nothing was stored; retry later.',
    { internalMessage: `${provider}: ${detail}`, ...(cause === undefined ? {} : { cause }) },
  )
}

const OpenAiEmbeddingsResponseSchema = z.object({
  data: z.array(
    z.object({
      index: z.int().min(0),
      // base64 (float32 little-endian) when asked with encoding_format: "base64", else numbers.
      embedding: z.union([z.string(), z.array(z.number())]),
    }),
  ),
  model: z.string().optional(),
})

function decodeBase64Floats(text: string): Float32Array {
  const bytes = base64Decode(text)
  if (!bytes) throw new Error('base64 embedding is not valid standard base64')
  if (bytes.byteLength % 4 !== 0) throw new Error('base64 embedding is not a whole number of float32 values')
  const view = new DataView(bytes.buffer)
  return Float32Array.from({ length: bytes.byteLength / 4 }, (_, i) => view.getFloat32(i * 4, true))
}

const RETRYABLE = new Set([408, 409, 429, 500, 502, 503, 504])

function openAiEmbedder(
  provider: Extract<EmbeddingsProvider, { kind: 'openai-compatible' }>,
  env: EmbeddingsEnv,
  fetcher: typeof fetch,
): Embedder {
  const space = embeddingSpace(provider.model, provider.dimensions)
  const name = `openai-compatible ${provider.baseUrl} ${provider.model}`
  const key = provider.apiKeySecret ? named(env, provider.apiKeySecret) : undefined
  if (provider.apiKeySecret && typeof key !== 'string') {
    throw new AppError(
      503,
      'embeddings_provider_invalid',
      'Document retrieval is misconfigured on this deployment (the embeddings API key is missing). The operator must fix it.',
      { internalMessage: `secret ${provider.apiKeySecret} named by ${EMBEDDINGS_PROVIDER_VAR} is not set` },
    )
  }

  async function batch(input: readonly string[]): Promise<number[][]> {
    const body = JSON.stringify({
      model: provider.model,
      input,
      encoding_format: 'base64',
      ...(provider.sendDimensions ? { dimensions: provider.dimensions } : {}),
    })
    let lastDetail = ''
    // No wait after the last try.
    const wait = (attempt: number, retryAfter: string | null) =>
      attempt < provider.retries ? backoff(attempt, retryAfter) : Promise.resolve()
    for (let attempt = 0; attempt <= provider.retries; attempt++) {
      let response: Response
      try {
        response = await fetcher(`${provider.baseUrl}/embeddings`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(typeof key === 'string' ? { authorization: `Bearer ${key}` } : {}),
          },
          body,
          signal: AbortSignal.timeout(provider.timeoutMs),
        })
      } catch (err) {
        lastDetail = `request failed: ${String(err)}`
        await wait(attempt, null)
        continue
      }
      if (!response.ok) {
        const text = await response.text().catch(() => '')
        lastDetail = `HTTP ${response.status}: ${text.slice(0, 300)}`
        if (!RETRYABLE.has(response.status)) throw providerFailure(name, lastDetail)
        await wait(attempt, response.headers.get('retry-after'))
        continue
      }
      let answer: z.infer<typeof OpenAiEmbeddingsResponseSchema>
      try {
        answer = OpenAiEmbeddingsResponseSchema.parse(await response.json())
      } catch (err) {
        lastDetail = `unreadable answer: ${String(err).slice(0, 300)}`
        await wait(attempt, null)
        continue
      }
      const vectors: (number[] | undefined)[] = new Array(input.length)
      for (const item of answer.data) {
        if (item.index >= input.length) throw providerFailure(name, `answer has index ${item.index}`)
        const values =
          typeof item.embedding === 'string' ? decodeBase64Floats(item.embedding) : item.embedding
        vectors[item.index] = unitVector(values, space, name)
      }
      if (vectors.some((v) => v === undefined)) {
        throw providerFailure(name, `answer has ${answer.data.length} vectors for ${input.length} inputs`)
      }
      return vectors as number[][]
    }
    throw providerFailure(name, `gave up after ${provider.retries + 1} tries: ${lastDetail}`)
  }

  return { space, embed: (texts) => inBatches(texts, provider.batchSize, batch) }
}

interface WorkersAiEmbeddingBinding {
  run(model: string, inputs: { text: string[] }): Promise<unknown>
}

const WorkersAiEmbeddingResultSchema = z.object({ data: z.array(z.array(z.number())) })

function workersAiEmbedder(
  provider: Extract<EmbeddingsProvider, { kind: 'workers-ai' }>,
  env: EmbeddingsEnv,
): Embedder {
  const space = embeddingSpace(provider.model, provider.dimensions)
  const name = `workers-ai ${provider.model}`
  const binding = named(env, provider.binding) as WorkersAiEmbeddingBinding | undefined
  if (typeof binding?.run !== 'function') {
    throw new AppError(
      503,
      'embeddings_provider_invalid',
      'Document retrieval is misconfigured on this deployment (the Workers AI binding is missing). The operator must fix it.',
      { internalMessage: `binding ${provider.binding} named by ${EMBEDDINGS_PROVIDER_VAR} is not bound` },
    )
  }
  async function batch(input: readonly string[]): Promise<number[][]> {
    let result: z.infer<typeof WorkersAiEmbeddingResultSchema>
    try {
      result = WorkersAiEmbeddingResultSchema.parse(await binding!.run(provider.model, { text: [...input] }))
    } catch (err) {
      throw providerFailure(name, String(err), err)
    }
    if (result.data.length !== input.length)
      throw providerFailure(name, `answer has ${result.data.length} vectors for ${input.length} inputs`)
    return result.data.map((values) => unitVector(values, space, name))
  }
  return { space, embed: (texts) => inBatches(texts, provider.batchSize, batch) }
}

async function inBatches(
  texts: readonly string[],
  size: number,
  run: (batch: readonly string[]) => Promise<number[][]>,
): Promise<number[][]> {
  const out: number[][] = []
  for (let i = 0; i < texts.length; i += size) out.push(...(await run(texts.slice(i, i + size))))
  return out
}

/** Waits before the next try: Retry-After when given (at most 2 s), else 100 ms doubled per try. */
async function backoff(attempt: number, retryAfter: string | null): Promise<void> {
  const seconds = retryAfter === null ? Number.NaN : Number(retryAfter)
  const ms = Number.isFinite(seconds) ? Math.min(2_000, seconds * 1_000) : Math.min(2_000, 100 * 2 ** attempt)
  await new Promise((resolve) => setTimeout(resolve, ms))
}
