/**
 * API keys: `svc_sk_live_<43 base62 chars>` or `svc_sk_test_<...>` (256 bits of randomness).
 * Only the SHA-256 of the whole key is stored, plus a four-character display suffix.
 */
import { sha256Hex } from '../crypto/digests'
import type { ApiKeyMode } from '../db/schema'

export const API_KEY_PREFIX: Record<ApiKeyMode, string> = {
  live: 'svc_sk_live_',
  test: 'svc_sk_test_',
}

const API_KEY_PATTERN = /^svc_sk_(live|test)_[0-9A-Za-z]{40,64}$/
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** Base62 of a 32-byte value, left-padded to 43 characters (used by every opaque credential). */
export function base62(bytes: Uint8Array): string {
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  let out = ''
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out
    n /= 62n
  }
  return out.padStart(43, '0')
}

export function generateApiKey(mode: ApiKeyMode): string {
  return API_KEY_PREFIX[mode] + base62(crypto.getRandomValues(new Uint8Array(32)))
}

/** Returns the key's mode when it is shaped like one of our keys, else null. */
export function apiKeyMode(candidate: string): ApiKeyMode | null {
  const m = API_KEY_PATTERN.exec(candidate)
  return m ? (m[1] as ApiKeyMode) : null
}

/** What the database stores for a key: its hex SHA-256 (256 random bits need no salt or slow KDF). */
export function hashApiKey(key: string): string {
  return sha256Hex(key)
}

export function apiKeySuffix(key: string): string {
  return key.slice(-4)
}

/** Constant-time comparison of two equal-length hex digests. */
export function digestsEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}
