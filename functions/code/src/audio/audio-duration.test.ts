import { describe, expect, it } from 'vitest'
import flacUrl from '../../../../test/fixtures/audio/hello.flac?inline'
import mp3Url from '../../../../test/fixtures/audio/hello.mp3?inline'
import opusUrl from '../../../../test/fixtures/audio/hello.opus?inline'
import { estimateAudioSeconds } from './audio-duration'

const bytesOf = (dataUrl: string) =>
  Uint8Array.from(atob(dataUrl.split(',')[1] ?? ''), (c) => c.charCodeAt(0))

/** A PCM WAV header and `seconds` of silence at 16 kHz, 16-bit mono (32,000 bytes a second). */
function wav(seconds: number): Uint8Array {
  const data = Math.round(seconds * 32_000)
  const bytes = new Uint8Array(44 + data)
  const view = new DataView(bytes.buffer)
  bytes.set(
    [...'RIFF'].map((c) => c.charCodeAt(0)),
    0,
  )
  view.setUint32(4, 36 + data, true)
  bytes.set(
    [...'WAVEfmt '].map((c) => c.charCodeAt(0)),
    8,
  )
  view.setUint32(16, 16, true)
  view.setUint16(20, 1, true)
  view.setUint16(22, 1, true)
  view.setUint32(24, 16_000, true)
  view.setUint32(28, 32_000, true)
  view.setUint16(32, 2, true)
  view.setUint16(34, 16, true)
  bytes.set(
    [...'data'].map((c) => c.charCodeAt(0)),
    36,
  )
  view.setUint32(40, data, true)
  return bytes
}

describe('the seconds of audio an upload holds', () => {
  it('reads WAV exactly from its header, rounded up to whole seconds', () => {
    expect(estimateAudioSeconds({ format: 'wav', bytes: wav(90) })).toBe(90)
    expect(estimateAudioSeconds({ format: 'wav', bytes: wav(2.2) })).toBe(3)
    expect(estimateAudioSeconds({ format: 'wav', bytes: wav(0.25) })).toBe(1)
  })

  it('reads FLAC and MP3 from their headers, the rest from the size at a speech bitrate', () => {
    // The fixtures hold the same 1.065 s of speech (the FLAC's STREAMINFO: 8,520 samples at 8 kHz).
    expect(estimateAudioSeconds({ format: 'flac', bytes: bytesOf(flacUrl) })).toBe(2)
    // The MP3's first frame is 40 kb/s where the stream averages 32: 0.96 s, an estimate.
    expect(estimateAudioSeconds({ format: 'mp3', bytes: bytesOf(mp3Url) })).toBe(1)
    const opus = bytesOf(opusUrl)
    expect(estimateAudioSeconds({ format: 'ogg-opus', bytes: opus })).toBe(
      Math.max(1, Math.ceil(opus.length / 4_000)),
    )
  })
})
