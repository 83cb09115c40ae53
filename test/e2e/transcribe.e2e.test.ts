/**
 * POST /svc/code/v1/transcribe against the running stack with real audio: a WAV written here,
 * the recordings in test/fixtures/audio, and the same bytes mislabeled. Live keys reach the
 * OpenAI-compatible speech fake (test/fakes/speech-provider.ts, scripted over HTTP); nothing
 * that fails validation ever reaches it. Test keys get the built-in test-mode transcriber.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ROOT } from '../../scripts/workers.ts'
import { createWorkspace, waitForLedger } from './chat-fixtures.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack()
const control = stack.fakes.speech!.controlUrl as string
const fixture = (name: string) => new Uint8Array(readFileSync(path.join(ROOT, 'test/fixtures/audio', name)))

/** A real PCM WAV file: 16-bit mono at 16 kHz, `seconds` of a 440 Hz tone. */
function wav(seconds = 0.25, rate = 16_000): Uint8Array<ArrayBuffer> {
  const samples = Math.round(seconds * rate)
  const data = Buffer.alloc(samples * 2)
  for (let i = 0; i < samples; i++)
    data.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / rate) * 12_000), i * 2)
  const header = Buffer.alloc(44)
  header.write('RIFF', 0, 'ascii')
  header.writeUInt32LE(36 + data.length, 4)
  header.write('WAVE', 8, 'ascii')
  header.write('fmt ', 12, 'ascii')
  header.writeUInt32LE(16, 16)
  header.writeUInt16LE(1, 20)
  header.writeUInt16LE(1, 22)
  header.writeUInt32LE(rate, 24)
  header.writeUInt32LE(rate * 2, 28)
  header.writeUInt16LE(2, 32)
  header.writeUInt16LE(16, 34)
  header.write('data', 36, 'ascii')
  header.writeUInt32LE(data.length, 40)
  const out = new Uint8Array(header.length + data.length)
  out.set(header)
  out.set(data, header.length)
  return out
}

async function transcribe(
  file: Uint8Array<ArrayBuffer> | null,
  options: { name?: string; type?: string; key?: string; fields?: Record<string, string> } = {},
): Promise<Response> {
  const form = new FormData()
  if (file) form.append('file', new Blob([file], { type: options.type ?? '' }), options.name ?? 'audio')
  for (const [k, v] of Object.entries(options.fields ?? {})) form.append(k, v)
  return fetch(`${stack.baseUrl}/svc/code/v1/transcribe`, {
    method: 'POST',
    headers: { authorization: `Bearer ${options.key ?? stack.tenantA.liveKey}` },
    body: form,
  })
}

/** The seconds of audio the speech fake reports with its transcripts (null: it reports none). */
async function reportSeconds(seconds: number | null): Promise<void> {
  await fetch(`${control}/seconds`, { method: 'POST', body: JSON.stringify({ seconds }) })
}

interface Recorded {
  model: string | null
  filename: string | null
  fileType: string | null
  size: number
  language: string | null
  prompt: string | null
  authorization: string | null
}

async function received(): Promise<Recorded[]> {
  return ((await (await fetch(`${control}/requests`)).json()) as { requests: Recorded[] }).requests
}

afterEach(async () => {
  await fetch(`${control}/reset`, { method: 'POST' })
})

