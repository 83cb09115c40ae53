/**
 * The transcription upload boundary (POST /svc/code/v1/transcribe, multipart/form-data with
 * `file`, optional `language`, optional `prompt`). Spec 000: invalid, oversize or unsupported
 * audio is a 400. Rules, in the order they are checked:
 *
 * 1. The body is multipart/form-data with a `file` part that is a file (not a text field).
 * 2. Size: at most `MAX_AUDIO_BYTES` = 25 MiB (OpenAI's limit for /audio/transcriptions, so every
 *    OpenAI-compatible upstream accepts what passes here) -> else 400 `audio_too_large`;
 *    0 bytes -> 400 `audio_empty`. Checked from Content-Length / File.size before reading.
 * 3. Content: the container is sniffed from the bytes (audio-sniff.ts). Unrecognised or
 *    unsupported -> 400 `unsupported_audio_format`, saying what was detected.
 * 4. Declarations: the file name's extension and the part's Content-Type, when they name an audio
 *    type, must agree with the bytes -> else 400 `audio_mislabeled`, saying detected vs declared.
 *    WebM and Matroska are interchangeable (WebM is a Matroska profile), as are .mp4 and .m4a.
 *    A name without a known media extension (`blob`, `recording.bin`) and a generic content type
 *    (`application/octet-stream`, none) make no claim; other types (`text/plain`) are a claim.
 * 5. `language`: an ISO 639-1/639-3 code with optional subtags (`en`, `pt-BR`); `prompt`: at most
 *    `MAX_PROMPT_CHARS` characters. Other form fields (`model`, `response_format`, ...) are ignored.
 */
import { AppError } from '../../../../shared/http/errors'
import {
  type AudioFormat,
  FORMAT_INFO,
  leadingHex,
  type SupportedAudioFormat,
  sniffAudio,
} from './audio-sniff'

export const MAX_AUDIO_BYTES = 25 * 1024 * 1024
export const MAX_PROMPT_CHARS = 4000
/** Multipart framing and the small text fields on top of the file. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024

type Family = 'wav' | 'mp3' | 'ogg' | 'flac' | 'matroska' | 'mp4'

const FAMILY: Record<SupportedAudioFormat, Family> = {
  wav: 'wav',
  mp3: 'mp3',
  'ogg-opus': 'ogg',
  'ogg-vorbis': 'ogg',
  'ogg-flac': 'ogg',
  flac: 'flac',
  webm: 'matroska',
  matroska: 'matroska',
  mp4: 'mp4',
}

/** What an extension or content type claims: the formats it allows. */
interface Claim {
  label: string
  allows: (format: SupportedAudioFormat) => boolean
}

const family = (f: Family, label: string): Claim => ({ label, allows: (format) => FAMILY[format] === f })
const exactly = (f: SupportedAudioFormat, label: string): Claim => ({
  label,
  allows: (format) => format === f,
})
const unsupported = (label: string): Claim => ({ label, allows: () => false })

const EXTENSION_CLAIMS: Record<string, Claim> = {
  wav: family('wav', 'WAV'),
  wave: family('wav', 'WAV'),
  mp3: family('mp3', 'MP3'),
  mpga: family('mp3', 'MP3'),
  mpeg: family('mp3', 'MP3'),
  ogg: family('ogg', 'Ogg'),
  oga: family('ogg', 'Ogg'),
  opus: exactly('ogg-opus', 'Ogg Opus'),
  flac: family('flac', 'FLAC'),
  webm: family('matroska', 'WebM'),
  mka: family('matroska', 'Matroska'),
  mkv: family('matroska', 'Matroska'),
  m4a: family('mp4', 'M4A'),
  mp4: family('mp4', 'MP4'),
  m4b: family('mp4', 'M4A'),
  aac: unsupported('AAC'),
  amr: unsupported('AMR'),
  aif: unsupported('AIFF'),
  aiff: unsupported('AIFF'),
  caf: unsupported('CAF'),
  mov: unsupported('QuickTime'),
  '3gp': unsupported('3GPP'),
  wma: unsupported('WMA'),
}

