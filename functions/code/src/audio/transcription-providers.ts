/**
 * Speech-to-text providers and their failover chain.
 *
 * - OpenAI-compatible: POST {base}/audio/transcriptions, multipart `file`, `model`,
 *   `response_format=json`, optional `language` and `prompt`; answer `{"text": ...}`. Covers
 *   OpenAI, Groq, whisper.cpp's server (run it with `--inference-path /v1/audio/transcriptions`)
 *   and faster-whisper servers (speaches and similar), with `base` ending in `/v1`.
 * - Workers AI binding: `env.AI.run(model, input)`. `@cf/openai/whisper` and
 *   `@cf/openai/whisper-tiny-en` take `{audio: number[]}` (the file's bytes);
 *   `@cf/openai/whisper-large-v3-turbo` takes `{audio: base64, language?, initial_prompt?}`.
 *   Both answer `{text, ...}`.
 *
 * The chain tries providers in order: none configured -> AppError 503 `transcription_unavailable`;
 * all failed -> AppError 502 `transcription_providers_failed` listing each failure (HTTP status,
 * timeout, network error, malformed body; never a key or an upstream body).
 *
 * Configuration (worker env):
 * | variable               | meaning                                                                  |
 * |------------------------|--------------------------------------------------------------------------|
 * | STT_PROVIDERS          | order, comma-separated from openai, groq, local, workers-ai               |
 * |                        | (default `openai,groq,local,workers-ai`; unconfigured ones are skipped)   |
 * | STT_OPENAI_API_KEY     | enables OpenAI; STT_OPENAI_BASE_URL (https://api.openai.com/v1),          |
 * |                        | STT_OPENAI_MODEL (whisper-1)                                             |
 * | STT_GROQ_API_KEY       | enables Groq; STT_GROQ_BASE_URL (https://api.groq.com/openai/v1),         |
 * |                        | STT_GROQ_MODEL (whisper-large-v3-turbo)                                  |
 * | STT_LOCAL_BASE_URL     | enables a self-hosted OpenAI-compatible server (whisper.cpp,             |
 * |                        | faster-whisper); STT_LOCAL_API_KEY optional; STT_LOCAL_MODEL (whisper-1)  |
 * | AI (binding)           | enables Workers AI; STT_WORKERS_AI_MODEL (@cf/openai/whisper)             |
 * | STT_TIMEOUT_MS         | per-provider timeout, default 60000                                      |
 * Test mode (a `svc_sk_test_` key) always uses only the built-in TEST_MODE_TRANSCRIBER.
 */
import { z } from 'zod'
import {
  type FetchFn,
  fetchProviderJson,
  firstAnswer,
  ProviderError,
  type ProviderFailure,
} from '../../../../durable-objects/agent-run/provider-chain'
import { base64Encode } from '../../../../shared/crypto/encoding'
import { AppError } from '../../../../shared/http/errors'

export type { FetchFn }

export interface TranscriptionInput {
  bytes: Uint8Array
  /** File name with the extension of the real format (CheckedAudio.filename). */
  filename: string
  mime: string
  language?: string
  prompt?: string
}

export interface TranscriptionResult {
  text: string
  provider: string
  model: string
}

export type TranscriptionFailureKind = 'http_status' | 'timeout' | 'network' | 'malformed' | 'binding_error'

export class TranscriptionProviderError extends ProviderError<TranscriptionFailureKind> {
  constructor(provider: string, kind: TranscriptionFailureKind, detail: string, status?: number) {
    super(provider, kind, detail, status)
    this.name = 'TranscriptionProviderError'
  }
}

const transcriptionFailure: ProviderFailure = (provider, kind, detail, status) =>
  new TranscriptionProviderError(provider, kind, detail, status)

export interface TranscribeCall {
  fetch: FetchFn
  signal: AbortSignal
}

/** What a provider answered: the text, and the seconds of audio it transcribed when it says so. */
export interface Transcript {
  readonly text: string
  readonly seconds: number | null
}

export interface Transcriber {
  readonly name: string
  readonly model: string
  transcribe(input: TranscriptionInput, call: TranscribeCall): Promise<Transcript>
}

/**
 * An OpenAI-style answer: `text`, and the audio's length when the provider reports it —
 * `usage: {type: "duration", seconds}` (OpenAI's json) or `duration` (verbose_json, whisper servers).
 */
const TextBody = z.object({
  text: z.string(),
  duration: z.number().nonnegative().optional(),
  usage: z.object({ seconds: z.number().nonnegative().optional() }).loose().optional(),
})

function malformed(provider: string, body: unknown): TranscriptionProviderError {
  const parsed = TextBody.safeParse(body)
  const issue = parsed.success ? undefined : parsed.error.issues[0]
  return new TranscriptionProviderError(
    provider,
    'malformed',
    `malformed response body (${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'})`,
  )
}

