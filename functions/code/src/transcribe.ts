/**
 * POST /svc/code/v1/transcribe: multipart `file` (+ `language`, `prompt`). The plan first (403
 * without the transcription feature: no point reading 25 MiB for a caller who cannot use the
 * result), then the audio is checked before it goes anywhere (audio/audio-upload.ts: size,
 * container sniffed from the bytes, name and content type must agree with it) -> 400 saying what
 * is wrong; 503 when no speech-to-text provider is configured; then the tenant's RateLimiter
 * admits it (402/429 action-required, x-ratelimit-* headers), reserving the seconds of audio the
 * upload holds (audio/audio-duration.ts); the providers are tried in order (OpenAI-compatible,
 * Workers AI; 502 when every one failed, nothing recorded); and the seconds transcribed (the
 * provider's figure, else the estimate) are recorded before the answer leaves. Test keys get the
 * built-in test-mode transcriber, rate limited and recorded, never billed.
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi'
import { actionRequiredResponse, errorResponse } from '../../../shared/http/error-body'
import { meterToolCall, openMeter } from '../../../shared/metering'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import { isTestMode } from '../../../shared/worker/request-context'
import { estimateAudioSeconds } from './audio/audio-duration'
import { readTranscriptionRequest } from './audio/audio-upload'
import {
  requireSpeechProviders,
  transcribeAudio,
  transcriptionChainFromEnv,
} from './audio/transcription-providers'
import type { CodeEnv } from './code.context'
import { callerOf, requireFeature } from './turns'

const TranscriptionForm = z.object({
  file: z.string().openapi({
    type: 'string',
    format: 'binary',
    description: 'WAV, MP3, Ogg, FLAC, WebM/Matroska or MP4/M4A; at most 25 MiB',
  }),
  language: z.string().optional().openapi({ description: 'ISO 639-1 code, e.g. en or pt-BR' }),
  prompt: z
    .string()
    .optional()
    .openapi({ description: 'Text to guide the transcription (at most 4000 characters)' }),
})

export const TranscriptionResultSchema = z
  .object({ text: z.string(), provider: z.string(), model: z.string() })
  .openapi('TranscriptionResult')

export function transcribeRoutes(app: OpenAPIHono<FamilyEnv<CodeEnv>>): void {
  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'post',
      path: '/svc/code/v1/transcribe',
      tags: ['Agent'],
      summary: 'Transcribe microphone audio to text',
      request: {
        body: { required: true, content: { 'multipart/form-data': { schema: TranscriptionForm } } },
      },
      responses: {
        200: {
          description: 'Transcript',
          content: { 'application/json': { schema: TranscriptionResultSchema } },
        },
        400: errorResponse(
          'The audio is invalid, oversize or unsupported, or a form field is (the message says which)',
        ),
        402: actionRequiredResponse('insufficient_credits or overage_cap_reached'),
        403: actionRequiredResponse(
          'feature_required: the plan does not include transcription; insufficient_scope (error body) for a credential without agents:write',
        ),
        429: actionRequiredResponse(
          "tier_allowance_exhausted (the month's audio seconds) or rate_limited (retry after Retry-After)",
        ),
        502: errorResponse('Every configured speech-recognition provider failed'),
        503: errorResponse('No speech-recognition provider is configured, or usage limits cannot be checked'),
      },
    }),
  )
  app.post('/svc/code/v1/transcribe', async (c) => {
    const identity = callerOf(c)
    const { catalog } = requireFeature(c.env, identity, 'transcription')
    const upload = await readTranscriptionRequest(c.req.raw)
    const chain = transcriptionChainFromEnv(c.env, { testMode: isTestMode(identity) })
    requireSpeechProviders(chain)
    const estimate = estimateAudioSeconds(upload.audio)
    const { result, headers } = await meterToolCall(
      openMeter(c.env.RATE_LIMITER, identity, 'code.transcribe'),
      catalog,
      { requestId: c.get('request').requestId, tool: 'transcription', estimatedQuantity: estimate },
      async () => {
        const { transcript, seconds } = await transcribeAudio(
          {
            bytes: upload.audio.bytes,
            filename: upload.audio.filename,
            mime: upload.audio.mime,
            ...(upload.language ? { language: upload.language } : {}),
            ...(upload.prompt ? { prompt: upload.prompt } : {}),
          },
          chain,
          { signal: c.req.raw.signal },
        )
        return {
          result: transcript,
          quantity: seconds === null ? estimate : Math.max(1, Math.ceil(seconds)),
          estimated: seconds === null,
          provider: transcript.provider,
        }
      },
    )
    return c.json(result, 200, headers)
  })
}
