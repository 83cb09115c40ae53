/**
 * Reads an OTLP request body within the route's limit, and its decompressed form within the same
 * limit (OTLP/HTTP: 413 once the decoded size is over).
 *
 * Decompression is the runtime's zlib (node:zlib under nodejs_compat) with `maxOutputLength`: it
 * inflates into an output buffer that grows a chunk at a time and stops with a RangeError when the
 * next chunk would pass the cap, so a bomb costs at most the cap in memory and the time to inflate
 * that much (about 10-30 ms for 8 MiB), whatever it would expand to: no more than a legitimate
 * export of the same size.
 *
 * DecompressionStream cannot promise that on workerd: its writes have no backpressure, so each
 * write is inflated whole into an internal buffer before any output can be counted, and feeding it
 * in small slices does not help because the slices are all written before the reader runs
 * (measured: a 1 GiB bomb in 4 KiB slices still grew the runtime by 1 GB).
 *
 * The body is read whole before it is inflated, not refused from its first part: a refusal sent
 * while the client is still sending makes the local runtime close the connection with request
 * bytes unread, which resets it, and the client can lose the answer (seen with four bombs at once).
 */
import { gunzipSync, inflateSync } from 'node:zlib'
import { formatBytes } from '../../../../shared/http/body'
import { AppError } from '../../../../shared/http/errors'

export type ContentEncoding = 'identity' | 'gzip' | 'deflate'

/**
 * workerd's zlib refuses to grow its output by another 64 KiB chunk once that would pass
 * `maxOutputLength`, so capped at exactly the limit it refuses some outputs of exactly the limit
 * (64 KiB, for one). The cap is one chunk above the limit and the length is checked here.
 */
const INFLATE_SLACK_BYTES = 64 * 1024

/** The Content-Encoding of the request (absent = identity); anything else is 415. */
export function contentEncodingOf(header: string | null): ContentEncoding {
  const value = (header ?? '').trim().toLowerCase()
  if (value === '' || value === 'identity') return 'identity'
  if (value === 'gzip' || value === 'x-gzip') return 'gzip'
  if (value === 'deflate') return 'deflate'
  throw new AppError(
    415,
    'unsupported_content_encoding',
    `Content-Encoding "${header}" is not supported; send gzip, deflate, identity, or none.`,
    { param: 'content-encoding' },
  )
}

export function tooLarge(what: string, limit: number): AppError {
  return new AppError(
    413,
    'request_too_large',
    `The ${what} is larger than ${formatBytes(limit)}, the most an OTLP export may carry; send smaller batches (e.g. the SDK's maxExportBatchSize).`,
  )
}

/**
 * The body as received (compressed or not), refused with 413 past `limit`: on a declared
 * Content-Length before anything is read, otherwise as soon as the bytes streamed in pass it.
 */
export async function readRawBody(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  declaredLength: string | null = null,
): Promise<Uint8Array> {
  if (declaredLength !== null && Number(declaredLength) > limit) {
    body?.cancel().catch(() => {})
    throw tooLarge('request body', limit)
  }
  if (!body) return new Uint8Array(0)
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return joined(chunks, total)
    total += value.byteLength
    if (total > limit) {
      // More than any export may carry: not worth reading on. Not awaited, so the refusal goes
      // out now.
      reader.cancel().catch(() => {})
      throw tooLarge('request body', limit)
    }
    chunks.push(value)
  }
}

function joined(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/**
 * The decompressed body: 413 once its output passes `limit` (inflation stops there, see the
 * header), 400 when it is corrupt or cut short. gzip takes concatenated members, as RFC 1952 allows.
 */
export function decompress(bytes: Uint8Array, encoding: ContentEncoding, limit: number): Uint8Array {
  if (encoding === 'identity') return bytes
  const inflate = encoding === 'gzip' ? gunzipSync : inflateSync
  let decoded: Uint8Array
  try {
    decoded = inflate(bytes, { maxOutputLength: limit + INFLATE_SLACK_BYTES })
  } catch (err) {
    // The output cap is the only RangeError inflating a buffer of this size can raise (workerd:
    // "Memory limit exceeded"; Node: ERR_BUFFER_TOO_LARGE); corrupt data is a plain Error.
    if (err instanceof RangeError) throw tooLarge('decompressed request body', limit)
    throw new AppError(
      400,
      'invalid_content_encoding',
      `The body is not valid ${encoding} data (corrupt or cut short); send it whole, or without Content-Encoding.`,
      { param: 'content-encoding', internalMessage: String(err) },
    )
  }
  if (decoded.byteLength > limit) throw tooLarge('decompressed request body', limit)
  return new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength)
}
