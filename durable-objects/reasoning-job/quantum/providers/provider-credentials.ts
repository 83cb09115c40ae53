/**
 * Provider credentials at rest: AES-256-GCM under a key-encryption key from the secret
 * PROVIDER_CREDENTIAL_KEYS (JSON `[{"kid": "...", "key": "<32 bytes, base64url>"}, ...]`; the
 * first key encrypts, every listed key decrypts, so a new key goes first and an old one stays until
 * no row uses it). The associated data binds a ciphertext to its tenant and connection: a row
 * copied to another tenant or connection does not decrypt. Stored as `v1.<kid>.<iv>.<ciphertext>`
 * (base64url), a fresh 96-bit IV per encryption. The plaintext never leaves the reasoning worker
 * and its Durable Object: it is sent only to the provider, in its Authorization header.
 */
import { base64urlDecode, base64urlEncode } from '../../../../shared/crypto/encoding'
import { AppError } from '../../../../shared/http/errors'
import { generateKeyringEntry, type Keyring, keyringFromSecret } from '../../keyring'

export type CredentialKeyring = Keyring

export function credentialKeysUnavailable(detail: string): AppError {
  return new AppError(
    503,
    'provider_credentials_unavailable',
    'Provider connections are not available on this deployment: the operator must set PROVIDER_CREDENTIAL_KEYS.',
    { internalMessage: detail },
  )
}

/** The keyring from the secret's JSON (parsed once per isolate); 503 when missing or malformed. */
export function credentialKeyring(secret: string | undefined): Promise<CredentialKeyring> {
  return keyringFromSecret(secret, 'PROVIDER_CREDENTIAL_KEYS', 'aes-gcm', credentialKeysUnavailable)
}

function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  const bytes = base64urlDecode(text)
  if (!bytes) throw credentialKeysUnavailable('a stored credential is not valid base64url')
  return new Uint8Array(bytes)
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
  const key = keyring.keys.get(keyring.firstKid)!
  const ct = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: aad(binding.tenantId, binding.connectionId) },
    key,
    new TextEncoder().encode(plaintext),
  )
  return `v1.${keyring.firstKid}.${base64urlEncode(iv)}.${base64urlEncode(new Uint8Array(ct))}`
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
  return generateKeyringEntry(kid)
}