describe(`transcription (${stack.kind})`, () => {
  it('transcribes a WAV through the configured provider: {text, provider, model}', async () => {
    const audio = wav()
    const res = await transcribe(audio, {
      name: 'note.wav',
      type: 'audio/wav',
      fields: { language: 'en', prompt: 'svc' },
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      text: `transcript of note.wav (${audio.length} bytes) by whisper-1 in en`,
      provider: 'local',
      model: 'whisper-1',
    })
    const [sent] = await received()
    expect(sent).toMatchObject({
      model: 'whisper-1',
      filename: 'note.wav',
      fileType: 'audio/wav',
      size: audio.length,
      language: 'en',
      prompt: 'svc',
    })
    expect(sent?.authorization).toMatch(/^Bearer stt-test-/)
  })

  it.each([
    ['hello.mp3', 'audio/mpeg', 'hello.mp3', 'audio/mpeg'],
    ['hello-raw.mp3', '', 'hello-raw.mp3', 'audio/mpeg'],
    ['hello.ogg', 'audio/ogg', 'hello.ogg', 'audio/ogg'],
    ['hello.opus', 'audio/opus', 'hello.ogg', 'audio/ogg'],
    ['hello.flac', 'audio/flac', 'hello.flac', 'audio/flac'],
    ['hello.webm', 'audio/webm', 'hello.webm', 'audio/webm'],
    ['hello-matroska.webm', 'application/octet-stream', 'hello-matroska.webm', 'audio/x-matroska'],
    ['hello.m4a', 'audio/mp4', 'hello.m4a', 'audio/mp4'],
  ])('accepts %s (%s) and sends it as %s, %s', async (name, type, sentName, sentType) => {
    const bytes = fixture(name)
    const res = await transcribe(bytes, { name, type })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { provider: string }).provider).toBe('local')
    expect(await received()).toEqual([
      expect.objectContaining({ filename: sentName, fileType: sentType, size: bytes.length }),
    ])
  })

  it('refuses a mislabeled file before sending it anywhere', async () => {
    const mp3AsWav = await transcribe(fixture('hello.mp3'), { name: 'hello.wav', type: 'audio/wav' })
    expect(mp3AsWav.status).toBe(400)
    expect(await mp3AsWav.json()).toEqual({
      error: {
        type: 'invalid_request_error',
        code: 'audio_mislabeled',
        param: 'file',
        message:
          'the file "hello.wav" is declared as WAV by its .wav extension, but its content is MP3 (MPEG audio) (MPEG-2 Layer III audio at 16000 Hz); rename it to .mp3 or re-encode it',
      },
    })
    const wavAsOgg = await transcribe(wav(), { name: 'speech', type: 'audio/ogg' })
    expect(wavAsOgg.status).toBe(400)
    expect(((await wavAsOgg.json()) as { error: { message: string } }).error.message).toMatch(
      /^the file is declared as Ogg by its Content-Type audio\/ogg, but its content is WAV/,
    )
    expect(await received()).toEqual([])
  })

  it('refuses unsupported, empty and oversize audio with a clear 400', async () => {
    const text = await transcribe(new TextEncoder().encode('this is not audio at all'), { name: 'notes.txt' })
    expect(text.status).toBe(400)
    expect(await text.json()).toMatchObject({ error: { code: 'unsupported_audio_format', param: 'file' } })

    const empty = await transcribe(new Uint8Array(0), { name: 'empty.wav' })
    expect(empty.status).toBe(400)
    expect(await empty.json()).toMatchObject({ error: { code: 'audio_empty' } })

    const big = new Uint8Array(25 * 1024 * 1024 + 1)
    big.set(wav(0.01))
    const oversize = await transcribe(big, { name: 'long.wav', type: 'audio/wav' })
    expect(oversize.status).toBe(400)
    expect(await oversize.json()).toMatchObject({
      error: {
        code: 'audio_too_large',
        message: expect.stringContaining('the limit is 25.0 MiB (26214400 bytes)'),
      },
    })

    const missing = await transcribe(null, { fields: { language: 'en' } })
    expect(missing.status).toBe(400)
    expect(await missing.json()).toMatchObject({
      error: { code: 'invalid_transcription_request', param: 'file' },
    })

    const language = await transcribe(wav(), { name: 'a.wav', fields: { language: 'english please' } })
    expect(language.status).toBe(400)
    expect(await language.json()).toMatchObject({ error: { param: 'language' } })
    expect(await received()).toEqual([])
  })

  it('answers 502 naming the provider and how it failed when every provider fails', async () => {
    await fetch(`${control}/fail`, { method: 'POST', body: JSON.stringify({ failure: 'status_503' }) })
    const res = await transcribe(wav(), { name: 'a.wav' })
    expect(res.status).toBe(502)
    expect(await res.json()).toMatchObject({
      error: {
        code: 'transcription_providers_failed',
        message: 'every configured speech-recognition provider failed: local: HTTP 503',
      },
      failures: [{ provider: 'local', kind: 'http_status', status: 503 }],
    })
  })

  it('uses the built-in test-mode transcriber for test keys (validation still applies)', async () => {
    const audio = wav()
    const res = await transcribe(audio, { name: 'memo.wav', key: stack.tenantA.testKey })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      text: `Test mode transcript of memo.wav (audio/wav, ${audio.length} bytes). Use a live key to transcribe the speech.`,
      provider: 'test-mode',
      model: 'svc-test-transcriber',
    })
    const bad = await transcribe(fixture('hello.flac'), { name: 'memo.mp3', key: stack.tenantA.testKey })
    expect(bad.status).toBe(400)
    expect(await received()).toEqual([])
  })

  it('answers 415 for a body that is not multipart (the gateway checks the content type)', async () => {
    const res = await fetch(`${stack.baseUrl}/svc/code/v1/transcribe`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tenantA.liveKey}`, 'content-type': 'audio/wav' },
      body: wav(),
    })
    expect(res.status).toBe(415)
  })
})

describe(`transcription: metered in seconds of audio (${stack.kind})`, () => {
  it('records the seconds the provider reports, as one transcription in the ledger', async () => {
    const workspace = await createWorkspace('pro')
    await reportSeconds(7)
    const res = await transcribe(wav(6.5), { name: 'note.wav', type: 'audio/wav', key: workspace.liveKey })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('120')
    const rows = await waitForLedger(workspace.tenantId, (r) => r.length === 1)
    expect(rows[0]).toMatchObject({
      mode: 'live',
      endpoint: 'code.transcribe',
      model: 'transcription',
      provider: 'local',
      unit: 'seconds',
      quantity: 7,
      credits_cents: '0.0000',
      estimated: false,
    })
  })

  it("counts the upload's own length, marked estimated, when the provider reports none", async () => {
    const workspace = await createWorkspace('pro')
    await reportSeconds(null)
    const res = await transcribe(wav(2.5), { name: 'note.wav', type: 'audio/wav', key: workspace.liveKey })
    expect(res.status).toBe(200)
    const rows = await waitForLedger(workspace.tenantId, (r) => r.length === 1)
    expect(rows[0]).toMatchObject({ unit: 'seconds', quantity: 3, estimated: true })
  })

  it("refuses once the plan's monthly seconds are used, before anything is sent", async () => {
    const workspace = await createWorkspace('pro', { toolUse: { transcription: 3_600 } })
    const res = await transcribe(wav(), { name: 'note.wav', type: 'audio/wav', key: workspace.liveKey })
    expect(res.status).toBe(429)
    expect(await res.json()).toMatchObject({
      error: { code: 'tier_allowance_exhausted' },
      svc_upgrade: {
        requested_feature: 'transcription',
        binding_limit: { kind: 'seconds', unit: 'seconds', used: 3_600, limit: 3_600 },
      },
    })
    expect(await received()).toEqual([])
  })
})