const CONTENT_TYPE_CLAIMS: Record<string, Claim> = {
  'audio/wav': family('wav', 'WAV'),
  'audio/x-wav': family('wav', 'WAV'),
  'audio/wave': family('wav', 'WAV'),
  'audio/vnd.wave': family('wav', 'WAV'),
  'audio/mpeg': family('mp3', 'MP3'),
  'audio/mp3': family('mp3', 'MP3'),
  'audio/mpeg3': family('mp3', 'MP3'),
  'audio/x-mpeg': family('mp3', 'MP3'),
  'audio/x-mp3': family('mp3', 'MP3'),
  'audio/mpga': family('mp3', 'MP3'),
  'audio/ogg': family('ogg', 'Ogg'),
  'application/ogg': family('ogg', 'Ogg'),
  'audio/x-ogg': family('ogg', 'Ogg'),
  'audio/opus': exactly('ogg-opus', 'Ogg Opus'),
  'audio/vorbis': exactly('ogg-vorbis', 'Ogg Vorbis'),
  'audio/flac': family('flac', 'FLAC'),
  'audio/x-flac': family('flac', 'FLAC'),
  'audio/webm': family('matroska', 'WebM'),
  'video/webm': family('matroska', 'WebM'),
  'audio/x-matroska': family('matroska', 'Matroska'),
  'audio/matroska': family('matroska', 'Matroska'),
  'video/x-matroska': family('matroska', 'Matroska'),
  'audio/mp4': family('mp4', 'MP4'),
  'audio/m4a': family('mp4', 'M4A'),
  'audio/x-m4a': family('mp4', 'M4A'),
  'video/mp4': family('mp4', 'MP4'),
}

/** Content types that say nothing about the format. */
const GENERIC_CONTENT_TYPES = new Set([
  '',
  'application/octet-stream',
  'binary/octet-stream',
  'application/binary',
])

const SUPPORTED_LIST = 'WAV, MP3, Ogg (Opus, Vorbis or FLAC), FLAC, WebM/Matroska or MP4/M4A'

export interface AudioUploadInput {
  bytes: Uint8Array
  filename?: string | null
  contentType?: string | null
  maxBytes?: number
}

export interface CheckedAudio {
  bytes: Uint8Array
  format: SupportedAudioFormat
  /** e.g. "MPEG-2 Layer III audio at 16000 Hz". */
  detail: string
  /** Canonical MIME type of the detected format, for the upstream upload. */
  mime: string
  /**
   * A safe file name with the canonical extension of the detected format (`hello.opus` ->
   * `hello.ogg`, `blob` -> `audio.webm`): OpenAI-style upstreams choose the decoder by the name.
   */
  filename: string
  size: number
}

