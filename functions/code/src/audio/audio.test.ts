import { describe, expect, it } from 'vitest'
import { AppError } from '../../../../shared/http/errors'
import flacUrl from '../../../../test/fixtures/audio/hello.flac?inline'
import m4aUrl from '../../../../test/fixtures/audio/hello.m4a?inline'
import mp3Url from '../../../../test/fixtures/audio/hello.mp3?inline'
import oggUrl from '../../../../test/fixtures/audio/hello.ogg?inline'
import opusUrl from '../../../../test/fixtures/audio/hello.opus?inline'
import webmUrl from '../../../../test/fixtures/audio/hello.webm?inline'
import mkaUrl from '../../../../test/fixtures/audio/hello-matroska.webm?inline'
import rawMp3Url from '../../../../test/fixtures/audio/hello-raw.mp3?inline'
import { parseMpegFrameHeader, sniffAudio } from './audio-sniff'
import {
  checkAudioUpload,
  MAX_AUDIO_BYTES,
  parseTranscriptionForm,
  readTranscriptionRequest,
} from './audio-upload'

function bytesOf(dataUrl: string): Uint8Array {
  const b64 = dataUrl.slice(dataUrl.indexOf(',') + 1)
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))
}

/** A real PCM WAV: RIFF header, fmt chunk, data chunk with a 440 Hz tone. */
function buildWav(seconds = 0.05, sampleRate = 16000, riff = 'RIFF'): Uint8Array {
  const samples = Math.round(seconds * sampleRate)
  const buf = new ArrayBuffer(44 + samples * 2)
  const v = new DataView(buf)
  const text = (at: number, s: string) => {
    for (let i = 0; i < s.length; i++) v.setUint8(at + i, s.charCodeAt(i))
  }
  text(0, riff)
  v.setUint32(4, 36 + samples * 2, true)
  text(8, 'WAVE')
  text(12, 'fmt ')
  v.setUint32(16, 16, true)
  v.setUint16(20, 1, true) // PCM
  v.setUint16(22, 1, true) // mono
  v.setUint32(24, sampleRate, true)
  v.setUint32(28, sampleRate * 2, true)
  v.setUint16(32, 2, true)
  v.setUint16(34, 16, true)
  text(36, 'data')
  v.setUint32(40, samples * 2, true)
  for (let i = 0; i < samples; i++)
    v.setInt16(44 + i * 2, Math.round(Math.sin((2 * Math.PI * 440 * i) / sampleRate) * 8000), true)
  return new Uint8Array(buf)
}

const fixtures = {
  mp3: bytesOf(mp3Url),
  rawMp3: bytesOf(rawMp3Url),
  opus: bytesOf(opusUrl),
  vorbis: bytesOf(oggUrl),
  flac: bytesOf(flacUrl),
  webm: bytesOf(webmUrl),
  mka: bytesOf(mkaUrl),
  m4a: bytesOf(m4aUrl),
  wav: buildWav(),
}

