/**
 * POST /svc/code/v1/transcribe: multipart `file` (+ `language`, `prompt`). The audio is checked
 * (after the plan check: 403 without the transcription feature) before it goes anywhere (audio/audio-upload.ts: size, container sniffed from the bytes,
 * name and content type must agree with it) -> 400 saying what is wrong; then the configured
 * speech-to-text providers are tried in order (OpenAI-compatible, Workers AI): 503 when none is
 * configured, 502 when every one failed. Test keys get the built-in test-mode transcriber.
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import { isTestMode } from '../../../shared/worker/request-context'
import { readTranscriptionRequest } from './audio/audio-upload'
import { transcribeAudio, transcriptionChainFromEnv } from './audio/transcription-providers'
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
      },
    }),
  )
  app.post('/svc/code/v1/transcribe', async (c) => {
    const identity = callerOf(c)
    // The plan first: no point reading 25 MiB for a caller who cannot use the result.
    requireFeature(c.env, identity, 'transcription')
    const upload = await readTranscriptionRequest(c.req.raw)
    const chain = transcriptionChainFromEnv(c.env, { testMode: isTestMode(identity) })
    const result = await transcribeAudio(
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
    return c.json(result, 200)
  })
}
