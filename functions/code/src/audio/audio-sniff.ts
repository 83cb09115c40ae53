/**
 * Identifies an audio container from its first bytes, never from what the client claims.
 *
 * | format       | signature                                                                          |
 * |--------------|------------------------------------------------------------------------------------|
 * | wav          | `RIFF`/`RF64`/`BW64` size `WAVE`                                                   |
 * | mp3          | optional ID3v2 tag (syncsafe size), then an MPEG audio frame header with valid      |
 * |              | version/layer/bitrate/sample-rate bits, and the next frame where the first one ends |
 * | ogg-*        | `OggS` page, version 0, first packet `OpusHead` / `\x01vorbis` / `\x7FFLAC`       |
 * | flac         | `fLaC` then a STREAMINFO metadata block (may follow an ID3v2 tag)                  |
 * | webm/matroska| EBML magic `1A 45 DF A3`, header element DocType `webm` / `matroska`               |
 * | mp4          | `ftyp` box whose major or compatible brand is an ISO/MP4/M4A brand                  |
 *
 * Recognised but unsupported (so the 400 can say what the file really is): AAC in ADTS, AMR,
 * AIFF, Core Audio (CAF), QuickTime, 3GPP, other Ogg and EBML payloads.
 */

export const SUPPORTED_FORMATS = [
  'wav',
  'mp3',
  'ogg-opus',
  'ogg-vorbis',
  'ogg-flac',
  'flac',
  'webm',
  'matroska',
  'mp4',
] as const
export type SupportedAudioFormat = (typeof SUPPORTED_FORMATS)[number]
export type UnsupportedAudioFormat =
  | 'aac-adts'
  | 'amr'
  | 'aiff'
  | 'caf'
  | 'quicktime'
  | '3gpp'
  | 'isobmff-other'
  | 'ogg-other'
  | 'ebml-other'
export type AudioFormat = SupportedAudioFormat | UnsupportedAudioFormat

interface FormatInfo {
  label: string
  /** Canonical MIME type (for upstream uploads); empty for unsupported formats. */
  mime: string
  /** Extension an upstream decoder expects (OpenAI decides by the file name). */
  extension: string
  supported: boolean
}

export const FORMAT_INFO: Record<AudioFormat, FormatInfo> = {
  wav: { label: 'WAV', mime: 'audio/wav', extension: 'wav', supported: true },
  mp3: { label: 'MP3 (MPEG audio)', mime: 'audio/mpeg', extension: 'mp3', supported: true },
  'ogg-opus': { label: 'Ogg Opus', mime: 'audio/ogg', extension: 'ogg', supported: true },
  'ogg-vorbis': { label: 'Ogg Vorbis', mime: 'audio/ogg', extension: 'ogg', supported: true },
  'ogg-flac': { label: 'Ogg FLAC', mime: 'audio/ogg', extension: 'ogg', supported: true },
  flac: { label: 'FLAC', mime: 'audio/flac', extension: 'flac', supported: true },
  webm: { label: 'WebM', mime: 'audio/webm', extension: 'webm', supported: true },
  matroska: { label: 'Matroska', mime: 'audio/x-matroska', extension: 'webm', supported: true },
  mp4: { label: 'MP4/M4A', mime: 'audio/mp4', extension: 'm4a', supported: true },
  'aac-adts': { label: 'raw AAC (ADTS)', mime: '', extension: 'aac', supported: false },
  amr: { label: 'AMR', mime: '', extension: 'amr', supported: false },
  aiff: { label: 'AIFF', mime: '', extension: 'aiff', supported: false },
  caf: { label: 'Core Audio Format (CAF)', mime: '', extension: 'caf', supported: false },
  quicktime: { label: 'QuickTime (MOV)', mime: '', extension: 'mov', supported: false },
  '3gpp': { label: '3GPP', mime: '', extension: '3gp', supported: false },
  'isobmff-other': {
    label: 'an ISO media file that is not MP4 audio',
    mime: '',
    extension: '',
    supported: false,
  },
  'ogg-other': {
    label: 'an Ogg stream that is not Opus, Vorbis or FLAC',
    mime: '',
    extension: '',
    supported: false,
  },
  'ebml-other': {
    label: 'an EBML file that is not WebM or Matroska',
    mime: '',
    extension: '',
    supported: false,
  },
}

