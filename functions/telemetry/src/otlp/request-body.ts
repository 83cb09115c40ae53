/**
 * Reads an OTLP request body within the route's limit, and its decompressed form within the same
 * limit. The limit applies after decompression (OTLP/HTTP: 413 once the decoded size is over),
 * counted while the decompressor runs: a gzip bomb is stopped as soon as its output passes the
 * limit, having produced no more than the limit plus one chunk.
 */

import { formatBytes } from '../../../../shared/http/body'
import { AppError } from '../../../../shared/http/errors'

export type ContentEncoding = 'identity' | 'gzip' | 'deflate'

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

async function collect(stream: ReadableStream<Uint8Array>, limit: number, onOver: () => AppError) {
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      total += value.byteLength
      if (total > limit) {
        await reader.cancel().catch(() => {})
        throw onOver()
      }
      chunks.push(value)
    }
  } finally {
    reader.releaseLock()
  }
  if (chunks.length === 1) return chunks[0]!
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/** The body as received (compressed or not), refused with 413 past `limit`. */
export async function readRawBody(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0)
  return collect(body, limit, () => tooLarge('request body', limit))
}

/** The decompressed body, refused with 413 once its output passes `limit`, 400 when corrupt or cut short. */
export async function decompress(
  bytes: Uint8Array,
  encoding: ContentEncoding,
  limit: number,
): Promise<Uint8Array> {
  if (encoding === 'identity') return bytes
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes)
      controller.close()
    },
  })
  const stream = source.pipeThrough(
    new DecompressionStream(encoding) as unknown as TransformStream<Uint8Array, Uint8Array>,
  )
  try {
    return await collect(stream, limit, () => tooLarge('decompressed request body', limit))
  } catch (err) {
    if (err instanceof AppError) throw err
    throw new AppError(
      400,
      'invalid_content_encoding',
      `The body is not valid ${encoding} data (corrupt or cut short); send it whole, or without Content-Encoding.`,
      { param: 'content-encoding', internalMessage: String(err) },
    )
  }
}
