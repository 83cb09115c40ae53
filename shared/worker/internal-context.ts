/**
 * The request context travels from the gateway to a family worker in two internal headers:
 *
 *   x-svc-internal-context: <identity>.<signature>
 *   x-svc-internal-request: {"requestId":…,"maxBodyBytes":…,"baseUrl":…}
 *
 * `identity` (base64url JSON of the authenticated Identity, or null on public routes) is signed
 * with HMAC-SHA-256 under INTERNAL_CONTEXT_SECRET, a secret only the gateway and the family
 * workers hold; the request part (plain JSON, all ASCII: the gateway's validated request id, the
 * route's body limit, the public origin) is not. The gateway always overwrites the header, families refuse a request whose header is
 * missing or whose identity does not verify, and family workers are not routable, so a client can
 * neither forge nor replay an identity.
 *
 * Why only the identity is signed: it is the part that grants access, and it is the same for
 * every request of a credential, so the gateway seals it once per cached identity and a family
 * verifies it once per isolate (both sides keep the result); signing the whole context would put
 * an HMAC, a JSON encoding and a base64 pass on both sides of every request. The request part
 * can only matter to someone who already reaches a family worker directly, and families bound it
 * anyway (MAX_BODY_BYTES_CEILING). See docs/benchmarks.md for what the per-request cost was.
 */
import { base64urlDecode, base64urlEncode, ownBytes, utf8Decode } from '../crypto/encoding'
import type { Identity, RequestContext } from './request-context'

export const CONTEXT_HEADER = 'x-svc-internal-context'
export const REQUEST_HEADER = 'x-svc-internal-request'

/** No route takes more than this; a family never trusts a larger limit from the header. */
export const MAX_BODY_BYTES_CEILING = 64 * 1024 * 1024

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

function encodeJson(value: unknown): string {
  return base64urlEncode(encoder.encode(JSON.stringify(value)))
}

async function sealIdentity(identity: Identity | null, secret: string): Promise<string> {
  const payload = encodeJson(identity)
  const signature = await crypto.subtle.sign('HMAC', await hmacKey(secret), encoder.encode(payload))
  return `${payload}.${base64urlEncode(new Uint8Array(signature))}`
}

/**
 * Sealed identities by identity object: the gateway's credential caches hand out the same
 * Identity object for every request of a credential, so a hot credential is sealed once.
 */
let sealedFor: {
  secret: string
  byIdentity: WeakMap<Identity, Promise<string>>
  anonymous: Promise<string>
} | null = null

function sealedIdentity(identity: Identity | null, secret: string): Promise<string> {
  if (!sealedFor || sealedFor.secret !== secret) {
    sealedFor = { secret, byIdentity: new WeakMap(), anonymous: sealIdentity(null, secret) }
  }
  if (!identity) return sealedFor.anonymous
  let sealed = sealedFor.byIdentity.get(identity)
  if (!sealed) {
    sealed = sealIdentity(identity, secret)
    sealedFor.byIdentity.set(identity, sealed)
  }
  return sealed
}

/** The two internal headers for `context` (the gateway sets both, overwriting anything the client sent). */
export async function sealContext(context: RequestContext, secret: string): Promise<[string, string][]> {
  const identity = await sealedIdentity(context.identity, secret)
  const request = JSON.stringify({
    requestId: context.requestId,
    maxBodyBytes: context.maxBodyBytes,
    baseUrl: context.baseUrl,
  })
  return [
    [CONTEXT_HEADER, identity],
    [REQUEST_HEADER, request],
  ]
}

/** Identities this isolate has verified under `secret`, by their sealed form (bounded; oldest dropped first). */
const MAX_VERIFIED = 1_000
let verifiedFor: { secret: string; identities: Map<string, Identity | null> } | null = null

async function openIdentity(sealed: string, secret: string): Promise<{ identity: Identity | null } | null> {
  if (!verifiedFor || verifiedFor.secret !== secret) verifiedFor = { secret, identities: new Map() }
  const verified = verifiedFor.identities
  const known = verified.get(sealed)
  if (known !== undefined) return { identity: known }
  const dot = sealed.indexOf('.')
  const payload = sealed.slice(0, dot)
  const signature = base64urlDecode(sealed.slice(dot + 1))
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
  const identity = json ? parseJson(json) : undefined
  if (identity === undefined || (identity !== null && typeof identity !== 'object')) return null
  if (verified.size >= MAX_VERIFIED) {
    const oldest = verified.keys().next().value
    if (oldest !== undefined) verified.delete(oldest)
  }
  verified.set(sealed, identity as Identity | null)
  return { identity: identity as Identity | null }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The context, or null when a header is absent or malformed or the identity is not signed with `secret`. */
export async function openContext(headers: Headers, secret: string): Promise<RequestContext | null> {
  const sealed = headers.get(CONTEXT_HEADER)
  const requestJson = headers.get(REQUEST_HEADER)
  if (!sealed || !requestJson) return null
  const dot = sealed.indexOf('.')
  if (dot <= 0 || sealed.indexOf('.', dot + 1) !== -1) return null
  const opened = await openIdentity(sealed, secret)
  if (!opened) return null
  const request = parseJson(requestJson) as Partial<RequestContext> | undefined
  if (
    !request ||
    typeof request.requestId !== 'string' ||
    typeof request.maxBodyBytes !== 'number' ||
    typeof request.baseUrl !== 'string'
  ) {
    return null
  }
  return {
    requestId: request.requestId,
    identity: opened.identity,
    maxBodyBytes: Math.min(Math.max(0, request.maxBodyBytes), MAX_BODY_BYTES_CEILING),
    baseUrl: request.baseUrl,
  }
}