export interface SniffedAudio {
  format: AudioFormat
  /** Human-readable, e.g. "MP3 (MPEG-2 Layer III)". */
  detail: string
}

function ascii(bytes: Uint8Array, start: number, length: number): string {
  if (start + length > bytes.length) return ''
  let out = ''
  for (let i = start; i < start + length; i++) out += String.fromCharCode(bytes[i]!)
  return out
}

function u32be(bytes: Uint8Array, at: number): number {
  return ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0
}

// --- MPEG audio -------------------------------------------------------------------------------

const BITRATES_KBPS: Record<string, readonly number[]> = {
  // MPEG-1, layers I, II, III
  '1-1': [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
  '1-2': [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
  '1-3': [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  // MPEG-2 and 2.5
  '2-1': [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
  '2-2': [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  '2-3': [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
}
const SAMPLE_RATES: Record<number, readonly number[]> = {
  3: [44100, 48000, 32000], // MPEG-1
  2: [22050, 24000, 16000], // MPEG-2
  0: [11025, 12000, 8000], // MPEG-2.5
}

interface MpegFrame {
  version: '1' | '2' | '2.5'
  layer: 1 | 2 | 3
  sampleRate: number
  /** Bytes in this frame; 0 for free-format streams (length unknown). */
  length: number
}

/** Parses an MPEG audio frame header, or returns null when any field is reserved/invalid. */
export function parseMpegFrameHeader(bytes: Uint8Array, at: number): MpegFrame | null {
  if (at + 4 > bytes.length) return null
  const b1 = bytes[at + 1]!
  const b2 = bytes[at + 2]!
  const b3 = bytes[at + 3]!
  if (bytes[at] !== 0xff || (b1 & 0xe0) !== 0xe0) return null
  const versionBits = (b1 >> 3) & 0b11
  const layerBits = (b1 >> 1) & 0b11
  const bitrateIndex = b2 >> 4
  const sampleRateIndex = (b2 >> 2) & 0b11
  if (
    versionBits === 1 ||
    layerBits === 0 ||
    bitrateIndex === 15 ||
    sampleRateIndex === 3 ||
    (b3 & 0b11) === 2
  ) {
    return null
  }
  const layer = (4 - layerBits) as 1 | 2 | 3
  const version = versionBits === 3 ? '1' : versionBits === 2 ? '2' : '2.5'
  const sampleRate = SAMPLE_RATES[versionBits]![sampleRateIndex]!
  const bitrate = BITRATES_KBPS[`${version === '1' ? 1 : 2}-${layer}`]![bitrateIndex]! * 1000
  const padding = (b2 >> 1) & 1
  let length = 0
  if (bitrate > 0) {
    if (layer === 1) length = (Math.floor((12 * bitrate) / sampleRate) + padding) * 4
    else if (layer === 3 && version !== '1') length = Math.floor((72 * bitrate) / sampleRate) + padding
    else length = Math.floor((144 * bitrate) / sampleRate) + padding
  }
  return { version, layer, sampleRate, length }
}

function sniffMpeg(bytes: Uint8Array, at: number): SniffedAudio | null {
  // ADTS (AAC) shares the 12-bit sync but has layer bits 00, which MPEG audio reserves.
  if (bytes[at] === 0xff && ((bytes[at + 1] ?? 0) & 0xf6) === 0xf0) {
    return { format: 'aac-adts', detail: 'raw AAC in an ADTS stream' }
  }
  const frame = parseMpegFrameHeader(bytes, at)
  if (!frame) return null
  const next = at + frame.length
  if (frame.length > 0 && next + 4 <= bytes.length) {
    const second = parseMpegFrameHeader(bytes, next)
    if (
      !second ||
      second.version !== frame.version ||
      second.layer !== frame.layer ||
      second.sampleRate !== frame.sampleRate
    ) {
      return null
    }
  }
  const layer = ['I', 'II', 'III'][frame.layer - 1]
  return { format: 'mp3', detail: `MPEG-${frame.version} Layer ${layer} audio at ${frame.sampleRate} Hz` }
}

/** Bytes taken by an ID3v2 tag at the start, or 0 when there is none. */
function id3v2Length(bytes: Uint8Array): number {
  if (ascii(bytes, 0, 3) !== 'ID3' || bytes.length < 10) return 0
  if (bytes[3] === 0xff || bytes[4] === 0xff) return 0
  const size = [6, 7, 8, 9].reduce((acc, i) => {
    const b = bytes[i]!
    return b & 0x80 ? Number.NaN : (acc << 7) | b
  }, 0)
  if (Number.isNaN(size)) return 0
  const footer = (bytes[5]! & 0x10) !== 0 ? 10 : 0
  return 10 + size + footer
}

// --- Ogg --------------------------------------------------------------------------------------

function sniffOgg(bytes: Uint8Array): SniffedAudio | null {
  if (ascii(bytes, 0, 4) !== 'OggS' || bytes[4] !== 0 || bytes.length < 28) return null
  const segments = bytes[26]!
  const packet = 27 + segments
  if (ascii(bytes, packet, 8) === 'OpusHead')
    return { format: 'ogg-opus', detail: 'Opus audio in an Ogg container' }
  if (bytes[packet] === 0x01 && ascii(bytes, packet + 1, 6) === 'vorbis') {
    return { format: 'ogg-vorbis', detail: 'Vorbis audio in an Ogg container' }
  }
  if (bytes[packet] === 0x7f && ascii(bytes, packet + 1, 4) === 'FLAC') {
    return { format: 'ogg-flac', detail: 'FLAC audio in an Ogg container' }
  }
  const codec = ascii(bytes, packet, 8).trim() || ascii(bytes, packet + 1, 6)
  return {
    format: 'ogg-other',
    detail: `an Ogg stream whose first packet is ${JSON.stringify(codec.replace(/[^\x20-\x7e]/g, '?'))}`,
  }
}

// --- EBML (WebM / Matroska) -------------------------------------------------------------------

/** Reads an EBML variable-length integer; `keepMarker` for element IDs. */
function readVint(
  bytes: Uint8Array,
  at: number,
  keepMarker: boolean,
): { value: number; length: number } | null {
  const first = bytes[at]
  if (first === undefined || first === 0) return null
  const length = Math.clz32(first) - 23
  if (length > 8 || at + length > bytes.length) return null
  let value = keepMarker ? first : first & (0xff >> length)
  for (let i = 1; i < length; i++) value = value * 256 + bytes[at + i]!
  return { value, length }
}

function sniffEbml(bytes: Uint8Array): SniffedAudio | null {
  if (u32be(bytes, 0) !== 0x1a45dfa3 || bytes.length < 5) return null
  const headerSize = readVint(bytes, 4, false)
  if (!headerSize) return null
  let at = 4 + headerSize.length
  const end = Math.min(bytes.length, at + headerSize.value)
  while (at < end) {
    const id = readVint(bytes, at, true)
    if (!id) break
    const size = readVint(bytes, at + id.length, false)
    if (!size) break
    const data = at + id.length + size.length
    if (id.value === 0x4282) {
      const docType = ascii(bytes, data, size.value).replace(/\0+$/, '')
      if (docType === 'webm') return { format: 'webm', detail: 'a WebM file' }
      if (docType === 'matroska') return { format: 'matroska', detail: 'a Matroska file' }
      return { format: 'ebml-other', detail: `an EBML file of DocType ${JSON.stringify(docType)}` }
    }
    at = data + size.value
  }
  return { format: 'ebml-other', detail: 'an EBML file without a DocType' }
}

// --- ISO base media (MP4 / M4A) ---------------------------------------------------------------

const MP4_BRANDS = new Set([
  'M4A ',
  'M4B ',
  'M4P ',
  'M4V ',
  'isom',
  'iso2',
  'iso3',
  'iso4',
  'iso5',
  'iso6',
  'iso8',
  'iso9',
  'mp41',
  'mp42',
  'mp71',
  'avc1',
  'dash',
  'MSNV',
  'f4a ',
  'f4v ',
  'NDAS',
])

function sniffIsoMedia(bytes: Uint8Array): SniffedAudio | null {
  if (ascii(bytes, 4, 4) !== 'ftyp' || bytes.length < 16) return null
  const size = u32be(bytes, 0)
  const major = ascii(bytes, 8, 4)
  const compatible: string[] = []
  for (let at = 16; at + 4 <= Math.min(size, bytes.length); at += 4) compatible.push(ascii(bytes, at, 4))
  const brand = JSON.stringify(major)
  if (MP4_BRANDS.has(major)) return { format: 'mp4', detail: `an MP4 file (brand ${brand})` }
  if (major === 'qt  ') return { format: 'quicktime', detail: 'a QuickTime movie' }
  if (major.startsWith('3g')) return { format: '3gpp', detail: `a 3GPP file (brand ${brand})` }
  if (compatible.some((b) => MP4_BRANDS.has(b)))
    return { format: 'mp4', detail: `an MP4 file (brand ${brand})` }
  return { format: 'isobmff-other', detail: `an ISO media file of brand ${brand}` }
}

// --- Entry point ------------------------------------------------------------------------------

/** The container of `bytes`, or null when no known signature matches. */
export function sniffAudio(bytes: Uint8Array): SniffedAudio | null {
  const riff = ascii(bytes, 0, 4)
  if ((riff === 'RIFF' || riff === 'RF64' || riff === 'BW64') && ascii(bytes, 8, 4) === 'WAVE') {
    return { format: 'wav', detail: riff === 'RIFF' ? 'a WAV (RIFF/WAVE) file' : `a WAV (${riff}/WAVE) file` }
  }
  if (riff === 'FORM' && (ascii(bytes, 8, 4) === 'AIFF' || ascii(bytes, 8, 4) === 'AIFC')) {
    return { format: 'aiff', detail: 'an AIFF file' }
  }
  if (riff === 'fLaC')
    return bytes[4] !== undefined && (bytes[4] & 0x7f) === 0
      ? { format: 'flac', detail: 'a FLAC file' }
      : null
  if (riff === 'caff') return { format: 'caf', detail: 'a Core Audio (CAF) file' }
  if (ascii(bytes, 0, 5) === '#!AMR') return { format: 'amr', detail: 'an AMR file' }
  const ogg = sniffOgg(bytes)
  if (ogg) return ogg
  const ebml = sniffEbml(bytes)
  if (ebml) return ebml
  const iso = sniffIsoMedia(bytes)
  if (iso) return iso
  const tag = id3v2Length(bytes)
  if (tag > 0) {
    let at = tag
    while (at < bytes.length && bytes[at] === 0) at++ // padding some taggers leave after the tag
    if (ascii(bytes, at, 4) === 'fLaC') return { format: 'flac', detail: 'a FLAC file with an ID3 tag' }
    return sniffMpeg(bytes, at)
  }
  return sniffMpeg(bytes, 0)
}

/** First bytes as hex, for messages about unrecognised content. */
export function leadingHex(bytes: Uint8Array, count = 8): string {
  return [...bytes.subarray(0, count)].map((b) => b.toString(16).padStart(2, '0')).join(' ')
}
