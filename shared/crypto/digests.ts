/**
 * Canonical JSON and the hex digests taken of it: the one copy of each for the whole tree
 * (policy digests, the JWKS digest, request fingerprints of the simulated model, turn body hashes,
 * attestation statement digests, API key hashes).
 */
import { sha256, sha384 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'

/**
 * JSON with object keys sorted by UTF-16 code unit at every depth and no whitespace: RFC 8785 (JCS)
 * for the values this product hashes (strings, finite numbers, booleans, null, arrays, objects).
 * `undefined` members are left out as JSON.stringify leaves them out; an `undefined` or non-finite
 * array item becomes `null`, as in JSON.stringify.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) return 'null'
    return JSON.stringify(value) ?? 'null'
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
}

const bytesOf = (data: Uint8Array | string) => (typeof data === 'string' ? utf8ToBytes(data) : data)

/** Lower-case hex SHA-256 of bytes, or of a string's UTF-8. */
export function sha256Hex(data: Uint8Array | string): string {
  return bytesToHex(sha256(bytesOf(data)))
}

/** Lower-case hex SHA-384 of bytes, or of a string's UTF-8. */
export function sha384Hex(data: Uint8Array | string): string {
  return bytesToHex(sha384(bytesOf(data)))
}
