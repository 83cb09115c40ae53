/**
 * The request context travels from the gateway to a family worker in one internal header,
 * signed with HMAC-SHA-256 under INTERNAL_CONTEXT_SECRET (a secret only the gateway and the
 * family workers hold). The gateway always overwrites the header, families refuse a request whose
 * header is missing or does not verify, and family workers are not routable, so a client can
 * neither forge nor replay an identity. (A plain service-binding `fetch()` with this header costs
 * about half of a JS RPC call carrying the Request and Response objects; see docs/benchmarks.md.)
 */
import { base64urlDecode, base64urlEncode, ownBytes, utf8Decode } from '../crypto/encoding'
import type { RequestContext } from './request-context'

export const CONTEXT_HEADER = 'x-svc-internal-context'

const encoder = new TextEncoder()
const keys = new Map<string, Promise<CryptoKey>>()

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret)
  if (!key) {
    key = crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
      'verify',
    ])
    keys.set(secret, key)
  }
  return key
}

export async function sealContext(context: RequestContext, secret: string): Promise<string> {
  const payload = base64urlEncode(encoder.encode(JSON.stringify(context)))
  const signature = await crypto.subtle.sign('HMAC', await hmacKey(secret), encoder.encode(payload))
  return `${payload}.${base64urlEncode(new Uint8Array(signature))}`
}

/** The context, or null when the header is absent, malformed or not signed with `secret`. */
export async function openContext(header: string | null, secret: string): Promise<RequestContext | null> {
  if (!header) return null
  const dot = header.indexOf('.')
  if (dot <= 0) return null
  const payload = header.slice(0, dot)
  const signature = base64urlDecode(header.slice(dot + 1))
  if (!signature) return null
  const valid = await crypto.subtle.verify(
    'HMAC',
    await hmacKey(secret),
    ownBytes(signature),
    encoder.encode(payload),
  )
  if (!valid) return null
  const bytes = base64urlDecode(payload)
  const json = bytes && utf8Decode(bytes)
  if (!json) return null
  try {
    return JSON.parse(json) as RequestContext
  } catch {
    return null
  }
}
