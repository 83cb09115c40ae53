/**
 * A reasoning job's content at rest (prompt, candidate texts; the result is a candidate): an
 * envelope of three keys (docs/reasoning-jobs.md, "Content at rest"):
 *
 *   KEK (secret CONTENT_KEKS, by kid) ──HKDF-SHA256(tenant)──▶ tenant wrapping key
 *   tenant wrapping key ──AES-256-GCM──▶ the job's data key (random, 256 bits, stored wrapped)
 *   data key ──AES-256-GCM──▶ each piece of content (fresh 96-bit IV each)
 *
 * - CONTENT_KEKS is JSON `[{"kid": "...", "key": "<32 bytes, base64url>"}, ...]`: the first key
 *   wraps new data keys, every listed key unwraps. Rotation: put the new key first; an object
 *   re-wraps its data key under it whenever it is used (rewrap: one small AES-GCM, the content is
 *   not re-encrypted); remove the old key once nothing wrapped under it must stay readable.
 * - Associated data binds every ciphertext to its place: the wrapped data key to (tenant, job), a
 *   piece of content to (tenant, job, name). Copied to another job, tenant or field it does not open.
 * - Erasure destroys the job's wrapped data key (and the ciphertexts): with the key gone, no copy of a
 *   ciphertext (a backup, a freed SQLite page) can be opened, whoever holds the KEK.
 */
import { base64urlDecode, base64urlEncode } from '../../shared/crypto/encoding'
import { AppError } from '../../shared/http/errors'
import { generateKeyringEntry, type Keyring, keyringFromSecret } from './keyring'

const FORMAT = 'v1'
const utf8 = new TextEncoder()
const fromUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

/** CONTENT_KEKS as HKDF base keys; `firstKid` wraps new data keys. */
export type ContentKeyring = Keyring

/** The job's data key as stored: `v1.<kek kid>.<iv>.<wrapped key>` (base64url). */
export type WrappedDataKey = string

function bytes(text: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(utf8.encode(text))
}

/** Stored base64url; damaged text fails like a forged ciphertext (the callers' catch). */
function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  const decoded = base64urlDecode(text)
  if (!decoded) throw new Error('stored content is not valid base64url')
  return new Uint8Array(decoded)
}

const toBase64Url = base64urlEncode

export function contentKeysUnavailable(detail: string): AppError {
  return new AppError(
    503,
    'content_keys_unavailable',
    'Reasoning jobs cannot store or read their content on this deployment: the operator must set CONTENT_KEKS.',
    { internalMessage: detail, headers: { 'retry-after': '60' } },
  )
}

/** The keyring from the secret's JSON (parsed once per isolate); 503 when missing or malformed. */
export function contentKeyring(secret: string | undefined): Promise<ContentKeyring> {
  return keyringFromSecret(secret, 'CONTENT_KEKS', 'hkdf', contentKeysUnavailable)
}

/** A fresh KEK entry for CONTENT_KEKS (operators, `npm start`). */
export function generateContentKek(kid: string): { kid: string; key: string } {
  return generateKeyringEntry(kid)
}

/** The tenant's wrapping key under one KEK: HKDF-SHA256, the tenant in `info`. */
function tenantWrappingKey(kek: CryptoKey, tenantId: string): Promise<CryptoKey> {
  return crypto.subtle.deriveKey(
    {
      name: 'HKDF',
      hash: 'SHA-256',
      salt: utf8.encode('svc reasoning content v1'),
      info: utf8.encode(`tenant:${tenantId}`),
    },
    kek,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  )
}

function dataKeyAad(tenantId: string, jobId: string): Uint8Array<ArrayBuffer> {
  return bytes(`reasoning-job-data-key:${tenantId}:${jobId}`)
}

function contentAad(tenantId: string, jobId: string, name: string): Uint8Array<ArrayBuffer> {
  return bytes(`reasoning-job-content:${tenantId}:${jobId}:${name}`)
}

