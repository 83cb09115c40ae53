/**
 * A local OpenAI-compatible upstream for end-to-end tests: point a provider's `baseUrl` in
 * MODEL_PROVIDERS at `fake.baseUrl` (…/v1) and its `apiKeySecret` at a secret holding `fake.apiKey`.
 *
 * Speaks the wire format the real API does:
 * - POST /v1/chat/completions → `chat.completion` JSON, or with `stream: true` SSE chunks
 *   (`chat.completion.chunk`, same id/created on each, role first, content deltas, a finish
 *   chunk, then — only with `stream_options.include_usage` — one `choices: []` usage chunk, all
 *   other chunks carrying `usage: null`), ending `data: [DONE]`.
 *   Tool calls when `tools` are given and `tool_choice` is "required"/names a function, or the
 *   last user message names a tool: streamed with index/id/type/name/arguments:"" first, then
 *   argument fragments; finish_reason "tool_calls".
 *   `max_tokens`/`max_completion_tokens` cut the reply (finish_reason "length").
 * - GET /v1/models → `{object: "list", data: [{id, object: "model", created, owned_by}]}`.
 * - OpenAI's errors: 401 invalid_api_key (when `apiKey` is set), 404 model_not_found for a
 *   model not in `models`, 400 for a body without messages and for `stream_options` without
 *   `stream` (OpenAI rejects that too).
 *
 * Replies are deterministic: "Fake upstream <model> reply: <last user text>" (with a `seed`:
 * "Fake upstream <model> reply (seed <n>): …", so seeded samples differ). With `logprobs: true`
 * each choice carries OpenAI's `logprobs.content` (one entry per token, logprobs from a hash of the
 * request, between -2 and 0). With `response_format` `json_schema` the content is an instance of
 * the schema, enums chosen by a hash of the request: a judge asked for
 * `{"verdict": "A" | "B" | "tie", ...}` answers one of them, the same one for the same request
 * (`judgeVerdicts(request)` reproduces the choice for tests). Usage is counted
 * with the o200k_base tokenizer.
 *
 * Several providers on one server: besides `/v1/chat/completions`, any `/<route>/v1/...` path
 * answers the same way and is recorded with that route (one MODEL_PROVIDERS entry per route lets
 * tests fail one "provider" over to another).
 *
 * Faults, scriptable for the next N chat requests (`failNext`), for every request matching a
 * predicate (`failWhen`), or by rule (`script`: match on route, model, or text contained in the
 * messages — tests put a unique tag there — for N requests or for good): an HTTP status (429 with
 * Retry-After, 500, 503, …), a hang (never answers), a stream cut after K chunks (socket
 * destroyed), slow chunks, and an error event mid-stream. A rule can also make the usage report
 * cached and reasoning tokens. Every request is recorded (method, path, route, headers, parsed
 * body, the fault served, whether the client went away before the answer ended), so tests can
 * assert e.g. that `stream_options.include_usage` was injected or that a disconnect reached it.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { countTokens, decode, encode } from 'gpt-tokenizer/encoding/o200k_base'

export type UpstreamFault =
  | {
      readonly kind: 'status'
      readonly status: number
      readonly retryAfter?: string
      readonly body?: unknown
    }
  | { readonly kind: 'hang' }
  | { readonly kind: 'cut'; readonly afterChunks: number }
  | { readonly kind: 'slow'; readonly delayMs: number }
  | { readonly kind: 'error_event'; readonly afterChunks: number }

export interface UpstreamUsageOverride {
  /** Reported as prompt_tokens_details.cached_tokens (capped at prompt_tokens). */
  readonly cached_tokens?: number
  /** Added to completion_tokens and reported as completion_tokens_details.reasoning_tokens. */
  readonly reasoning_tokens?: number
}

/** A scripted behaviour: when `match` holds, serve `fault` and/or `usage`, `times` times (default: always). */
export interface UpstreamRule {
  readonly match: {
    /** The route segment ('' for /v1/...). */
    readonly route?: string
    readonly model?: string
    /** Text that must appear in the request's messages (JSON). */
    readonly contains?: string
  }
  readonly fault?: UpstreamFault
  readonly usage?: UpstreamUsageOverride
  readonly times?: number
}

