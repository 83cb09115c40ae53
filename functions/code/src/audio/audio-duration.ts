/**
 * How many seconds of audio an upload holds, as far as its bytes tell, for metering a
 * transcription before (and, when the provider reports no duration, after) it runs:
 *
 * | format                    | how                                                          |
 * |---------------------------|--------------------------------------------------------------|
 * | WAV                       | exact: the `data` chunk's size over the `fmt ` byte rate      |
 * | FLAC                      | exact: STREAMINFO's total samples over its sample rate        |
 * | MP3                       | the size over the first frame's bitrate (exact for CBR)       |
 * | Ogg, WebM/Matroska, MP4   | the size over a typical speech bitrate of the codec           |
 *
 * Always whole seconds, rounded up, at least 1. The provider's own figure, when it reports one,
 * replaces this estimate in the ledger.
 */
import { parseMpegFrameHeader } from './audio-sniff'
import type { CheckedAudio } from './audio-upload'

/** Typical bytes per second of speech for containers whose length the bytes do not state. */
const NOMINAL_BYTES_PER_SECOND: Readonly<Record<string, number>> = {
  'ogg-opus': 4_000, // 32 kbit/s
  webm: 4_000,
  matroska: 4_000,
  'ogg-vorbis': 8_000, // 64 kbit/s
  mp4: 8_000, // AAC at 64 kbit/s
  'ogg-flac': 64_000,
  mp3: 16_000, // 128 kbit/s, when no frame header is readable
  wav: 32_000, // 16 kHz, 16-bit mono, when the header is not readable
  flac: 64_000,
}

const u32le = (b: Uint8Array, at: number) =>
  (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0
const u32be = (b: Uint8Array, at: number) =>
  ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0
const tag = (b: Uint8Array, at: number) => String.fromCharCode(b[at]!, b[at + 1]!, b[at + 2]!, b[at + 3]!)

/** WAV: walks the RIFF chunks for the byte rate and the data size. */
function wavSeconds(b: Uint8Array): number | null {
  let byteRate = 0
  for (let at = 12; at + 8 <= b.length; ) {
    const size = u32le(b, at + 4)
    if (tag(b, at) === 'fmt ' && at + 16 <= b.length) byteRate = u32le(b, at + 16)
    if (tag(b, at) === 'data') return byteRate > 0 ? Math.min(size, b.length - at - 8) / byteRate : null
    at += 8 + size + (size % 2)
  }
  return null
}

/** Skips an ID3v2 tag (syncsafe size) at the start, if any. */
function afterId3(b: Uint8Array): number {
  if (b.length < 10 || tag(b, 0).slice(0, 3) !== 'ID3') return 0
  return 10 + ((b[6]! << 21) | (b[7]! << 14) | (b[8]! << 7) | b[9]!)
}

/** FLAC: STREAMINFO (the first metadata block) holds the sample rate and the total samples. */
function flacSeconds(b: Uint8Array): number | null {
  const start = afterId3(b)
  const info = start + 8
  if (tag(b, start) !== 'fLaC' || info + 18 > b.length) return null
  const rate = (b[info + 10]! << 12) | (b[info + 11]! << 4) | (b[info + 12]! >> 4)
  const samples = (b[info + 13]! & 0x0f) * 2 ** 32 + u32be(b, info + 14)
  return rate > 0 && samples > 0 ? samples / rate : null
}

/** MP3: the audio after the tag over the first frame's bitrate. */
function mp3Seconds(b: Uint8Array): number | null {
  const start = afterId3(b)
  const frame = parseMpegFrameHeader(b, start)
  if (!frame || frame.length === 0) return null
  // A frame of `length` bytes holds 1152 samples (Layer II/III, MPEG-1) or 576 (MPEG-2/2.5 Layer III).
  const samplesPerFrame = frame.layer === 1 ? 384 : frame.layer === 3 && frame.version !== '1' ? 576 : 1152
  const bytesPerSecond = (frame.length * frame.sampleRate) / samplesPerFrame
  return (b.length - start) / bytesPerSecond
}

export function estimateAudioSeconds(audio: Pick<CheckedAudio, 'bytes' | 'format'>): number {
  const exact =
    audio.format === 'wav'
      ? wavSeconds(audio.bytes)
      : audio.format === 'flac'
        ? flacSeconds(audio.bytes)
        : audio.format === 'mp3'
          ? mp3Seconds(audio.bytes)
          : null
  const seconds = exact ?? audio.bytes.length / (NOMINAL_BYTES_PER_SECOND[audio.format] ?? 16_000)
  return Math.max(1, Math.ceil(seconds - 1e-9))
}
