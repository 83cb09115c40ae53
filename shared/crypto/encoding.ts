/**
 * Byte encodings of the whole tree: strict base64url (RFC 7515 §2, no padding, canonical only),
 * standard base64 (RFC 4648 §4: checkpoints, proofs, SRI integrity, PHC strings, upstream
 * embeddings), hex for test vectors, and a constant-time byte comparison.
 */
import { base64url } from 'jose'

const BASE64URL = /^[A-Za-z0-9_-]*$/

export const utf8 = new TextEncoder()
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

export function base64urlEncode(bytes: Uint8Array): string {
  return base64url.encode(bytes)
}

/**
 * Decodes unpadded base64url and returns `null` for anything else: padding, the standard
 * alphabet, whitespace, an impossible length, or a non-canonical encoding (unused trailing bits
 * set), so that one byte string has exactly one accepted text form.
 */
export function base64urlDecode(text: string): Uint8Array | null {
  if (!BASE64URL.test(text) || text.length % 4 === 1) return null
  let bytes: Uint8Array
  try {
    bytes = base64url.decode(text)
  } catch {
    return null
  }
  return base64url.encode(bytes) === text ? bytes : null
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** btoa takes a "binary string"; built in slices, as a spread of a large array overflows the stack. */
function binaryString(bytes: Uint8Array): string {
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return binary
}

/** Standard base64 (RFC 4648 §4), padded. */
export function base64Encode(bytes: Uint8Array): string {
  return btoa(binaryString(bytes))
}

/**
 * Decodes padded standard base64 and returns `null` for anything else: the url alphabet,
 * whitespace, missing padding, an impossible length, or a non-canonical encoding (unused trailing
 * bits set), so that one byte string has exactly one accepted text form.
 */
export function base64Decode(text: string): Uint8Array<ArrayBuffer> | null {
  if (!BASE64.test(text) || text.length % 4 !== 0) return null
  let bytes: Uint8Array<ArrayBuffer>
  try {
    bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
  } catch {
    return null
  }
  return base64Encode(bytes) === text ? bytes : null
}

/** Decodes UTF-8 and returns `null` for invalid sequences instead of replacing them. */
export function utf8Decode(bytes: Uint8Array): string | null {
  try {
    return utf8Decoder.decode(bytes)
  } catch {
    return null
  }
}

export function hexToBytes(hex: string): Uint8Array<ArrayBuffer> {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new TypeError(`hex string expected (even length, 0-9a-f), got ${hex.length} characters`)
  }
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16)
  return out
}

/** Lower-case hex, noble's (the one hex encoder in the tree). */
export { bytesToHex } from '@noble/hashes/utils.js'

/** The bytes in a buffer of their own: what WebCrypto's BufferSource accepts under every lib typing. */
export function ownBytes(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(bytes)
}

/**
 * Compares two byte strings in time that depends only on their lengths, never on where they
 * first differ. Lengths are not secret here (hash outputs, MAC tags), so they are compared first.
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number)
  return diff === 0
}
