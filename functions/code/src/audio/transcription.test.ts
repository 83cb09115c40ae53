import { describe, expect, it } from 'vitest'
import { AppError } from '../../../../shared/http/errors'
import {
  type FetchFn,
  openAiCompatibleTranscriber,
  type TranscriptionInput,
  transcribeAudio,
  transcriptionChainFromEnv,
  type WorkersAiBinding,
  workersAiTranscriber,
} from './transcription-providers'

const input: TranscriptionInput = {
  bytes: Uint8Array.from([82, 73, 70, 70, 1, 2, 3, 250]),
  filename: 'memo.wav',
  mime: 'audio/wav',
  language: 'en',
  prompt: 'svc, MCP',
}

interface Received {
  url: string
  auth: string | null
  form: FormData
}

/** A fetch that decodes the multipart body the way a real server would. */
function fakeFetch(answer: (url: string) => Response | Promise<Response>) {
  const received: Received[] = []
  const fn: FetchFn = async (url, init) => {
    const req = new Request(url, init)
    received.push({ url, auth: req.headers.get('authorization'), form: await req.formData() })
    return answer(url)
  }
  return { fn, received }
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status })

async function rejection(p: Promise<unknown>): Promise<AppError> {
  try {
    await p
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
  throw new Error('expected an AppError')
}

describe('OpenAI-compatible transcriber', () => {
  it('posts the multipart fields OpenAI expects and returns the trimmed text', async () => {
    const { fn, received } = fakeFetch(() => json({ text: ' hello world \n' }))
    const t = openAiCompatibleTranscriber({
      name: 'openai',
      baseUrl: 'http://stt.test/v1/',
      apiKey: 'sk-secret',
      model: 'whisper-1',
    })
    const answer = await t.transcribe(input, { fetch: fn, signal: new AbortController().signal })
    expect(answer).toEqual({ text: 'hello world', seconds: null })
    const r = received[0]!
    expect(r.url).toBe('http://stt.test/v1/audio/transcriptions')
    expect(r.auth).toBe('Bearer sk-secret')
    const file = r.form.get('file') as File
    expect(file.name).toBe('memo.wav')
    expect(file.type).toBe('audio/wav')
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(input.bytes)
    expect(r.form.get('model')).toBe('whisper-1')
    expect(r.form.get('response_format')).toBe('json')
    expect(r.form.get('language')).toBe('en')
    expect(r.form.get('prompt')).toBe('svc, MCP')
  })

  it('sends no Authorization and no optional fields when not given', async () => {
    const { fn, received } = fakeFetch(() => json({ text: 'ok' }))
    const t = openAiCompatibleTranscriber({
      name: 'local',
      baseUrl: 'http://whisper.test/v1',
      model: 'base.en',
    })
    await t.transcribe(
      { ...input, language: undefined, prompt: undefined },
      { fetch: fn, signal: new AbortController().signal },
    )
    expect(received[0]!.auth).toBeNull()
    expect(received[0]!.form.has('language')).toBe(false)
    expect(received[0]!.form.has('prompt')).toBe(false)
  })
})

describe('Workers AI transcriber', () => {
  function binding(out: unknown | Error) {
    const calls: Array<{ model: string; input: Record<string, unknown> }> = []
    const b: WorkersAiBinding = {
      async run(model, req) {
        calls.push({ model, input: req })
        if (out instanceof Error) throw out
        return out
      },
    }
    return { b, calls }
  }
  const signal = new AbortController().signal

  it('sends the bytes as a number array to @cf/openai/whisper', async () => {
    const { b, calls } = binding({ text: 'hi there', word_count: 2 })
    const t = workersAiTranscriber({ binding: b })
    expect(await t.transcribe(input, { fetch: fetch, signal })).toEqual({ text: 'hi there', seconds: null })
    expect(calls[0]).toEqual({
      model: '@cf/openai/whisper',
      input: { audio: [82, 73, 70, 70, 1, 2, 3, 250] },
    })
  })

  it('sends base64 with language and initial_prompt to whisper-large-v3-turbo', async () => {
    const { b, calls } = binding({ text: 'ok', transcription_info: {} })
    const t = workersAiTranscriber({ binding: b, model: '@cf/openai/whisper-large-v3-turbo' })
    await t.transcribe(input, { fetch: fetch, signal })
    expect(calls[0]!.input).toEqual({
      audio: btoa(String.fromCharCode(...input.bytes)),
      language: 'en',
      initial_prompt: 'svc, MCP',
    })
  })

  it('classifies binding errors and malformed outputs', async () => {
    const failing = workersAiTranscriber({ binding: binding(new TypeError('boom 5006 secret')).b })
    await expect(failing.transcribe(input, { fetch, signal })).rejects.toMatchObject({
      kind: 'binding_error',
      detail: 'the AI binding failed (TypeError)',
    })
    const weird = workersAiTranscriber({ binding: binding({ result: 'x' }).b })
    await expect(weird.transcribe(input, { fetch, signal })).rejects.toMatchObject({ kind: 'malformed' })
  })
})

describe('transcription chain', () => {
  const env = {
    STT_OPENAI_API_KEY: 'sk-secret',
    STT_OPENAI_BASE_URL: 'http://openai.test/v1',
    STT_GROQ_API_KEY: 'gsk-secret',
    STT_GROQ_BASE_URL: 'http://groq.test/openai/v1',
    STT_LOCAL_BASE_URL: 'http://local.test/v1',
  }

  it('builds providers from env in the default order with default models', () => {
    const chain = transcriptionChainFromEnv({ ...env, AI: { run: async () => ({ text: '' }) } })
    expect(chain.providers.map((p) => `${p.name}:${p.model}`)).toEqual([
      'openai:whisper-1',
      'groq:whisper-large-v3-turbo',
      'local:whisper-1',
      'workers-ai:@cf/openai/whisper',
    ])
    expect(chain.timeoutMs).toBe(60_000)
    const reordered = transcriptionChainFromEnv({
      ...env,
      STT_PROVIDERS: 'local,openai',
      STT_LOCAL_MODEL: 'large-v3',
      STT_TIMEOUT_MS: '5000',
    })
    expect(reordered.providers.map((p) => `${p.name}:${p.model}`)).toEqual([
      'local:large-v3',
      'openai:whisper-1',
    ])
    expect(reordered.timeoutMs).toBe(5000)
  })

  it('treats unknown provider names and bad URLs as server misconfiguration', () => {
    expect(() => transcriptionChainFromEnv({ STT_PROVIDERS: 'deepgram' })).toThrow(AppError)
    expect(() => transcriptionChainFromEnv({ STT_LOCAL_BASE_URL: 'localhost:8080' })).toThrow(/misconfigured/)
  })

  it('fails over past a 500 and a malformed body to the next provider', async () => {
    const { fn, received } = fakeFetch((url) => {
      if (url.startsWith('http://openai.test')) return json({ error: { message: 'overloaded' } }, 500)
      if (url.startsWith('http://groq.test')) return new Response('<html>')
      return json({ text: 'from local' })
    })
    const res = await transcribeAudio(input, transcriptionChainFromEnv(env), { fetch: fn })
    expect(res).toEqual({
      transcript: { text: 'from local', provider: 'local', model: 'whisper-1' },
      seconds: null,
    })
    expect(received.map((r) => new URL(r.url).host)).toEqual(['openai.test', 'groq.test', 'local.test'])
  })

  it('502 lists every failure (status, malformed, timeout) without secrets', async () => {
    const { fn } = fakeFetch((url) => {
      if (url.startsWith('http://openai.test')) return json({ error: 'bad key sk-secret' }, 401)
      if (url.startsWith('http://groq.test')) return json({ txt: 'wrong field' })
      return new Promise<Response>(() => {})
    })
    const err = await rejection(
      transcribeAudio(input, transcriptionChainFromEnv(env), { fetch: fn, timeoutMs: 40 }),
    )
    expect(err.status).toBe(502)
    expect(err.code).toBe('transcription_providers_failed')
    expect(err.message).toBe(
      'every configured speech-recognition provider failed: openai: HTTP 401 (credential rejected); groq: malformed response body (text: Invalid input: expected string, received undefined); local: timed out after 40 ms',
    )
    expect(JSON.stringify(err.toBody())).not.toMatch(/sk-secret|gsk-secret/)
  })

  it('503 when nothing is configured', async () => {
    const err = await rejection(transcribeAudio(input, transcriptionChainFromEnv({})))
    expect(err.status).toBe(503)
    expect(err.code).toBe('transcription_unavailable')
  })

  it('a network failure moves on to Workers AI', async () => {
    const fn: FetchFn = async () => {
      throw new TypeError('fetch failed')
    }
    const chain = transcriptionChainFromEnv({
      STT_OPENAI_API_KEY: 'k',
      AI: { run: async () => ({ text: 'from workers ai' }) },
    })
    expect(await transcribeAudio(input, chain, { fetch: fn })).toEqual({
      transcript: { text: 'from workers ai', provider: 'workers-ai', model: '@cf/openai/whisper' },
      seconds: null,
    })
  })
})

describe('the seconds of audio a provider reports', () => {
  const signal = new AbortController().signal
  const t = openAiCompatibleTranscriber({ name: 'openai', baseUrl: 'http://stt.test/v1', model: 'whisper-1' })

  it.each([
    ["OpenAI's json usage", { text: 'x', usage: { type: 'duration', seconds: 7 } }, 7],
    ['verbose_json duration', { text: 'x', duration: 12.5 }, 12.5],
    ['token usage only (gpt-4o-transcribe)', { text: 'x', usage: { type: 'tokens', input_tokens: 9 } }, null],
    ['nothing', { text: 'x' }, null],
  ])('%s', async (_name, body, seconds) => {
    const { fn } = fakeFetch(() => json(body))
    expect((await t.transcribe(input, { fetch: fn, signal })).seconds).toBe(seconds)
  })
})

describe('test mode', () => {
  it('always uses the built-in transcriber, never a configured provider', async () => {
    const fn: FetchFn = async () => {
      throw new Error('no upstream may be called in test mode')
    }
    const chain = transcriptionChainFromEnv({ STT_OPENAI_API_KEY: 'k' }, { testMode: true })
    expect(chain.providers.map((p) => p.name)).toEqual(['test-mode'])
    expect(await transcribeAudio(input, chain, { fetch: fn })).toEqual({
      transcript: {
        text: 'Test mode transcript of memo.wav (audio/wav, 8 bytes, language en). Use a live key to transcribe the speech.',
        provider: 'test-mode',
        model: 'svc-test-transcriber',
      },
      seconds: null,
    })
  })
})