function rejection(f: () => unknown): AppError {
  try {
    f()
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
  throw new Error('expected an AppError')
}

async function asyncRejection(p: Promise<unknown>): Promise<AppError> {
  try {
    await p
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
  throw new Error('expected an AppError')
}

describe('sniffAudio on real files', () => {
  it.each([
    ['mp3', 'mp3', 'MPEG-2 Layer III audio at 16000 Hz'],
    ['rawMp3', 'mp3', 'MPEG-2 Layer III audio at 16000 Hz'],
    ['opus', 'ogg-opus', 'Opus audio in an Ogg container'],
    ['vorbis', 'ogg-vorbis', 'Vorbis audio in an Ogg container'],
    ['flac', 'flac', 'a FLAC file'],
    ['webm', 'webm', 'a WebM file'],
    ['mka', 'matroska', 'a Matroska file'],
    ['m4a', 'mp4', 'an MP4 file (brand "M4A ")'],
    ['wav', 'wav', 'a WAV (RIFF/WAVE) file'],
  ] as const)('%s -> %s', (name, format, detail) => {
    expect(sniffAudio(fixtures[name])).toEqual({ format, detail })
  })

  it('fixtures are tiny', () => {
    for (const bytes of Object.values(fixtures)) expect(bytes.length).toBeLessThan(20 * 1024)
  })
})

describe('sniffAudio on crafted bytes', () => {
  const b = (...parts: Array<string | number[]>) =>
    Uint8Array.from(parts.flatMap((p) => (typeof p === 'string' ? [...p].map((c) => c.charCodeAt(0)) : p)))

  it('parses MPEG frame headers and rejects reserved bits', () => {
    expect(parseMpegFrameHeader(b([0xff, 0xfb, 0x90, 0x64]), 0)).toEqual({
      version: '1',
      layer: 3,
      sampleRate: 44100,
      length: 417,
    })
    expect(parseMpegFrameHeader(b([0xff, 0xf3, 0x48, 0xc4]), 0)).toEqual({
      version: '2',
      layer: 3,
      sampleRate: 16000,
      length: 144,
    })
    expect(parseMpegFrameHeader(b([0xff, 0xfb, 0xf0, 0x64]), 0)).toBeNull() // bitrate index 15
    expect(parseMpegFrameHeader(b([0xff, 0xfb, 0x9c, 0x64]), 0)).toBeNull() // sample-rate index 3
    expect(parseMpegFrameHeader(b([0xff, 0xeb, 0x90, 0x64]), 0)).toBeNull() // version bits 01
    expect(parseMpegFrameHeader(b([0xff, 0xf9, 0x90, 0x64]), 0)).toBeNull() // layer bits 00
  })

  it('needs the next MPEG frame where the first one ends', () => {
    const frame = [0xff, 0xf3, 0x48, 0xc4, ...new Array(140).fill(0x55)]
    expect(sniffAudio(b(frame, frame, frame))?.format).toBe('mp3')
    expect(sniffAudio(b(frame, 'garbage!'))).toBeNull()
  })

  it('recognises unsupported formats by name', () => {
    expect(sniffAudio(b([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc]))?.format).toBe('aac-adts')
    expect(sniffAudio(b('FORM', [0, 0, 0, 4], 'AIFF'))?.format).toBe('aiff')
    expect(sniffAudio(b('#!AMR\n'))?.format).toBe('amr')
    expect(sniffAudio(b([0, 0, 0, 20], 'ftypqt  ', [0, 0, 0, 0], 'qt  '))?.format).toBe('quicktime')
    expect(sniffAudio(b([0, 0, 0, 24], 'ftyp3gp4', [0, 0, 0, 0], 'isom3gp4'))?.format).toBe('3gpp')
    expect(sniffAudio(b([0, 0, 0, 20], 'ftypXYZ1', [0, 0, 0, 0], 'mp42'))?.format).toBe('mp4')
    expect(sniffAudio(b([0, 0, 0, 20], 'ftypheic', [0, 0, 0, 0], 'mif1'))?.format).toBe('isobmff-other')
    const speex = b('OggS', [0, 2], new Array(20).fill(0), [1, 8], 'Speex   ')
    expect(sniffAudio(speex)).toMatchObject({ format: 'ogg-other' })
    const mkv = b([0x1a, 0x45, 0xdf, 0xa3, 0x88, 0x42, 0x82, 0x85], 'other')
    expect(sniffAudio(mkv)).toEqual({ format: 'ebml-other', detail: 'an EBML file of DocType "other"' })
  })

  it('sees FLAC behind an ID3 tag and rejects text', () => {
    const id3 = b('ID3', [3, 0, 0, 0, 0, 0, 4], [0, 0, 0, 0])
    expect(sniffAudio(Uint8Array.from([...id3, ...fixtures.flac]))?.format).toBe('flac')
    expect(sniffAudio(b('hello, this is not audio'))).toBeNull()
    expect(sniffAudio(b('fLaC', [0x81]))).toBeNull() // first block must be STREAMINFO
    expect(sniffAudio(buildWav(0.01, 8000, 'RF64'))?.format).toBe('wav')
  })
})

describe('checkAudioUpload', () => {
  it.each([
    ['mp3', 'memo.mp3', 'audio/mpeg', 'mp3', 'memo.mp3'],
    ['rawMp3', 'memo.mpga', 'audio/mp3', 'mp3', 'memo.mp3'],
    ['opus', 'memo.opus', 'audio/ogg; codecs=opus', 'ogg-opus', 'memo.ogg'],
    ['vorbis', 'memo.ogg', 'audio/ogg', 'ogg-vorbis', 'memo.ogg'],
    ['flac', 'memo.flac', 'audio/x-flac', 'flac', 'memo.flac'],
    ['webm', 'blob', 'audio/webm;codecs=opus', 'webm', 'blob.webm'],
    ['mka', 'memo.mka', 'video/webm', 'matroska', 'memo.webm'],
    ['m4a', 'memo.m4a', 'audio/mp4', 'mp4', 'memo.m4a'],
    ['m4a', 'memo.mp4', 'video/mp4', 'mp4', 'memo.m4a'],
    ['wav', 'C:\\Users\\me\\memo.wav', 'audio/wav', 'wav', 'memo.wav'],
    ['wav', undefined, undefined, 'wav', 'audio.wav'],
    ['wav', 'recording.bin', 'application/octet-stream', 'wav', 'recording.wav'],
  ] as const)('accepts %s named %s (%s)', (fixture, filename, contentType, format, upstreamName) => {
    const checked = checkAudioUpload({ bytes: fixtures[fixture], filename, contentType })
    expect(checked.format).toBe(format)
    expect(checked.filename).toBe(upstreamName)
    expect(checked.size).toBe(fixtures[fixture].length)
  })

  it('rejects an MP3 named .wav, saying what was detected and what was declared', () => {
    const err = rejection(() =>
      checkAudioUpload({ bytes: fixtures.mp3, filename: 'speech.wav', contentType: 'audio/wav' }),
    )
    expect(err.status).toBe(400)
    expect(err.code).toBe('audio_mislabeled')
    expect(err.param).toBe('file')
    expect(err.message).toBe(
      'the file "speech.wav" is declared as WAV by its .wav extension, but its content is MP3 (MPEG audio) (MPEG-2 Layer III audio at 16000 Hz); rename it to .mp3 or re-encode it',
    )
  })

  it.each([
    [
      'a WAV sent as audio/mpeg',
      'wav',
      'x',
      'audio/mpeg',
      'declared as MP3 by its Content-Type audio/mpeg, but its content is WAV',
    ],
    ['Vorbis named .opus', 'vorbis', 'x.opus', '', 'declared as Ogg Opus'],
    ['FLAC named .m4a', 'flac', 'x.m4a', '', 'declared as M4A'],
    ['WebM sent as text/plain', 'webm', 'x', 'text/plain', 'declared as "text/plain"'],
    ['MP3 named .aac', 'mp3', 'x.aac', '', 'declared as AAC'],
  ] as const)('rejects %s', (_name, fixture, filename, contentType, message) => {
    const err = rejection(() => checkAudioUpload({ bytes: fixtures[fixture], filename, contentType }))
    expect(err.code).toBe('audio_mislabeled')
    expect(err.message).toContain(message)
  })

  it('rejects unsupported and unrecognised content', () => {
    const aac = rejection(() =>
      checkAudioUpload({ bytes: Uint8Array.from([0xff, 0xf1, 0x50, 0x80, 0, 0, 0]), filename: 'a.mp3' }),
    )
    expect(aac.code).toBe('unsupported_audio_format')
    expect(aac.message).toContain('raw AAC in an ADTS stream, which is not supported')
    const pdf = rejection(() =>
      checkAudioUpload({ bytes: new TextEncoder().encode('%PDF-1.7 ...'), filename: 'a.wav' }),
    )
    expect(pdf.code).toBe('unsupported_audio_format')
    expect(pdf.message).toContain('starts with 25 50 44 46 2d 31 2e 37')
  })

  it('rejects empty and oversize files', () => {
    expect(rejection(() => checkAudioUpload({ bytes: new Uint8Array(0), filename: 'a.wav' })).code).toBe(
      'audio_empty',
    )
    const big = rejection(() => checkAudioUpload({ bytes: fixtures.flac, maxBytes: 1000 }))
    expect(big.status).toBe(400)
    expect(big.code).toBe('audio_too_large')
    expect(MAX_AUDIO_BYTES).toBe(26_214_400)
  })
})

describe('transcription form and request', () => {
  const form = (fields: Record<string, string | File>) => {
    const f = new FormData()
    for (const [k, v] of Object.entries(fields)) f.append(k, v)
    return f
  }
  const wavFile = () => new File([fixtures.wav], 'memo.wav', { type: 'audio/wav' })

  it('parses file, language and prompt and ignores OpenAI-only fields', async () => {
    const upload = await parseTranscriptionForm(
      form({
        file: wavFile(),
        language: 'pt-BR',
        prompt: ' svc, MCP ',
        model: 'whisper-1',
        response_format: 'json',
      }),
    )
    expect(upload.audio.format).toBe('wav')
    expect(upload.language).toBe('pt-BR')
    expect(upload.prompt).toBe('svc, MCP')
    expect(upload.audio.bytes).toEqual(fixtures.wav)
  })

  it.each([
    ['missing file', { language: 'en' }, 'file', 'file is required'],
    ['file as text', { file: 'not a file' }, 'file', 'must be a file upload'],
    ['bad language', { file: 'x', language: 'english please' }, 'language', 'ISO 639-1'],
    ['long prompt', { file: 'x', prompt: 'p'.repeat(4001) }, 'prompt', 'at most 4000 characters (got 4001)'],
  ])('rejects %s', async (_name, fields, param, message) => {
    const f = form(
      Object.fromEntries(
        Object.entries(fields).map(([k, v]) => [k, k === 'file' && v === 'x' ? wavFile() : v]),
      ),
    )
    const err = await asyncRejection(parseTranscriptionForm(f))
    expect(err.status).toBe(400)
    expect(err.param).toBe(param)
    expect(err.message).toContain(message)
  })

  it('refuses a file over 25 MiB from its size, before reading it', async () => {
    const huge = new File([new Uint8Array(MAX_AUDIO_BYTES + 1)], 'big.wav', { type: 'audio/wav' })
    const err = await asyncRejection(parseTranscriptionForm(form({ file: huge })))
    expect(err.code).toBe('audio_too_large')
    expect(err.message).toContain('the limit is 25.0 MiB (26214400 bytes)')
  })

  it('reads a real multipart request and rejects other content types and oversize bodies', async () => {
    const req = new Request('http://x/svc/code/v1/transcribe', {
      method: 'POST',
      body: form({ file: wavFile(), language: 'en' }),
    })
    const upload = await readTranscriptionRequest(req)
    expect(upload.audio.filename).toBe('memo.wav')
    const json = new Request('http://x', {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    })
    expect((await asyncRejection(readTranscriptionRequest(json))).message).toContain('multipart/form-data')
    const big = new Request('http://x', {
      method: 'POST',
      body: 'x',
      headers: {
        'content-type': 'multipart/form-data; boundary=b',
        'content-length': String(MAX_AUDIO_BYTES * 2),
      },
    })
    expect((await asyncRejection(readTranscriptionRequest(big))).code).toBe('audio_too_large')
    const broken = new Request('http://x', {
      method: 'POST',
      body: '--b\r\nnot a part',
      headers: { 'content-type': 'multipart/form-data; boundary=b' },
    })
    expect((await asyncRejection(readTranscriptionRequest(broken))).code).toBe(
      'invalid_transcription_request',
    )
  })
})
