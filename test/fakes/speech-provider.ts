/**
 * A local HTTP server faking an OpenAI-compatible speech-to-text API for end-to-end tests:
 * `POST /v1/audio/transcriptions`, multipart/form-data with `file` and `model` (required),
 * `language`, `prompt`, `response_format` (json | text | verbose_json | srt | vtt; default json).
 * Point STT_LOCAL_BASE_URL (or STT_OPENAI_BASE_URL) at `fake.baseUrl`; `fake.env` does that.
 *
 * Errors use OpenAI's body `{error:{message,type,param,code}}`: 401 for a wrong Bearer key (when
 * the fake has one), 400 for a missing file or model or an empty file. Failures are scriptable
 * with `fail()`: HTTP 500, 429, 503, a hang (timeout), a non-JSON 200, a JSON 200 without `text`.
 *
 * The transcript is `fake.transcript` when set, otherwise a deterministic sentence naming the
 * file, its size and the model, so a test can tell which file and model reached the provider.
 * Like OpenAI's, a json answer reports the audio's length, `usage: {type: "duration", seconds}`
 * (verbose_json: `duration`): `fake.seconds`, default 1; null answers without it, like a server
 * that does not report it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export type SpeechFailure =
  | 'status_500'
  | 'status_429'
  | 'status_503'
  | 'timeout'
  | 'malformed_json'
  | 'wrong_shape'

export interface RecordedTranscription {
  path: string
  authorization: string | null
  model: string | null
  filename: string | null
  fileType: string | null
  size: number
  language: string | null
  prompt: string | null
  responseFormat: string
  failure: SpeechFailure | null
}

export interface SpeechProviderFake {
  url: string
  /** Base of the control endpoints (`${url}/__control`). */
  controlUrl: string
  /** `${url}/v1`: what an OpenAI-compatible client takes as its base URL. */
  baseUrl: string
  apiKey: string | undefined
  /** Env for the code worker: the fake as the `local` transcription provider. */
  env: Record<string, string>
  requests: RecordedTranscription[]
  /** Fixed transcript to return; undefined for the deterministic default. */
  transcript: string | undefined
  /** Seconds of audio reported with each transcript; null reports none. */
  seconds: number | null
  fail(failure: SpeechFailure, times?: number): void
  reset(): void
  close(): Promise<void>
}

function openAiError(
  res: ServerResponse,
  status: number,
  message: string,
  param: string | null,
  code: string | null,
): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param, code } }))
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

function field(form: FormData, name: string): string | null {
  const value = form.get(name)
  return typeof value === 'string' ? value : null
}

