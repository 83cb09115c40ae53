/**
 * What the receiver answers, in the encoding of the request (OTLP/HTTP: "the server MUST use the
 * same Content-Type in the response as it received in the request"):
 * - success: the collector's Export response passed through (its `partial_success` included),
 *   or an empty one when the collector sent no body;
 * - refusal: a `google.rpc.Status` (protobuf or JSON) with the HTTP status; the JSON form also
 *   carries the product's `error` object, which OTLP clients ignore as an unknown field;
 * - gRPC: HTTP 200 with `grpc-status` / `grpc-message` headers, the framed response on success.
 */
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire'
import type { AppError } from '../../../../shared/http/errors'
import type { OtlpEncoding } from '../../../../shared/telemetry/otlp-content-types'
import { frame, grpcCodeFor, grpcMessageHeader } from './grpc'

const PROTOBUF = 'application/x-protobuf'

function isProtobuf(contentType: string | null): boolean {
  const base = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase()
  return base === 'application/x-protobuf' || base === 'application/protobuf'
}

function isJson(contentType: string | null): boolean {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase() === 'application/json'
}

export function successResponse(
  encoding: OtlpEncoding,
  collector: { body: Uint8Array; contentType: string | null },
  headers: Record<string, string>,
): Response {
  if (encoding === 'json') {
    const body =
      collector.body.length > 0 && isJson(collector.contentType)
        ? collector.body
        : new TextEncoder().encode('{}')
    return new Response(body, { status: 200, headers: { ...headers, 'content-type': 'application/json' } })
  }
  const message =
    collector.body.length > 0 && isProtobuf(collector.contentType) ? collector.body : new Uint8Array(0)
  if (encoding === 'grpc') {
    return new Response(frame(message), {
      status: 200,
      headers: { ...headers, 'content-type': 'application/grpc', 'grpc-status': '0' },
    })
  }
  return new Response(message, { status: 200, headers: { ...headers, 'content-type': PROTOBUF } })
}

/** google.rpc.Status { int32 code = 1; string message = 2; } */
export function statusProtobuf(code: number, message: string): Uint8Array {
  const writer = new BinaryWriter()
  if (code !== 0) writer.tag(1, WireType.Varint).int32(code)
  if (message) writer.tag(2, WireType.LengthDelimited).string(message)
  return writer.finish()
}

export function errorResponse(encoding: OtlpEncoding, error: AppError, requestId: string): Response {
  const plain = error.toPlain(requestId)
  const code = grpcCodeFor(error.status)
  const headers: Record<string, string> = { ...plain.headers, 'x-svc-error-code': error.code }
  if (encoding === 'grpc') {
    return new Response(null, {
      status: 200,
      headers: {
        ...headers,
        'content-type': 'application/grpc',
        'grpc-status': String(code),
        'grpc-message': grpcMessageHeader(error.message),
      },
    })
  }
  if (encoding === 'protobuf') {
    return new Response(statusProtobuf(code, error.message), {
      status: error.status,
      headers: { ...headers, 'content-type': PROTOBUF },
    })
  }
  const body = { code, message: error.message, details: [], ...error.toBody() }
  return new Response(JSON.stringify(body), {
    status: error.status,
    headers: { ...headers, 'content-type': 'application/json' },
  })
}