/** The job's place: what every ciphertext of the job is bound to. */
export interface JobPlace {
  readonly tenantId: string
  readonly jobId: string
}

/** A new random data key for a job, wrapped under the keyring's first KEK. */
export async function newWrappedDataKey(ring: ContentKeyring, place: JobPlace): Promise<WrappedDataKey> {
  return wrapDataKey(ring, place, crypto.getRandomValues(new Uint8Array(32)))
}

async function wrapDataKey(
  ring: ContentKeyring,
  place: JobPlace,
  raw: Uint8Array<ArrayBuffer>,
): Promise<WrappedDataKey> {
  const kek = ring.keys.get(ring.firstKid)!
  const wrapping = await tenantWrappingKey(kek, place.tenantId)
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const wrapped = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: dataKeyAad(place.tenantId, place.jobId) },
    wrapping,
    raw,
  )
  return `${FORMAT}.${ring.firstKid}.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(wrapped))}`
}

/** The kid a stored data key is wrapped under. */
export function wrappingKid(wrapped: WrappedDataKey): string {
  return wrapped.split('.')[1] ?? ''
}

async function unwrapRaw(
  ring: ContentKeyring,
  place: JobPlace,
  wrapped: WrappedDataKey,
): Promise<Uint8Array<ArrayBuffer>> {
  const [format, kid, iv, body] = wrapped.split('.')
  if (format !== FORMAT || !kid || !iv || !body) throw new Error('the stored data key is malformed')
  const kek = ring.keys.get(kid)
  if (!kek) {
    throw contentKeysUnavailable(
      `the job's data key is wrapped under KEK ${kid}, which CONTENT_KEKS no longer lists`,
    )
  }
  const wrapping = await tenantWrappingKey(kek, place.tenantId)
  const raw = await crypto.subtle.decrypt(
    { name: 'AES-GCM', iv: fromBase64Url(iv), additionalData: dataKeyAad(place.tenantId, place.jobId) },
    wrapping,
    fromBase64Url(body),
  )
  return new Uint8Array(raw)
}

/** Re-wraps a data key under the keyring's first KEK (rotation); the same key, so content is untouched. */
export async function rewrapDataKey(
  ring: ContentKeyring,
  place: JobPlace,
  wrapped: WrappedDataKey,
): Promise<WrappedDataKey> {
  return wrapDataKey(ring, place, await unwrapRaw(ring, place, wrapped))
}

/** Seals and opens one job's content with its data key. */
export interface ContentCipher {
  seal(name: string, plaintext: string): Promise<string>
  open(name: string, sealed: string): Promise<string>
}

export async function contentCipher(
  ring: ContentKeyring,
  place: JobPlace,
  wrapped: WrappedDataKey,
): Promise<ContentCipher> {
  const key = await crypto.subtle.importKey('raw', await unwrapRaw(ring, place, wrapped), 'AES-GCM', false, [
    'encrypt',
    'decrypt',
  ])
  return {
    async seal(name, plaintext) {
      const iv = crypto.getRandomValues(new Uint8Array(12))
      const sealed = await crypto.subtle.encrypt(
        { name: 'AES-GCM', iv, additionalData: contentAad(place.tenantId, place.jobId, name) },
        key,
        bytes(plaintext),
      )
      return `${FORMAT}.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(sealed))}`
    },
    async open(name, sealed) {
      const [format, iv, body] = sealed.split('.')
      if (format !== FORMAT || !iv || body === undefined)
        throw new Error(`stored ${name} is not sealed content`)
      const plain = await crypto.subtle.decrypt(
        {
          name: 'AES-GCM',
          iv: fromBase64Url(iv),
          additionalData: contentAad(place.tenantId, place.jobId, name),
        },
        key,
        fromBase64Url(body),
      )
      return fromUtf8.decode(plain)
    },
  }
}
