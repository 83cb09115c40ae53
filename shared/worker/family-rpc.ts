/**
 * How the gateway hands a request to a family worker: one JS RPC call over the service binding
 * (`env.CHAT.handle(forwarded)`), with plain values both ways wherever the body allows it.
 *
 *   ForwardedRequest  method, url, headers (without Authorization), the request context the
 *                     gateway established (request id, verified identity, body limit, base URL)
 *                     as a typed argument, and the body: the text of a JSON body, which the
 *                     gateway already read within the route's limit, or the stream of any other
 *                     body (multipart audio, OTLP protobuf).
 *   FamilyResponse    status, headers, and the body: text for JSON and other text types, the
 *                     stream for server-sent events and NDJSON (relayed chunk by chunk, and a
 *                     client that goes away cancels it), bytes for anything else.
 *
 * Why plain values: a body crossing the binding as a stream costs a pipe between the two isolates
 * per direction; a string is copied once with the call. The identity needs no signature either:
 * only workers that hold the binding can call `handle`: the gateway, and the MCP worker, which
 * passes on the identity the gateway verified for POST /mcp when a tool runs a family's route.
 */
import type { RequestContext } from './request-context'

export type ForwardedBody = string | ReadableStream<Uint8Array> | null

/**
 * Header names (lower case) to values. A plain object, not an array of pairs or a `Headers`: the
 * runtime converts a plain object into a Request's or Response's headers several times faster.
 */
export type HeaderMap = Record<string, string>

export interface ForwardedRequest {
  readonly method: string
  readonly url: string
  /** The URL's path, as the gateway parsed it. */
  readonly path: string
  readonly headers: HeaderMap
  readonly body: ForwardedBody
  readonly context: RequestContext
}

export type FamilyResponseBody = string | ArrayBuffer | ReadableStream<Uint8Array> | null

export interface FamilyResponse {
  readonly status: number
  readonly headers: HeaderMap
  /** Set-Cookie values, the one header that cannot be folded into one value. */
  readonly setCookies?: string[]
  readonly body: FamilyResponseBody
}

/** The transport every family worker's entrypoint exposes to the gateway. */
export interface FamilyRpc {
  handle(request: ForwardedRequest): Promise<FamilyResponse>
  /** The family's part of the OpenAPI document: what it advertises to clients. */
  openapi(): unknown
}

/** No route takes more than this; a family never applies a larger limit than this. */
export const MAX_BODY_BYTES_CEILING = 64 * 1024 * 1024

/** Statuses whose responses have no body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304])

/** Relayed as they are produced: a client reads these incrementally. */
const STREAMED_TYPES = ['text/event-stream', 'application/x-ndjson', 'application/jsonl']

function mediaType(contentType: string | null): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase()
}

function isTextual(type: string): boolean {
  return (
    type.startsWith('text/') ||
    type === 'application/json' ||
    type.endsWith('+json') ||
    type === 'application/yaml' ||
    type === 'application/xml' ||
    type.endsWith('+xml') ||
    type === 'application/javascript'
  )
}

/** The headers as a HeaderMap (Set-Cookie apart), optionally leaving one out. */
export function headerMap(headers: Headers, omit?: string): { headers: HeaderMap; setCookies?: string[] } {
  const map: HeaderMap = {}
  const setCookies: string[] = []
  for (const [name, value] of headers) {
    if (name === 'set-cookie') setCookies.push(value)
    else if (name !== omit) map[name] = value
  }
  return setCookies.length > 0 ? { headers: map, setCookies } : { headers: map }
}

/** What a family answers, as the plain values that cross the binding. */
export async function toFamilyResponse(response: Response): Promise<FamilyResponse> {
  const headers = headerMap(response.headers)
  const status = response.status
  if (!response.body || NULL_BODY_STATUSES.has(status)) {
    await response.body?.cancel().catch(() => {})
    return { status, ...headers, body: null }
  }
  const type = mediaType(headers.headers['content-type'] ?? null)
  if (STREAMED_TYPES.includes(type)) return { status, ...headers, body: response.body }
  return {
    status,
    ...headers,
    body: isTextual(type) ? await response.text() : await response.arrayBuffer(),
  }
}

/** The Request a family's app sees: the forwarded one, rebuilt in the family's isolate. */
export function toRequest(forwarded: ForwardedRequest): Request {
  const hasBody = forwarded.body !== null && forwarded.method !== 'GET' && forwarded.method !== 'HEAD'
  return new Request(forwarded.url, {
    method: forwarded.method,
    headers: forwarded.headers,
    ...(hasBody ? { body: forwarded.body } : {}),
  })
}

/** The Response the gateway sends: the family's, with the gateway's own headers added. */
export function fromFamilyResponse(result: FamilyResponse, extraHeaders: HeaderMap | null): Response {
  const map = extraHeaders ? { ...result.headers, ...extraHeaders } : result.headers
  let headers: HeaderMap | Headers = map
  if (result.setCookies) {
    headers = new Headers(map)
    for (const cookie of result.setCookies) headers.append('set-cookie', cookie)
  }
  return new Response(NULL_BODY_STATUSES.has(result.status) ? null : result.body, {
    status: result.status,
    headers,
  })
}
