/**
 * Reading request bodies with the route's size limit enforced while streaming (a missing or
 * lying Content-Length cannot get past it), and JSON parsing with an error that says where
 * the JSON broke.
 */
import { AppError } from './errors'

export async function readBodyBytes(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared && Number(declared) > maxBytes) throw tooLarge(maxBytes)
  if (!request.body) return new Uint8Array()
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => {})
      throw tooLarge(maxBytes)
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0]!
  const out = new Uint8Array(total)
  let offset = 0
  for (const c of chunks) {
    out.set(c, offset)
    offset += c.byteLength
  }
  return out
}

/**
 * The body as text. A declared Content-Length within the limit is read in one native call (the
 * HTTP layer delivers exactly that many bytes); otherwise the stream is read with the limit
 * enforced as it goes.
 */
export async function readBodyText(request: Request, maxBytes: number): Promise<string> {
  const declared = request.headers.get('content-length')
  if (declared !== null && /^\d+$/.test(declared)) {
    if (Number(declared) > maxBytes) throw tooLarge(maxBytes)
    // The HTTP layer ends the body after the declared length, so the limit holds (a string has
    // no more UTF-16 units than its UTF-8 bytes: the check below only catches a Request built
    // in code with a header that does not match its body).
    const text = await request.text()
    if (text.length > maxBytes) throw tooLarge(maxBytes)
    return text
  }
  return new TextDecoder().decode(await readBodyBytes(request, maxBytes))
}

export function tooLarge(maxBytes: number): AppError {
  return new AppError(
    413,
    'request_too_large',
    `The request body is larger than this endpoint accepts (${formatBytes(maxBytes)}). Send a smaller body.`,
  )
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${+(n / (1024 * 1024)).toFixed(1)} MiB`
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} KiB`
  return `${n} bytes`
}

export function isJsonContentType(value: string | null): boolean {
  if (!value) return false
  const type = value.split(';', 1)[0]!.trim().toLowerCase()
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/** Parses a JSON request body; 415 for another content type, 400 with the position for bad JSON. */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  if (!isJsonContentType(request.headers.get('content-type'))) {
    throw new AppError(
      415,
      'unsupported_media_type',
      `This endpoint takes a JSON body; send it with Content-Type: application/json (got ${request.headers.get('content-type') ?? 'no Content-Type'}).`,
    )
  }
  return parseJsonBody(await readBodyText(request, maxBytes))
}

/** Parses the text of a JSON request body: 400 `missing_body` when empty, 400 `malformed_json` with the position. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') {
    throw new AppError(400, 'missing_body', 'The request body is empty; send a JSON object.')
  }
  try {
    return JSON.parse(text)
  } catch (err) {
    const detail = err instanceof SyntaxError ? err.message : 'unparseable'
    throw new AppError(
      400,
      'malformed_json',
      `The request body is not valid JSON (${detail}). Send a JSON object.`,
    )
  }
}
