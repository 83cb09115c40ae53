/**
 * Symmetric key-encryption keys from an operator secret: JSON
 * `[{"kid": "...", "key": "<32 bytes, base64url>"}, ...]`. The first key is the one new material is
 * protected under; every listed key opens what was protected earlier, so rotation is: put the new
 * key first, keep the old one until nothing needs it. Used by provider credentials
 * (PROVIDER_CREDENTIAL_KEYS, AES-256-GCM directly) and reasoning content (CONTENT_KEKS, HKDF base
 * keys). Parsed and imported once per isolate per secret value.
 */
import { z } from 'zod'
import { base64urlDecode, base64urlEncode } from '../../shared/crypto/encoding'
import type { AppError } from '../../shared/http/errors'

const KeySchema = z.object({
  kid: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, 'kid: 1-40 letters, digits, - or _'),
  key: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'key: 32 bytes in base64url (43 characters)'),
})
const KeysSchema = z.array(KeySchema).min(1)

export interface Keyring {
  /** The kid new material is protected under (the first in the secret). */
  readonly firstKid: string
  /** Every listed key, imported for `use`. */
  readonly keys: ReadonlyMap<string, CryptoKey>
}

/** `aes-gcm`: keys that encrypt and decrypt; `hkdf`: base keys that derive others. */
export type KeyUse = 'aes-gcm' | 'hkdf'

const keyrings = new Map<string, Promise<Keyring>>()

/**
 * The keyring in `secret`; rejects with `unavailable(detail)` (the caller's 503, naming `name`)
 * when the secret is missing, not JSON or not a list of keys. A failure is not cached.
 */
export function keyringFromSecret(
  secret: string | undefined,
  name: string,
  use: KeyUse,
  unavailable: (detail: string) => AppError,
): Promise<Keyring> {
  if (!secret) return Promise.reject(unavailable(`${name} is not set`))
  const cacheKey = `${use}\n${secret}`
  let pending = keyrings.get(cacheKey)
  if (!pending) {
    pending = (async () => {
      let raw: unknown
      try {
        raw = JSON.parse(secret)
      } catch {
        throw unavailable(`${name} is not JSON`)
      }
      const parsed = KeysSchema.safeParse(raw)
      if (!parsed.success) throw unavailable(`${name}: ${parsed.error.issues[0]?.message}`)
      const keys = new Map<string, CryptoKey>()
      for (const { kid, key } of parsed.data) {
        const bytes = base64urlDecode(key)
        if (bytes?.length !== 32) throw unavailable(`${name}: key ${kid} is not 32 bytes in base64url`)
        keys.set(
          kid,
          use === 'hkdf'
            ? await crypto.subtle.importKey('raw', new Uint8Array(bytes), 'HKDF', false, ['deriveKey'])
            : await crypto.subtle.importKey('raw', new Uint8Array(bytes), 'AES-GCM', false, [
                'encrypt',
                'decrypt',
              ]),
        )
      }
      return { firstKid: parsed.data[0]!.kid, keys }
    })()
    pending.catch(() => keyrings.delete(cacheKey))
    keyrings.set(cacheKey, pending)
  }
  return pending
}

/** A fresh entry for such a secret (operators, `npm start`). */
export function generateKeyringEntry(kid: string): { kid: string; key: string } {
  return { kid, key: base64urlEncode(crypto.getRandomValues(new Uint8Array(32))) }
}