export interface RecordedUpstreamRequest {
  readonly method: string
  readonly path: string
  /** The route segment before /v1 ('' for /v1/...). */
  readonly route: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
  readonly receivedAt: number
  /** The fault served, or null for a normal answer. */
  fault: UpstreamFault | null
  /** True when the client closed the connection before the answer was complete. */
  closedEarly: boolean
}

export interface FakeOpenAIUpstream {
  /** http://127.0.0.1:<port> */
  readonly url: string
  /** `${url}/v1`: the provider baseUrl. */
  readonly baseUrl: string
  readonly port: number
  /** The key the fake expects as `Authorization: Bearer …` (null: any key or none). */
  readonly apiKey: string | null
  readonly requests: RecordedUpstreamRequest[]
  /** Chat requests only (POST /v1/chat/completions). */
  chatRequests(): RecordedUpstreamRequest[]
  /** Serves `fault` for the next `times` chat requests (default 1). */
  failNext(fault: UpstreamFault, times?: number): void
  /** Serves `fault` for every chat request `when` matches, until reset(). */
  failWhen(when: (request: RecordedUpstreamRequest) => boolean, fault: UpstreamFault): void
  /** Adds a rule (checked after failNext, before failWhen, first match wins). */
  script(rule: UpstreamRule): void
  /** Clears faults and recorded requests. */
  reset(): void
  stop(): Promise<void>
}

export interface FakeOpenAIUpstreamOptions {
  /** Expected API key; default a random `sk-fake-…`; null accepts any. */
  readonly apiKey?: string | null
  /** Models served; default accepts any model name. */
  readonly models?: readonly string[]
  readonly host?: string
}

interface ChatBody {
  model?: unknown
  messages?: unknown
  stream?: unknown
  stream_options?: { include_usage?: unknown } | null
  max_tokens?: unknown
  max_completion_tokens?: unknown
  n?: unknown
  tools?: { type?: string; function?: { name?: string } }[]
  tool_choice?: unknown
  seed?: unknown
  logprobs?: unknown
  response_format?: unknown
}

interface Message {
  role?: string
  content?: unknown
  name?: string
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((part: { type?: string; text?: string }) =>
      part?.type === 'text' && typeof part.text === 'string' ? part.text : '',
    )
    .join(' ')
}

const plain = { disallowedSpecial: new Set<string>() }

/** A small deterministic hash (FNV-1a, 32 bits) of a request's messages and seed. */
function hashOf(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}

/** An instance of a (simple) JSON Schema, enums picked by `h`. */
function schemaInstance(schema: unknown, h: number, depth = 0): unknown {
  const s = (schema ?? {}) as Record<string, unknown>
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[h % s.enum.length]
  if (s.type === 'object' || s.properties) {
    if (depth > 4) return {}
    const props = (s.properties ?? {}) as Record<string, unknown>
    return Object.fromEntries(
      Object.entries(props).map(([key, sub], i) => [
        key,
        schemaInstance(sub, hashOf(`${h}:${i}`), depth + 1),
      ]),
    )
  }
  if (s.type === 'array') return depth > 4 ? [] : [schemaInstance(s.items, h, depth + 1)]
  if (s.type === 'integer' || s.type === 'number') return h % 10
  if (s.type === 'boolean') return h % 2 === 0
  return 'fake'
}

/** The verdict the fake judge gives a request (what `response_format` json_schema answers). */
export function judgeVerdictOf(body: {
  messages?: unknown
  seed?: unknown
  response_format?: unknown
}): unknown {
  const format = body.response_format as { json_schema?: { schema?: unknown } } | undefined
  return schemaInstance(
    format?.json_schema?.schema,
    hashOf(JSON.stringify([body.messages, body.seed ?? null])),
  )
}

