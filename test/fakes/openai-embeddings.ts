/**
 * A wire-faithful fake of OpenAI's embeddings API (`POST /v1/embeddings`), with scripted
 * failures, that records every request. Web APIs only (Request/Response), so the same handler runs
 * inside workerd (unit tests pass `fake.fetch` as the client's fetch) and behind a Node HTTP
 * server (test/e2e/fakes/embeddings.fake.ts).
 *
 * It serves `text-embedding-3-small` (1536 dimensions), `text-embedding-3-large` (3072) and
 * `text-embedding-ada-002` (1536) with vectors of its own (`fakeEmbedding`): deterministic, unit
 * length, similar for texts that share words and parts of words, and unrelated to the product's
 * built-in test embedding, which is a product feature this fake must not stand in for
 * (scripts/fakes-independence.test.ts). As OpenAI documents, `dimensions` shortens a
 * text-embedding-3 vector (cut, then scaled to unit length again) and older models refuse it.
 *
 * Wire format (platform.openai.com API reference, "Create embeddings"):
 * - request `{model, input: string | string[], encoding_format?: "float" | "base64", dimensions?}`;
 *   `Authorization: Bearer <key>`; at most 2048 inputs, none empty.
 * - answer `{object: "list", data: [{object: "embedding", index, embedding}], model,
 *   usage: {prompt_tokens, total_tokens}}`; base64 = little-endian float32.
 * - errors `{error: {message, type, param, code}}`: 401 invalid_api_key, 400
 *   invalid_request_error, 404 model_not_found, 429 rate_limit_exceeded (Retry-After), 500
 *   server_error.
 *
 * Scripted failures (`fail(failure, times)`): status_429, status_500, status_401, timeout (never
 * answers), malformed_json, truncated (a body cut mid-way), wrong_dimensions (128 values).
 */

/** The models served: native dimensions, and whether `dimensions` may shorten them. */
export const EMBEDDING_MODELS: Readonly<Record<string, { dimensions: number; shortens: boolean }>> = {
  'text-embedding-3-small': { dimensions: 1536, shortens: true },
  'text-embedding-3-large': { dimensions: 3072, shortens: true },
  'text-embedding-ada-002': { dimensions: 1536, shortens: false },
}

/** 32-bit MurmurHash3 of a string's UTF-16 units, seeded by the model. */
function murmur3(text: string, seed: number): number {
  let h = seed >>> 0
  for (let i = 0; i < text.length; i++) {
    let k = Math.imul(text.charCodeAt(i), 0xcc9e2d51)
    k = Math.imul((k << 15) | (k >>> 17), 0x1b873593)
    h ^= k
    h = (Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64) >>> 0
  }
  h ^= text.length
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

/**
 * The fake's vector for `text`: words and their character 4-grams hashed into signed buckets, cut
 * to `dimensions` and scaled to unit length, as float32 carries it. Each feature lands once in
 * each leading block of 8, 16, 32, ... values up to the model's size, so the first values carry the
 * most, as in text-embedding-3 (trained so that a cut vector still works): any cut keeps every
 * feature.
 */
export function fakeEmbedding(text: string, model: string, dimensions?: number): number[] {
  const native = EMBEDDING_MODELS[model]!.dimensions
  const seed = murmur3(model, 0x5eed)
  const vector = new Float64Array(native)
  const add = (feature: string, weight: number) => {
    for (let block = 8, level = 0; block / 2 < native; block *= 2, level++) {
      const h = murmur3(feature, seed + level)
      vector[h % Math.min(block, native)]! += h & 0x80000000 ? weight : -weight
    }
  }
  for (const word of text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)) {
    add(word, 1)
    const padded = ` ${word} `
    for (let i = 0; i + 4 <= padded.length; i++) add(padded.slice(i, i + 4), 0.5)
  }
  const kept = vector.subarray(0, dimensions ?? native)
  const norm = Math.hypot(...kept)
  // Text of no letter or digit gets one fixed unit vector.
  if (norm === 0) return Array.from(kept, (_, i) => (i === 0 ? 1 : 0))
  return Array.from(kept, (x) => Math.fround(x / norm))
}

export type EmbeddingsFailure =
  | 'status_429'
  | 'status_500'
  | 'status_401'
  | 'timeout'
  | 'malformed_json'
  | 'truncated'
  | 'wrong_dimensions'

export interface RecordedEmbeddingsRequest {
  path: string
  authorization: string | null
  body: unknown
  failure: EmbeddingsFailure | null
}

export interface OpenAiEmbeddingsFake {
  readonly apiKey: string
  readonly requests: RecordedEmbeddingsRequest[]
  fail(failure: EmbeddingsFailure, times?: number): void
  reset(): void
  /** Answers one request (path `/v1/embeddings`; `/__control/*` scripts the fake). */
  handle(request: Request): Promise<Response>
  /** `fetch` for a client under test. */
  fetch: typeof fetch
}

const MAX_INPUTS = 2048

function openAiError(
  status: number,
  message: string,
  type: string,
  code: string | null,
  param: string | null = null,
) {
  return Response.json(
    { error: { message, type, param, code } },
    { status, headers: { 'x-request-id': `req_${crypto.randomUUID().replaceAll('-', '')}` } },
  )
}

function base64Floats(values: readonly number[]): string {
  const bytes = new Uint8Array(values.length * 4)
  const view = new DataView(bytes.buffer)
  values.forEach((v, i) => {
    view.setFloat32(i * 4, v, true)
  })
  let binary = ''
  for (const b of bytes) binary += String.fromCharCode(b)
  return btoa(binary)
}

