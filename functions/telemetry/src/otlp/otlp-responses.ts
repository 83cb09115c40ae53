/**
 * What the receiver answers on success, in the encoding of the request (OTLP/HTTP: "the server
 * MUST use the same Content-Type in the response as it received in the request"): the collector's
 * Export response passed through (its `partial_success` included), or an empty one when the
 * collector sent no body; gRPC: HTTP 200, `grpc-status: 0`, the framed response. Refusals are
 * rendered by shared/telemetry/otlp-errors.ts (the gateway's refusals on /otlp/* too).
 */
import type { OtlpEncoding } from '../../../../shared/telemetry/otlp-content-types'
import { frame } from './grpc'

function isProtobuf(contentType: string | null): boolean {
  const base = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase()
  return base === 'application/x-protobuf' || base === 'application/protobuf'
}

function isJson(contentType: string | null): boolean {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase() === 'application/json'
}

export function successResponse(
  encoding: OtlpEncoding,
  /** The request's own media type (otlpResponseMediaType). */
  mediaType: string,
  collector: { body: Uint8Array; contentType: string | null },
  headers: Record<string, string>,
): Response {
  if (encoding === 'json') {
    const body =
      collector.body.length > 0 && isJson(collector.contentType)
        ? collector.body
        : new TextEncoder().encode('{}')
    return new Response(body, { status: 200, headers: { ...headers, 'content-type': mediaType } })
  }
  const message =
    collector.body.length > 0 && isProtobuf(collector.contentType) ? collector.body : new Uint8Array(0)
  if (encoding === 'grpc') {
    return new Response(frame(message), {
      status: 200,
      headers: { ...headers, 'content-type': mediaType, 'grpc-status': '0' },
    })
  }
  return new Response(message, { status: 200, headers: { ...headers, 'content-type': mediaType } })
}
