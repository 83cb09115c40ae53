/**
 * Provider credentials at rest: AES-256-GCM under a key-encryption key from the secret
 * PROVIDER_CREDENTIAL_KEYS (JSON `[{"kid": "...", "key": "<32 bytes, base64url>"}, ...]`; the
 * first key encrypts, every listed key decrypts, so a new key goes first and an old one stays until
 * no row uses it). The associated data binds a ciphertext to its tenant and connection: a row
 * copied to another tenant or connection does not decrypt. Stored as `v1.<kid>.<iv>.<ciphertext>`
 * (base64url), a fresh 96-bit IV per encryption. The plaintext never leaves the reasoning worker
 * and its Durable Object: it is sent only to the provider, in its Authorization header.
 */
import { z } from 'zod'
import { AppError } from '../../http/errors'

const KeySchema = z.object({
  kid: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, 'kid: 1-40 letters, digits, - or _'),
  key: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'key: 32 bytes in base64url (43 characters)'),
})
const KeysSchema = z.array(KeySchema).min(1)

export interface CredentialKeyring {
  readonly encryptKid: string
  readonly keys: ReadonlyMap<string, CryptoKey>
}

function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  const b64 = text.replaceAll('-', '+').replaceAll('_', '/')
  const bin = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4))
  const out = new Uint8Array(bin.length)
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
  return out
}

function toBase64Url(bytes: Uint8Array): string {
  let bin = ''
  for (const b of bytes) bin += String.fromCharCode(b)
  return btoa(bin).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
}

export function credentialKeysUnavailable(detail: string): AppError {
  return new AppError(
    503,
    'provider_credentials_unavailable',
    'Provider connections are not available on this deployment: the operator must set PROVIDER_CREDENTIAL_KEYS.',
    { internalMessage: detail },
  )
}

const cache = new Map<string, Promise<CredentialKeyring>>()

/** The keyring from the secret's JSON (parsed once per isolate); 503 when missing or malformed. */
export function credentialKeyring(secret: string | undefined): Promise<CredentialKeyring> {
  if (!secret) return Promise.reject(credentialKeysUnavailable('PROVIDER_CREDENTIAL_KEYS is not set'))
  let pending = cache.get(secret)
  if (!pending) {
    pending = (async () => {
      let raw: unknown
      try {
        raw = JSON.parse(secret)
      } catch {
        throw credentialKeysUnavailable('PROVIDER_CREDENTIAL_KEYS is not JSON')
      }
      const parsed = KeysSchema.safeParse(raw)
      if (!parsed.success)
        throw credentialKeysUnavailable(`PROVIDER_CREDENTIAL_KEYS: ${parsed.error.issues[0]?.message}`)
      const keys = new Map<string, CryptoKey>()
      for (const { kid, key } of parsed.data) {
        keys.set(
          kid,
          await crypto.subtle.importKey('raw', fromBase64Url(key), 'AES-GCM', false, ['encrypt', 'decrypt']),
        )
      }
      return { encryptKid: parsed.data[0]!.kid, keys }
    })()
    pending.catch(() => cache.delete(secret))
    cache.set(secret, pending)
  }
  return pending
}

function aad(tenantId: string, connectionId: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(new TextEncoder().encode(`qpu-provider-connection:${tenantId}:${connectionId}`))
}

export async function encryptCredential(
  keyring: CredentialKeyring,
  plaintext: string,
  binding: { tenantId: string; connectionId: string },
): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const key = keyring.keys.get(keyring.encryptKid)!
  const ct = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: aad(binding.tenantId, binding.connectionId) },
    key,
    new TextEncoder().encode(plaintext),
  )
  return `v1.${keyring.encryptKid}.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(ct))}`
}

/** The plaintext, or an AppError 503 naming the key that is missing or the row that is damaged. */
export async function decryptCredential(
  keyring: CredentialKeyring,
  stored: string,
  binding: { tenantId: string; connectionId: string },
): Promise<string> {
  const [version, kid, iv, ct] = stored.split('.')
  if (version !== 'v1' || !kid || !iv || !ct)
    throw credentialKeysUnavailable('a stored credential is not in the v1 format')
  const key = keyring.keys.get(kid)
  if (!key)
    throw credentialKeysUnavailable(
      `the credential was encrypted with key ${kid}, which PROVIDER_CREDENTIAL_KEYS no longer lists`,
    )
  try {
    const pt = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: fromBase64Url(iv), additionalData: aad(binding.tenantId, binding.connectionId) },
      key,
      fromBase64Url(ct),
    )
    return new TextDecoder().decode(pt)
  } catch {
    throw credentialKeysUnavailable(
      'a stored credential failed authentication (wrong tenant, connection or key)',
    )
  }
}

/** A new random key entry for PROVIDER_CREDENTIAL_KEYS. */
export function generateCredentialKey(kid: string): { kid: string; key: string } {
  return { kid, key: toBase64Url(crypto.getRandomValues(new Uint8Array(32))) }
}