export function createOpenAiEmbeddingsFake(options: { apiKey?: string } = {}): OpenAiEmbeddingsFake {
  const apiKey = options.apiKey ?? `sk-fake-${crypto.randomUUID()}`
  const requests: RecordedEmbeddingsRequest[] = []
  let script: { failure: EmbeddingsFailure; remaining: number } | null = null

  const takeFailure = (): EmbeddingsFailure | null => {
    if (!script || script.remaining === 0) return null
    script.remaining--
    return script.failure
  }

  async function control(path: string, request: Request): Promise<Response> {
    if (path === '/__control/fail') {
      const { failure, times } = (await request.json()) as { failure: EmbeddingsFailure; times?: number }
      fake.fail(failure, times)
      return Response.json({ ok: true })
    }
    if (path === '/__control/reset') {
      fake.reset()
      return Response.json({ ok: true })
    }
    if (path === '/__control/requests') return Response.json(requests)
    return new Response('not found', { status: 404 })
  }

  async function embeddings(request: Request): Promise<Response> {
    const authorization = request.headers.get('authorization')
    const text = await request.text()
    let body: unknown = null
    try {
      body = JSON.parse(text)
    } catch {}
    const failure = takeFailure()
    requests.push({ path: new URL(request.url).pathname, authorization, body, failure })

    if (failure === 'status_401' || authorization !== `Bearer ${apiKey}`) {
      return openAiError(
        401,
        'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
        'invalid_request_error',
        'invalid_api_key',
      )
    }
    if (failure === 'status_429') {
      const res = openAiError(
        429,
        'Rate limit reached for text-embedding requests. Please try again in 20ms.',
        'requests',
        'rate_limit_exceeded',
      )
      res.headers.set('retry-after', '0')
      return res
    }
    if (failure === 'status_500') {
      return openAiError(
        500,
        'The server had an error while processing your request. Sorry about that!',
        'server_error',
        null,
      )
    }
    if (failure === 'timeout') return new Promise<Response>(() => {})

    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return openAiError(
        400,
        'We could not parse the JSON body of your request.',
        'invalid_request_error',
        null,
      )
    }
    const { model, input, encoding_format: format = 'float', dimensions } = body as Record<string, unknown>
    if (typeof model !== 'string') {
      return openAiError(400, 'you must provide a model parameter', 'invalid_request_error', null, 'model')
    }
    const inputs = typeof input === 'string' ? [input] : input
    if (
      !Array.isArray(inputs) ||
      inputs.length === 0 ||
      inputs.length > MAX_INPUTS ||
      inputs.some((x) => typeof x !== 'string' || x === '')
    ) {
      return openAiError(
        400,
        "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
        'invalid_request_error',
        null,
        'input',
      )
    }
    if (format !== 'float' && format !== 'base64') {
      return openAiError(
        400,
        `Invalid value for 'encoding_format': '${String(format)}'.`,
        'invalid_request_error',
        null,
        'encoding_format',
      )
    }
    const served = EMBEDDING_MODELS[model]
    if (!served) {
      return openAiError(
        404,
        `The model \`${model}\` does not exist or you do not have access to it.`,
        'invalid_request_error',
        'model_not_found',
      )
    }
    if (dimensions !== undefined && !served.shortens) {
      return openAiError(
        400,
        'This model does not support specifying dimensions.',
        'invalid_request_error',
        null,
        'dimensions',
      )
    }
    if (
      dimensions !== undefined &&
      (typeof dimensions !== 'number' ||
        !Number.isInteger(dimensions) ||
        dimensions < 1 ||
        dimensions > served.dimensions)
    ) {
      return openAiError(
        400,
        `Invalid 'dimensions': it must be an integer from 1 to ${served.dimensions} for ${model}.`,
        'invalid_request_error',
        null,
        'dimensions',
      )
    }
    let tokens = 0
    const data = (inputs as string[]).map((text, index) => {
      tokens += Math.ceil(text.length / 4)
      const vector = fakeEmbedding(text, model, dimensions as number | undefined).slice(
        0,
        failure === 'wrong_dimensions' ? 128 : undefined,
      )
      return { object: 'embedding', index, embedding: format === 'base64' ? base64Floats(vector) : vector }
    })
    const answer = JSON.stringify({
      object: 'list',
      data,
      model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    })
    const headers = { 'content-type': 'application/json', 'openai-processing-ms': '3' }
    if (failure === 'malformed_json') return new Response(`${answer.slice(0, 20)}<html>`, { headers })
    if (failure === 'truncated')
      return new Response(answer.slice(0, Math.floor(answer.length / 2)), { headers })
    return new Response(answer, { headers })
  }

  const fake: OpenAiEmbeddingsFake = {
    apiKey,
    requests,
    fail(failure, times = Number.POSITIVE_INFINITY) {
      script = { failure, remaining: times }
    },
    reset() {
      script = null
      requests.length = 0
    },
    async handle(request) {
      const path = new URL(request.url).pathname
      if (path.startsWith('/__control/')) return control(path, request)
      if (request.method === 'POST' && path === '/v1/embeddings') return embeddings(request)
      return openAiError(404, `Invalid URL (${request.method} ${path})`, 'invalid_request_error', null)
    },
    fetch: ((input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init)
      const answer = fake.handle(request)
      // A client's timeout (AbortSignal) ends a request the fake never answers.
      const signal = init?.signal
      if (!signal) return answer
      return Promise.race([
        answer,
        new Promise<Response>((_, reject) => {
          if (signal.aborted) reject(signal.reason)
          signal.addEventListener('abort', () => reject(signal.reason), { once: true })
        }),
      ])
    }) as typeof fetch,
  }
  return fake
}