export interface OpenAiCompatibleOptions {
  /** Reported as `provider` (e.g. openai, groq, local). */
  name: string
  /** Up to and including the version segment, e.g. https://api.openai.com/v1 */
  baseUrl: string
  apiKey?: string
  model: string
}

export function openAiCompatibleTranscriber(options: OpenAiCompatibleOptions): Transcriber {
  const endpoint = `${options.baseUrl.replace(/\/+$/, '')}/audio/transcriptions`
  const { name } = options
  return {
    name,
    model: options.model,
    async transcribe(input, call) {
      const form = new FormData()
      form.append('file', new File([input.bytes], input.filename, { type: input.mime }))
      form.append('model', options.model)
      form.append('response_format', 'json')
      if (input.language) form.append('language', input.language)
      if (input.prompt) form.append('prompt', input.prompt)
      const headers: Record<string, string> = { accept: 'application/json' }
      if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`
      const body = await fetchProviderJson(
        name,
        call.fetch,
        endpoint,
        { method: 'POST', headers, body: form, signal: call.signal },
        transcriptionFailure,
      )
      const parsed = TextBody.safeParse(body)
      if (!parsed.success) throw malformed(name, body)
      return {
        text: parsed.data.text.trim(),
        seconds: parsed.data.usage?.seconds ?? parsed.data.duration ?? null,
      }
    },
  }
}

/** The structural shape of a Workers AI binding (`[ai] binding = "AI"` in wrangler config). */
export interface WorkersAiBinding {
  run(model: string, input: Record<string, unknown>): Promise<unknown>
}

export const WORKERS_AI_DEFAULT_MODEL = '@cf/openai/whisper'

export function workersAiTranscriber(options: { binding: WorkersAiBinding; model?: string }): Transcriber {
  const model = options.model ?? WORKERS_AI_DEFAULT_MODEL
  const name = 'workers-ai'
  const takesBase64 = model.includes('whisper-large-v3-turbo')
  return {
    name,
    model,
    async transcribe(input, call) {
      const request: Record<string, unknown> = takesBase64
        ? {
            audio: base64Encode(input.bytes),
            ...(input.language ? { language: input.language } : {}),
            ...(input.prompt ? { initial_prompt: input.prompt } : {}),
          }
        : { audio: Array.from(input.bytes) }
      let out: unknown
      try {
        out = await options.binding.run(model, request)
      } catch (err) {
        if (call.signal.aborted) throw call.signal.reason
        throw new TranscriptionProviderError(
          name,
          'binding_error',
          `the AI binding failed (${err instanceof Error ? err.name : 'unknown'})`,
        )
      }
      const parsed = TextBody.safeParse(out)
      if (!parsed.success) throw malformed(name, out)
      return { text: parsed.data.text.trim(), seconds: parsed.data.duration ?? null }
    },
  }
}

// --- configuration ----------------------------------------------------------------------------

export const DEFAULT_STT_TIMEOUT_MS = 60_000
export const STT_PROVIDER_NAMES = ['openai', 'groq', 'local', 'workers-ai'] as const

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v?.trim() ? v.trim() : undefined))
const optionalUrl = optionalText.refine((v) => v === undefined || /^https?:\/\/\S+$/.test(v), {
  error: 'must be an http(s) URL',
})

export const SpeechEnvSchema = z.object({
  STT_PROVIDERS: optionalText,
  STT_OPENAI_API_KEY: optionalText,
  STT_OPENAI_BASE_URL: optionalUrl,
  STT_OPENAI_MODEL: optionalText,
  STT_GROQ_API_KEY: optionalText,
  STT_GROQ_BASE_URL: optionalUrl,
  STT_GROQ_MODEL: optionalText,
  STT_LOCAL_BASE_URL: optionalUrl,
  STT_LOCAL_API_KEY: optionalText,
  STT_LOCAL_MODEL: optionalText,
  STT_WORKERS_AI_MODEL: optionalText,
  STT_TIMEOUT_MS: optionalText.refine((v) => v === undefined || (/^\d+$/.test(v) && Number(v) > 0), {
    error: 'must be a positive integer (milliseconds)',
  }),
})
export type SpeechEnv = z.input<typeof SpeechEnvSchema> & { AI?: WorkersAiBinding }

export interface TranscriptionChain {
  providers: Transcriber[]
  timeoutMs: number
}

function misconfigured(detail: string): AppError {
  return new AppError(
    500,
    'transcription_misconfigured',
    'transcription is misconfigured on this server; contact support',
    {
      internalMessage: `speech config: ${detail}`,
    },
  )
}

/**
 * Test mode (`svc_sk_test_` keys): a built-in transcriber that never calls an upstream and is never
 * billed. Its transcript is a deterministic description of the upload (file name, type, size,
 * language), so a client can exercise the whole path, validation included, without a provider.
 */
export const TEST_MODE_TRANSCRIBER: Transcriber = {
  name: 'test-mode',
  model: 'svc-test-transcriber',
  async transcribe(input) {
    const language = input.language ? `, language ${input.language}` : ''
    return {
      text: `Test mode transcript of ${input.filename} (${input.mime}, ${input.bytes.length} bytes${language}). Use a live key to transcribe the speech.`,
      seconds: null,
    }
  },
}

export function transcriptionChainFromEnv(
  env: SpeechEnv,
  options: { testMode?: boolean } = {},
): TranscriptionChain {
  const { AI, ...vars } = env
  const parsed = SpeechEnvSchema.safeParse(vars)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw misconfigured(`${issue?.path.join('.')}: ${issue?.message}`)
  }
  const cfg = parsed.data
  const timeoutMs = cfg.STT_TIMEOUT_MS ? Number(cfg.STT_TIMEOUT_MS) : DEFAULT_STT_TIMEOUT_MS
  if (options.testMode) return { providers: [TEST_MODE_TRANSCRIBER], timeoutMs }
  const order = (cfg.STT_PROVIDERS ?? STT_PROVIDER_NAMES.join(','))
    .split(',')
    .map((n) => n.trim().toLowerCase())
    .filter(Boolean)
  const providers: Transcriber[] = []
  for (const name of new Set(order)) {
    switch (name) {
      case 'openai':
        if (cfg.STT_OPENAI_API_KEY) {
          providers.push(
            openAiCompatibleTranscriber({
              name,
              baseUrl: cfg.STT_OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
              apiKey: cfg.STT_OPENAI_API_KEY,
              model: cfg.STT_OPENAI_MODEL ?? 'whisper-1',
            }),
          )
        }
        break
      case 'groq':
        if (cfg.STT_GROQ_API_KEY) {
          providers.push(
            openAiCompatibleTranscriber({
              name,
              baseUrl: cfg.STT_GROQ_BASE_URL ?? 'https://api.groq.com/openai/v1',
              apiKey: cfg.STT_GROQ_API_KEY,
              model: cfg.STT_GROQ_MODEL ?? 'whisper-large-v3-turbo',
            }),
          )
        }
        break
      case 'local':
        if (cfg.STT_LOCAL_BASE_URL) {
          providers.push(
            openAiCompatibleTranscriber({
              name,
              baseUrl: cfg.STT_LOCAL_BASE_URL,
              apiKey: cfg.STT_LOCAL_API_KEY,
              model: cfg.STT_LOCAL_MODEL ?? 'whisper-1',
            }),
          )
        }
        break
      case 'workers-ai':
        if (AI && typeof AI.run === 'function') {
          providers.push(workersAiTranscriber({ binding: AI, model: cfg.STT_WORKERS_AI_MODEL }))
        }
        break
      default:
        throw misconfigured(
          `STT_PROVIDERS names unknown provider ${JSON.stringify(name)} (known: ${STT_PROVIDER_NAMES.join(', ')})`,
        )
    }
  }
  return { providers, timeoutMs }
}

// --- failover ---------------------------------------------------------------------------------

export interface TranscribeOptions {
  fetch?: FetchFn
  timeoutMs?: number
  signal?: AbortSignal
}

/** 503 `transcription_unavailable` when no provider is configured (checked before anything is metered). */
export function requireSpeechProviders(chain: TranscriptionChain): void {
  if (chain.providers.length > 0) return
  throw new AppError(
    503,
    'transcription_unavailable',
    'no speech-recognition provider is configured on this server (set STT_OPENAI_API_KEY, STT_GROQ_API_KEY, STT_LOCAL_BASE_URL or bind Workers AI as AI)',
  )
}

/**
 * Tries each provider in order; the first transcript wins. Returns the answer for the client and
 * the seconds of audio the provider reported (null when it reported none).
 */
export async function transcribeAudio(
  input: TranscriptionInput,
  chain: TranscriptionChain,
  options: TranscribeOptions = {},
): Promise<{ transcript: TranscriptionResult; seconds: number | null }> {
  requireSpeechProviders(chain)
  const fetchFn: FetchFn = options.fetch ?? ((url, init) => fetch(url, init))
  const { provider, answer } = await firstAnswer(
    chain.providers,
    (p, signal) => p.transcribe(input, { fetch: fetchFn, signal }),
    {
      signal: options.signal,
      timeoutMs: options.timeoutMs ?? chain.timeoutMs,
      failure: transcriptionFailure,
      code: 'transcription_providers_failed',
      what: 'speech-recognition provider',
    },
  )
  return {
    transcript: { text: answer.text, provider: provider.name, model: provider.model },
    seconds: answer.seconds,
  }
}
