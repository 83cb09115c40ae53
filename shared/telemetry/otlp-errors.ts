/**
 * How an OTLP receiver refuses a request, in the request's own encoding (OTLP/HTTP: "the server
 * MUST use the same Content-Type in the response as it received in the request"; a failure is a
 * `google.rpc.Status`). The gateway renders its own refusals on /otlp/* paths with this (401,
 * 403, 413, 415, crypto-policy blocks, 404 for a signal that does not exist) and the telemetry
 * worker renders its refusals with it too: one renderer for both, so an exporter reads the same
 * answer whichever of the two refused it.
 *
 * - protobuf: `google.rpc.Status` bytes with the HTTP status;
 * - JSON: the Status in the OTLP JSON mapping (`code`, `message`, `details`) and, beside it, the
 *   product's `error` object (and `svc_upgrade` for a plan refusal), which OTLP clients ignore as
 *   unknown fields;
 * - gRPC: HTTP 200, Trailers-Only style, `grpc-status` / `grpc-message` headers, no body.
 * Every form carries `x-svc-error-code` (the product's machine code) and the AppError's headers
 * (Retry-After, WWW-Authenticate, ...).
 */
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire'
import type { AppError } from '../http/errors'
import { type OtlpEncoding, otlpEncodingOf } from './otlp-content-types'

/** Paths the OTLP error encoding applies to (the receiver's routes and any unknown signal). */
export const OTLP_PATH_PREFIX = '/otlp/'

export function isOtlpPath(pathname: string): boolean {
  return pathname.startsWith(OTLP_PATH_PREFIX)
}

/** The encoding an error answer uses: the request's when it named an accepted one, else JSON. */
export function otlpResponseEncoding(contentType: string | null): OtlpEncoding {
  return otlpEncodingOf(contentType) ?? 'json'
}

/**
 * The Content-Type of an answer: the request's own media type when it is one the receiver takes
 * (OTLP/HTTP: "the server MUST use the same Content-Type in the response as it received in the
 * request": `application/protobuf` is answered as `application/protobuf`), else OTLP JSON.
 */
export function otlpResponseMediaType(contentType: string | null): string {
  const base = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase()
  return otlpEncodingOf(base) ? base : 'application/json'
}

/** google.rpc.Code for an HTTP status, as gRPC's own HTTP mapping (and the Collector's) uses. */
export function grpcCodeFor(status: number): number {
  if (status >= 200 && status < 300) return 0
  switch (status) {
    case 400:
    case 415:
      return 3 // INVALID_ARGUMENT
    case 401:
      return 16 // UNAUTHENTICATED
    case 403:
      return 7 // PERMISSION_DENIED
    case 404:
    case 405:
      return 12 // UNIMPLEMENTED
    case 413:
    case 429:
      return 8 // RESOURCE_EXHAUSTED
    case 502:
    case 503:
      return 14 // UNAVAILABLE
    case 504:
      return 4 // DEADLINE_EXCEEDED
    default:
      return status >= 500 ? 13 : 2 // INTERNAL : UNKNOWN
  }
}

/** grpc-message is percent-encoded (gRPC over HTTP/2: "Percent-Encoded" ASCII). */
export function grpcMessageHeader(message: string): string {
  return encodeURIComponent(message).replace(/%20/g, ' ')
}

/** google.rpc.Status { int32 code = 1; string message = 2; } */
export function statusProtobuf(code: number, message: string): Uint8Array {
  const writer = new BinaryWriter()
  if (code !== 0) writer.tag(1, WireType.Varint).int32(code)
  if (message) writer.tag(2, WireType.LengthDelimited).string(message)
  return writer.finish()
}

/** The refusal of a request whose Content-Type header is `requestContentType`. */
export function otlpErrorResponse(
  requestContentType: string | null,
  error: AppError,
  requestId: string,
): Response {
  const encoding = otlpResponseEncoding(requestContentType)
  const mediaType = otlpResponseMediaType(requestContentType)
  const plain = error.toPlain(requestId)
  const code = grpcCodeFor(error.status)
  const headers: Record<string, string> = { ...plain.headers, 'x-svc-error-code': error.code }
  if (encoding === 'grpc') {
    return new Response(null, {
      status: 200,
      headers: {
        ...headers,
        'content-type': mediaType,
        'grpc-status': String(code),
        'grpc-message': grpcMessageHeader(error.message),
      },
    })
  }
  if (encoding === 'protobuf') {
    return new Response(statusProtobuf(code, error.message), {
      status: error.status,
      headers: { ...headers, 'content-type': mediaType },
    })
  }
  const body = { code, message: error.message, details: [], ...error.toBody() }
  return new Response(JSON.stringify(body), {
    status: error.status,
    headers: { ...headers, 'content-type': mediaType },
  })
}
