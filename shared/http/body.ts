/**
 * Reading request bodies with the route's size limit enforced while streaming (a missing or
 * lying Content-Length cannot get past it), strict UTF-8 decoding (invalid bytes are a 400, never
 * a silent U+FFFD), the gateway's JSON input rules (json-input.ts), and JSON parsing with an error
 * that says where the JSON broke.
 */
import { AppError } from './errors'
import { checkJsonText } from './json-input'

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

/** One decoder for every body: invalid bytes throw instead of becoming U+FFFD; a leading BOM is dropped. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

/** The bytes as UTF-8 text, or 400 `invalid_utf8` saying where the first invalid byte is. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    const at = firstInvalidUtf8(bytes)
    throw new AppError(
      400,
      'invalid_utf8',
      `The request body is not valid UTF-8 (byte 0x${(bytes[at] ?? 0).toString(16).padStart(2, '0')} at offset ${at} does not start or continue a character); send the text encoded as UTF-8.`,
    )
  }
}

/** Offset of the first byte that is not part of a valid UTF-8 sequence (slow path, for the message). */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0
  while (i < bytes.length) {
    const b = bytes[i]!
    const length =
      b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0
    if (length === 0) return i
    // Second byte ranges that exclude overlong forms, surrogates and code points above U+10FFFF.
    const low = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80
    const high = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf
    for (let k = 1; k < length; k++) {
      const c = bytes[i + k]
      if (c === undefined || c < (k === 1 ? low : 0x80) || c > (k === 1 ? high : 0xbf)) return i
    }
    i += length
  }
  return i
}

/**
 * The body as text. A declared Content-Length within the limit is read in one native call (the
 * HTTP layer delivers exactly that many bytes); otherwise the stream is read with the limit
 * enforced as it goes. Either way one strict UTF-8 decode: 400 `invalid_utf8` for invalid bytes.
 */
export async function readBodyText(request: Request, maxBytes: number): Promise<string> {
  const declared = request.headers.get('content-length')
  if (declared !== null && /^\d+$/.test(declared)) {
    if (Number(declared) > maxBytes) throw tooLarge(maxBytes)
    // The HTTP layer ends the body after the declared length, so the limit holds; the check
    // below only catches a Request built in code with a header that does not match its body.
    const bytes = new Uint8Array(await request.arrayBuffer())
    if (bytes.byteLength > maxBytes) throw tooLarge(maxBytes)
    return decodeUtf8(bytes)
  }
  return decodeUtf8(await readBodyBytes(request, maxBytes))
}

/**
 * The text of a JSON body, read as `readBodyText` does and held to the JSON input rules
 * (json-input.ts: nesting depth, NUL, lone surrogates, numbers, reserved field names).
 */
export async function readJsonText(request: Request, maxBytes: number): Promise<string> {
  const text = await readBodyText(request, maxBytes)
  checkJsonText(text)
  return text
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