function tooLarge(size: number, max: number): AppError {
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`
  return new AppError(
    400,
    'audio_too_large',
    `the audio file is ${mib(size)}; the limit is ${mib(max)} (${max} bytes). Split the recording or compress it (e.g. Opus or MP3)`,
    { param: 'file' },
  )
}

function describe(format: AudioFormat, detail: string): string {
  return FORMAT_INFO[format].supported ? `${FORMAT_INFO[format].label} (${detail})` : detail
}

function baseName(filename: string): string {
  const last = filename.split(/[/\\]/).pop() ?? ''
  return last.replace(/[^\w.\- ]+/g, '_').slice(0, 200)
}

function extensionOf(name: string): string | undefined {
  const dot = name.lastIndexOf('.')
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : undefined
}

/** Validates uploaded audio bytes against the size limit, the sniffed container and the claims. */
export function checkAudioUpload(input: AudioUploadInput): CheckedAudio {
  const max = input.maxBytes ?? MAX_AUDIO_BYTES
  const { bytes } = input
  if (bytes.length === 0) {
    throw new AppError(
      400,
      'audio_empty',
      'the audio file is empty (0 bytes); record something and upload it again',
      {
        param: 'file',
      },
    )
  }
  if (bytes.length > max) throw tooLarge(bytes.length, max)

  const sniffed = sniffAudio(bytes)
  if (!sniffed) {
    throw new AppError(
      400,
      'unsupported_audio_format',
      `the file is not a recognised audio container (it starts with ${leadingHex(bytes)}); send ${SUPPORTED_LIST}`,
      { param: 'file' },
    )
  }
  const info = FORMAT_INFO[sniffed.format]
  if (!info.supported) {
    throw new AppError(
      400,
      'unsupported_audio_format',
      `the file is ${sniffed.detail}, which is not supported; send ${SUPPORTED_LIST}`,
      { param: 'file' },
    )
  }
  const format = sniffed.format as SupportedAudioFormat

  const name = baseName(input.filename ?? '')
  const ext = extensionOf(name)
  const extClaim = ext ? EXTENSION_CLAIMS[ext] : undefined
  if (extClaim && !extClaim.allows(format)) {
    throw new AppError(
      400,
      'audio_mislabeled',
      `the file ${JSON.stringify(name)} is declared as ${extClaim.label} by its .${ext} extension, but its content is ${describe(format, sniffed.detail)}; rename it to .${info.extension} or re-encode it`,
      { param: 'file' },
    )
  }
  const contentType = (input.contentType ?? '').split(';')[0]!.trim().toLowerCase()
  if (!GENERIC_CONTENT_TYPES.has(contentType)) {
    const typeClaim = CONTENT_TYPE_CLAIMS[contentType]
    if (!typeClaim?.allows(format)) {
      throw new AppError(
        400,
        'audio_mislabeled',
        `the file is declared as ${typeClaim ? typeClaim.label : JSON.stringify(contentType)} by its Content-Type ${contentType}, but its content is ${describe(format, sniffed.detail)}; send Content-Type ${info.mime} or application/octet-stream`,
        { param: 'file' },
      )
    }
  }

  const stem = ext ? name.slice(0, -(ext.length + 1)) : name
  const filename = `${stem.trim() || 'audio'}.${info.extension}`
  return { bytes, format, detail: sniffed.detail, mime: info.mime, filename, size: bytes.length }
}

export interface TranscriptionUpload {
  audio: CheckedAudio
  language?: string
  prompt?: string
}

const LANGUAGE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/

function optionalField(form: FormData, name: string): string | undefined {
  const value = form.get(name)
  if (value === null) return undefined
  if (typeof value !== 'string') {
    throw new AppError(400, 'invalid_transcription_request', `${name} must be a text field, not a file`, {
      param: name,
    })
  }
  const trimmed = value.trim()
  return trimmed === '' ? undefined : trimmed
}

/** Validates the multipart fields and the audio; see the rules at the top of this file. */
export async function parseTranscriptionForm(
  form: FormData,
  maxBytes: number = MAX_AUDIO_BYTES,
): Promise<TranscriptionUpload> {
  const file = form.get('file')
  if (file === null) {
    throw new AppError(
      400,
      'invalid_transcription_request',
      'file is required: send the audio as the multipart field "file"',
      {
        param: 'file',
      },
    )
  }
  if (typeof file === 'string') {
    throw new AppError(
      400,
      'invalid_transcription_request',
      'file must be a file upload (a multipart part with a filename), not a text field',
      { param: 'file' },
    )
  }
  if (file.size > maxBytes) throw tooLarge(file.size, maxBytes)
  const language = optionalField(form, 'language')
  if (language !== undefined && !LANGUAGE.test(language)) {
    throw new AppError(
      400,
      'invalid_transcription_request',
      `language must be an ISO 639-1 code such as "en" or "pt-BR" (got ${JSON.stringify(language.slice(0, 40))})`,
      { param: 'language' },
    )
  }
  const prompt = optionalField(form, 'prompt')
  if (prompt !== undefined && prompt.length > MAX_PROMPT_CHARS) {
    throw new AppError(
      400,
      'invalid_transcription_request',
      `prompt must be at most ${MAX_PROMPT_CHARS} characters (got ${prompt.length})`,
      { param: 'prompt' },
    )
  }
  const audio = checkAudioUpload({
    bytes: new Uint8Array(await file.arrayBuffer()),
    filename: file.name,
    contentType: file.type,
    maxBytes,
  })
  return { audio, language, prompt }
}

/**
 * Reads a transcription HTTP request: refuses an oversize Content-Length before buffering, then
 * parses the multipart body and validates it with `parseTranscriptionForm`.
 */
export async function readTranscriptionRequest(
  request: Request,
  maxBytes: number = MAX_AUDIO_BYTES,
): Promise<TranscriptionUpload> {
  const type = request.headers.get('content-type') ?? ''
  if (!type.toLowerCase().startsWith('multipart/form-data')) {
    throw new AppError(
      400,
      'invalid_transcription_request',
      `send the audio as multipart/form-data with a "file" field (got Content-Type ${JSON.stringify(type || 'none')})`,
    )
  }
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (Number.isFinite(declared) && declared > maxBytes + MULTIPART_OVERHEAD_BYTES)
    throw tooLarge(declared, maxBytes)
  let form: FormData
  try {
    form = await request.formData()
  } catch {
    throw new AppError(
      400,
      'invalid_transcription_request',
      'the multipart body could not be parsed; check the boundary and framing',
    )
  }
  return parseTranscriptionForm(form, maxBytes)
}