function tokenLogprobs(text: string, h: number) {
  return encode(text, plain).map((token, i) => {
    const piece = decode([token])
    return {
      token: piece,
      logprob: -((hashOf(`${h}:${i}`) % 1000) / 500),
      bytes: [...Buffer.from(piece, 'utf8')],
      top_logprobs: [],
    }
  })
}
const tokens = (text: string) => (text ? countTokens(text, plain) : 0)

function promptTokens(messages: Message[]): number {
  let total = 3
  for (const m of messages)
    total += 3 + tokens(m.role ?? '') + tokens(textOf(m.content)) + (m.name ? tokens(m.name) + 1 : 0)
  return total
}

function openAiError(message: string, type: string, code: string | null, param: string | null = null) {
  return { error: { message, type, param, code } }
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'x-request-id': `req_${randomUUID()}`,
    ...headers,
  })
  res.end(JSON.stringify(body))
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function chooseTool(body: ChatBody, messages: Message[]): string | null {
  const tools = (body.tools ?? []).filter(
    (t) => t.type === 'function' && typeof t.function?.name === 'string',
  )
  if (tools.length === 0 || body.tool_choice === 'none') return null
  const choice = body.tool_choice as { function?: { name?: string } } | string | undefined
  if (choice && typeof choice === 'object') return choice.function?.name ?? null
  const last = messages[messages.length - 1]
  const text = last?.role === 'user' ? textOf(last.content).toLowerCase() : ''
  const named = tools.find((t) => text.includes(String(t.function?.name).toLowerCase()))
  if (named) return named.function?.name ?? null
  return choice === 'required' ? (tools[0]?.function?.name ?? null) : null
}

