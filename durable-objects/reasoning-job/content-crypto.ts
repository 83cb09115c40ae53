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
import { z } from 'zod'
import { AppError } from '../../shared/http/errors'

const KeySchema = z.object({
  kid: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, 'kid: 1-40 letters, digits, - or _'),
  key: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'key: 32 bytes in base64url (43 characters)'),
})
const KeysSchema = z.array(KeySchema).min(1)

const FORMAT = 'v1'
const utf8 = new TextEncoder()
const fromUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

export interface ContentKeyring {
  /** The kid new data keys are wrapped under (the first in the secret). */
  readonly wrapKid: string
  /** Every listed KEK, as HKDF base keys. */
  readonly keks: ReadonlyMap<string, CryptoKey>
}

/** The job's data key as stored: `v1.<kek kid>.<iv>.<wrapped key>` (base64url). */
export type WrappedDataKey = string

function bytes(text: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(utf8.encode(text))
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

export function contentKeysUnavailable(detail: string): AppError {
  return new AppError(
    503,
    'content_keys_unavailable',
    'Reasoning jobs cannot store or read their content on this deployment: the operator must set CONTENT_KEKS.',
    { internalMessage: detail, headers: { 'retry-after': '60' } },
  )
}

const keyrings = new Map<string, Promise<ContentKeyring>>()

/** The keyring from the secret's JSON (parsed once per isolate); 503 when missing or malformed. */
export function contentKeyring(secret: string | undefined): Promise<ContentKeyring> {
  if (!secret) return Promise.reject(contentKeysUnavailable('CONTENT_KEKS is not set'))
  let pending = keyrings.get(secret)
  if (!pending) {
    pending = (async () => {
      let raw: unknown
      try {
        raw = JSON.parse(secret)
      } catch {
        throw contentKeysUnavailable('CONTENT_KEKS is not JSON')
      }
      const parsed = KeysSchema.safeParse(raw)
      if (!parsed.success) throw contentKeysUnavailable(`CONTENT_KEKS: ${parsed.error.issues[0]?.message}`)
      const keks = new Map<string, CryptoKey>()
      for (const { kid, key } of parsed.data) {
        keks.set(kid, await crypto.subtle.importKey('raw', fromBase64Url(key), 'HKDF', false, ['deriveKey']))
      }
      return { wrapKid: parsed.data[0]!.kid, keks }
    })()
    pending.catch(() => keyrings.delete(secret))
    keyrings.set(secret, pending)
  }
  return pending
}

/** A fresh KEK entry for CONTENT_KEKS (operators, `npm start`). */
export function generateContentKek(kid: string): { kid: string; key: string } {
  return { kid, key: toBase64Url(crypto.getRandomValues(new Uint8Array(32))) }
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
  const kek = ring.keks.get(ring.wrapKid)!
  const wrapping = await tenantWrappingKey(kek, place.tenantId)
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const wrapped = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: dataKeyAad(place.tenantId, place.jobId) },
    wrapping,
    raw,
  )
  return `${FORMAT}.${ring.wrapKid}.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(wrapped))}`
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
  const kek = ring.keks.get(kid)
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
