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
 * only workers that hold the binding can call `handle`, and only the gateway holds them.
 */
import type { RequestContext } from './request-context'

export type ForwardedBody = string | ReadableStream<Uint8Array> | null

export interface ForwardedRequest {
  readonly method: string
  readonly url: string
  readonly headers: string[][]
  readonly body: ForwardedBody
  readonly context: RequestContext
}

export type FamilyResponseBody = string | ArrayBuffer | ReadableStream<Uint8Array> | null

export interface FamilyResponse {
  readonly status: number
  readonly headers: string[][]
  readonly body: FamilyResponseBody
}

/** The transport every family worker's entrypoint exposes to the gateway. */
export interface FamilyRpc {
  handle(request: ForwardedRequest): Promise<FamilyResponse>
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

/** What a family answers, as the plain values that cross the binding. */
export async function toFamilyResponse(response: Response): Promise<FamilyResponse> {
  const headers = [...response.headers]
  const status = response.status
  if (!response.body || NULL_BODY_STATUSES.has(status)) {
    await response.body?.cancel().catch(() => {})
    return { status, headers, body: null }
  }
  const type = mediaType(response.headers.get('content-type'))
  if (STREAMED_TYPES.includes(type)) return { status, headers, body: response.body }
  return { status, headers, body: isTextual(type) ? await response.text() : await response.arrayBuffer() }
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

/** The Response the gateway sends: the family's, with the gateway's own headers appended. */
export function fromFamilyResponse(result: FamilyResponse, extraHeaders: string[][]): Response {
  const headers = extraHeaders.length === 0 ? result.headers : [...result.headers, ...extraHeaders]
  return new Response(NULL_BODY_STATUSES.has(result.status) ? null : result.body, {
    status: result.status,
    headers,
  })
}