export async function startSpeechProviderFake(
  options: { host?: string; port?: number; apiKey?: string; transcript?: string } = {},
): Promise<SpeechProviderFake> {
  const requests: RecordedTranscription[] = []
  const sockets = new Set<Socket>()
  const hanging = new Set<ServerResponse>()
  let script: { failure: SpeechFailure; remaining: number } | undefined

  const state: { transcript: string | undefined; seconds: number | null } = {
    transcript: options.transcript,
    seconds: 1,
  }

  /**
   * Control endpoints for tests in another process: POST /__control/fail {failure, times?},
   * POST /__control/reset, POST /__control/transcript {transcript: string | null},
   * POST /__control/seconds {seconds: number | null}, GET /__control/requests.
   */
  async function control(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (req.method === 'GET' && path === '/requests') return json(200, { requests })
    const body =
      req.method === 'POST'
        ? (JSON.parse((await readBody(req)).toString('utf8') || '{}') as Record<string, unknown>)
        : {}
    if (req.method === 'POST' && path === '/reset') {
      script = undefined
      requests.length = 0
      state.transcript = options.transcript
      state.seconds = 1
      return json(200, { ok: true })
    }
    if (req.method === 'POST' && path === '/fail') {
      if (typeof body.failure !== 'string') return json(400, { error: 'failure is required' })
      script = {
        failure: body.failure as SpeechFailure,
        remaining: typeof body.times === 'number' ? body.times : Number.POSITIVE_INFINITY,
      }
      return json(200, { ok: true })
    }
    if (req.method === 'POST' && path === '/transcript') {
      state.transcript = typeof body.transcript === 'string' ? body.transcript : undefined
      return json(200, { ok: true })
    }
    if (req.method === 'POST' && path === '/seconds') {
      state.seconds = typeof body.seconds === 'number' ? body.seconds : null
      return json(200, { ok: true })
    }
    return json(404, { error: 'unknown control endpoint' })
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake')
    if (url.pathname.startsWith('/__control/'))
      return control(req, res, url.pathname.slice('/__control'.length))
    if (url.pathname !== '/v1/audio/transcriptions') {
      openAiError(res, 404, `Invalid URL (${req.method} ${url.pathname})`, null, null)
      return
    }
    if (req.method !== 'POST') {
      openAiError(res, 405, 'Method not allowed', null, null)
      return
    }
    const authorization = req.headers.authorization ?? null
    const raw = await readBody(req)
    let form: FormData | undefined
    try {
      form = await new Request('http://fake/', {
        method: 'POST',
        headers: { 'content-type': req.headers['content-type'] ?? '' },
        body: Uint8Array.from(raw),
      }).formData()
    } catch {
      form = undefined
    }
    const file = form?.get('file')
    const upload = file !== undefined && file !== null && typeof file !== 'string' ? file : null
    const record: RecordedTranscription = {
      path: url.pathname,
      authorization,
      model: form ? field(form, 'model') : null,
      filename: upload?.name ?? null,
      fileType: upload?.type ?? null,
      size: upload?.size ?? 0,
      language: form ? field(form, 'language') : null,
      prompt: form ? field(form, 'prompt') : null,
      responseFormat: (form && field(form, 'response_format')) || 'json',
      failure: null,
    }
    if (script) {
      record.failure = script.failure
      script.remaining -= 1
      if (script.remaining <= 0) script = undefined
    }
    requests.push(record)

    switch (record.failure) {
      case 'status_500':
        return openAiError(res, 500, 'The server had an error while processing your request.', null, null)
      case 'status_429':
        res.setHeader('retry-after', '1')
        return openAiError(res, 429, 'Rate limit reached for requests', null, 'rate_limit_exceeded')
      case 'status_503':
        return openAiError(res, 503, 'The engine is currently overloaded, please try again later', null, null)
      case 'timeout':
        hanging.add(res)
        return
      case 'malformed_json':
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"text": "unterminated')
        return
      case 'wrong_shape':
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ transcript: 'the field is called text, not transcript' }))
        return
      default:
        break
    }

    if (options.apiKey !== undefined && authorization !== `Bearer ${options.apiKey}`) {
      return openAiError(res, 401, 'Incorrect API key provided.', null, 'invalid_api_key')
    }
    if (!form) return openAiError(res, 400, 'Could not parse multipart form', null, null)
    if (!upload)
      return openAiError(
        res,
        400,
        '1 validation error for Request\nbody -> file\n  field required',
        'file',
        null,
      )
    if (!record.model) return openAiError(res, 400, 'you must provide a model parameter', 'model', null)
    if (upload.size === 0)
      return openAiError(
        res,
        400,
        'The audio file could not be decoded or its format is not supported.',
        'file',
        null,
      )

    const text =
      state.transcript ??
      `transcript of ${upload.name} (${upload.size} bytes) by ${record.model}${record.language ? ` in ${record.language}` : ''}`
    switch (record.responseFormat) {
      case 'text':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
        res.end(`${text}\n`)
        return
      case 'srt':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
        res.end(`1\n00:00:00,000 --> 00:00:01,000\n${text}\n\n`)
        return
      case 'vtt':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
        res.end(`WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n${text}\n\n`)
        return
      case 'verbose_json':
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            task: 'transcribe',
            language: record.language ?? 'english',
            duration: state.seconds ?? 1,
            text,
            segments: [
              {
                id: 0,
                seek: 0,
                start: 0,
                end: 1,
                text,
                tokens: [],
                temperature: 0,
                avg_logprob: -0.1,
                compression_ratio: 1,
                no_speech_prob: 0,
              },
            ],
          }),
        )
        return
      default:
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify(
            state.seconds === null ? { text } : { text, usage: { type: 'duration', seconds: state.seconds } },
          ),
        )
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent)
        openAiError(res, 500, err instanceof Error ? err.message : String(err), null, null)
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const url = `http://${options.host ?? '127.0.0.1'}:${port}`
  const env: Record<string, string> = { STT_LOCAL_BASE_URL: `${url}/v1` }
  if (options.apiKey !== undefined) env.STT_LOCAL_API_KEY = options.apiKey

  return {
    url,
    controlUrl: `${url}/__control`,
    baseUrl: `${url}/v1`,
    apiKey: options.apiKey,
    env,
    requests,
    get transcript() {
      return state.transcript
    },
    set transcript(value: string | undefined) {
      state.transcript = value
    },
    get seconds() {
      return state.seconds
    },
    set seconds(value: number | null) {
      state.seconds = value
    },
    fail(failure, times = Number.POSITIVE_INFINITY) {
      script = { failure, remaining: times }
    },
    reset() {
      script = undefined
      requests.length = 0
    },
    async close() {
      for (const res of hanging) res.destroy()
      hanging.clear()
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