export async function startFakeOpenAIUpstream(
  options: FakeOpenAIUpstreamOptions = {},
): Promise<FakeOpenAIUpstream> {
  const apiKey = options.apiKey === undefined ? `sk-fake-${randomUUID()}` : options.apiKey
  const requests: RecordedUpstreamRequest[] = []
  let queued: { fault: UpstreamFault; remaining: number }[] = []
  let rules: { when: (r: RecordedUpstreamRequest) => boolean; fault: UpstreamFault }[] = []
  let scripted: { rule: UpstreamRule; remaining: number }[] = []
  const sockets = new Set<Socket>()

  const matches = (rule: UpstreamRule, record: RecordedUpstreamRequest): boolean => {
    const body = (record.body ?? {}) as { model?: unknown; messages?: unknown }
    if (rule.match.route !== undefined && rule.match.route !== record.route) return false
    if (rule.match.model !== undefined && rule.match.model !== body.model) return false
    if (
      rule.match.contains !== undefined &&
      !JSON.stringify(body.messages ?? '').includes(rule.match.contains)
    )
      return false
    return true
  }

  const pick = (
    record: RecordedUpstreamRequest,
  ): { fault: UpstreamFault | null; usage: UpstreamUsageOverride | null } => {
    const head = queued[0]
    if (head) {
      head.remaining -= 1
      if (head.remaining <= 0) queued.shift()
      return { fault: head.fault, usage: null }
    }
    const found = scripted.find((entry) => entry.remaining > 0 && matches(entry.rule, record))
    if (found) {
      found.remaining -= 1
      return { fault: found.rule.fault ?? null, usage: found.rule.usage ?? null }
    }
    return { fault: rules.find((rule) => rule.when(record))?.fault ?? null, usage: null }
  }

  const chat = async (res: ServerResponse, body: ChatBody, record: RecordedUpstreamRequest) => {
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      return sendJson(
        res,
        400,
        openAiError(
          "Missing required parameter: 'messages'.",
          'invalid_request_error',
          'missing_required_parameter',
          'messages',
        ),
      )
    }
    const model = String(body.model ?? '')
    if (options.models && !options.models.includes(model)) {
      return sendJson(
        res,
        404,
        openAiError(
          `The model \`${model}\` does not exist or you do not have access to it.`,
          'invalid_request_error',
          'model_not_found',
        ),
      )
    }
    const stream = body.stream === true
    if (!stream && body.stream_options !== undefined && body.stream_options !== null) {
      return sendJson(
        res,
        400,
        openAiError(
          "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
          'invalid_request_error',
          null,
          'stream_options',
        ),
      )
    }
    const { fault, usage: usageOverride } = pick(record)
    record.fault = fault
    if (fault?.kind === 'hang') return
    if (fault?.kind === 'status') {
      const headers: Record<string, string> = fault.retryAfter ? { 'retry-after': fault.retryAfter } : {}
      const defaultBody =
        fault.status === 429
          ? openAiError(
              'Rate limit reached for requests. Please try again later.',
              'requests',
              'rate_limit_exceeded',
            )
          : openAiError(
              'The server had an error while processing your request. Sorry about that!',
              'server_error',
              null,
            )
      return sendJson(res, fault.status, fault.body ?? defaultBody, headers)
    }

    const messages = body.messages as Message[]
    const maxTokens = Number(body.max_completion_tokens ?? body.max_tokens ?? Number.POSITIVE_INFINITY)
    const n = typeof body.n === 'number' && body.n > 0 ? body.n : 1
    const lastUser = [...messages].reverse().find((m) => m.role === 'user')
    const toolName = chooseTool(body, messages)
    const id = `chatcmpl-${randomUUID().replaceAll('-', '').slice(0, 29)}`
    const created = Math.floor(Date.now() / 1000)
    const format = body.response_format as { type?: string } | undefined
    const seed = typeof body.seed === 'number' ? body.seed : null
    const full = toolName
      ? '{"query":"fake"}'
      : format?.type === 'json_schema'
        ? JSON.stringify(judgeVerdictOf(body))
        : `Fake upstream ${model} reply${seed === null ? '' : ` (seed ${seed})`}: ${textOf(lastUser?.content)}`
    const requestHash = hashOf(JSON.stringify([body.messages, seed]))
    const all = encode(full, plain)
    const cut = all.length > maxTokens
    const text = cut ? decode(all.slice(0, maxTokens)) : full
    const finish = cut ? 'length' : toolName ? 'tool_calls' : 'stop'
    const reasoningTokens = usageOverride?.reasoning_tokens ?? 0
    const completionTokens = tokens(text) * n + reasoningTokens
    const prompt = promptTokens(messages)
    const usage = {
      prompt_tokens: prompt,
      completion_tokens: completionTokens,
      total_tokens: prompt + completionTokens,
      prompt_tokens_details: {
        cached_tokens: Math.min(prompt, usageOverride?.cached_tokens ?? 0),
        audio_tokens: 0,
      },
      completion_tokens_details: {
        reasoning_tokens: reasoningTokens,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    }
    const callId = `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`

    if (!stream) {
      if (fault?.kind === 'slow') await sleep(fault.delayMs)
      const payload = JSON.stringify({
        id,
        object: 'chat.completion',
        created,
        model,
        choices: Array.from({ length: n }, (_, index) => ({
          index,
          message: {
            role: 'assistant',
            content: toolName ? null : text,
            refusal: null,
            annotations: [],
            ...(toolName
              ? {
                  tool_calls: [
                    { id: callId, type: 'function', function: { name: toolName, arguments: text } },
                  ],
                }
              : {}),
          },
          logprobs:
            body.logprobs === true && !toolName
              ? { content: tokenLogprobs(text, hashOf(`${requestHash}:${index}`)), refusal: null }
              : null,
          finish_reason: finish,
        })),
        usage,
        service_tier: 'default',
        system_fingerprint: 'fp_fake',
      })
      if (fault?.kind === 'cut') {
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(payload)),
        })
        res.write(payload.slice(0, Math.floor(payload.length / 2)))
        res.socket?.destroy()
        return
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': `req_${randomUUID()}` })
      res.end(payload)
      return
    }

    const includeUsage = body.stream_options?.include_usage === true
    const chunk = (index: number, delta: Record<string, unknown>, finishReason: string | null = null) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
      choices: [{ index, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage ? { usage: null } : {}),
    })
    const events: unknown[] = []
    for (let index = 0; index < n; index++) {
      if (toolName) {
        events.push(
          chunk(index, {
            role: 'assistant',
            content: null,
            tool_calls: [
              { index: 0, id: callId, type: 'function', function: { name: toolName, arguments: '' } },
            ],
            refusal: null,
          }),
        )
        for (let i = 0; i < text.length; i += 4) {
          events.push(
            chunk(index, { tool_calls: [{ index: 0, function: { arguments: text.slice(i, i + 4) } }] }),
          )
        }
      } else {
        events.push(chunk(index, { role: 'assistant', content: '', refusal: null }))
        for (const piece of text.match(/\S+\s*/g) ?? []) events.push(chunk(index, { content: piece }))
      }
      events.push(chunk(index, {}, finish))
    }
    if (includeUsage) {
      events.push({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        service_tier: 'default',
        system_fingerprint: 'fp_fake',
        choices: [],
        usage,
      })
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-request-id': `req_${randomUUID()}`,
    })
    res.flushHeaders()
    for (let i = 0; i < events.length; i++) {
      if (fault?.kind === 'cut' && i === fault.afterChunks) {
        // Let the chunks already written reach the client before the connection drops.
        await sleep(100)
        res.socket?.destroy()
        return
      }
      if (fault?.kind === 'error_event' && i === fault.afterChunks) {
        res.end(
          `data: ${JSON.stringify(openAiError('The server had an error while processing your request.', 'server_error', null))}\n\n`,
        )
        return
      }
      if (fault?.kind === 'slow') await sleep(fault.delayMs)
      if (res.destroyed) return
      res.write(`data: ${JSON.stringify(events[i])}\n\n`)
    }
    res.end('data: [DONE]\n\n')
  }

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake')
    const raw = await readBody(req)
    let body: unknown = null
    try {
      body = raw ? JSON.parse(raw) : null
    } catch {
      body = raw
    }
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(req.headers))
      headers[name] = Array.isArray(value) ? value.join(', ') : (value ?? '')
    const routed = /^(?:\/([a-z0-9_-]+))?(\/v1\/.*)$/.exec(url.pathname)
    const record: RecordedUpstreamRequest = {
      method: req.method ?? 'GET',
      path: routed?.[2] ?? url.pathname,
      route: routed?.[1] ?? '',
      headers,
      body,
      receivedAt: Date.now(),
      fault: null,
      closedEarly: false,
    }
    requests.push(record)
    res.on('close', () => {
      if (!res.writableFinished) record.closedEarly = true
    })

    if (apiKey !== null && headers.authorization !== `Bearer ${apiKey}`) {
      return sendJson(
        res,
        401,
        openAiError(
          'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
          'invalid_request_error',
          'invalid_api_key',
        ),
      )
    }
    if (req.method === 'GET' && record.path === '/v1/models') {
      const ids = options.models ?? ['fake-model']
      return sendJson(res, 200, {
        object: 'list',
        data: ids.map((id) => ({ id, object: 'model', created: 1700000000, owned_by: 'fake-upstream' })),
      })
    }
    if (req.method === 'POST' && record.path === '/v1/chat/completions') {
      if (typeof body !== 'object' || body === null) {
        return sendJson(
          res,
          400,
          openAiError('We could not parse the JSON body of your request.', 'invalid_request_error', null),
        )
      }
      return chat(res, body as ChatBody, record)
    }
    sendJson(
      res,
      404,
      openAiError(`Invalid URL (${req.method} ${url.pathname})`, 'invalid_request_error', null),
    )
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, options.host ?? '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const url = `http://${options.host ?? '127.0.0.1'}:${port}`

  return {
    url,
    baseUrl: `${url}/v1`,
    port,
    apiKey,
    requests,
    chatRequests: () => requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions'),
    failNext(fault, times = 1) {
      queued.push({ fault, remaining: times })
    },
    failWhen(when, fault) {
      rules.push({ when, fault })
    },
    script(rule) {
      scripted.push({ rule, remaining: rule.times ?? Number.POSITIVE_INFINITY })
    },
    reset() {
      queued = []
      rules = []
      scripted = []
      requests.length = 0
    },
    stop() {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())))
    },
  }
}
