/**
 * The request encodings the OTLP receiver accepts (spec 001: "OTLP JSON, protobuf, octet-stream,
 * gRPC and Google protobuf"), by media type. The gateway refuses anything else with 415 before
 * the telemetry worker sees it; the telemetry worker reads the same table to decode the body.
 */
export type OtlpEncoding = 'protobuf' | 'json' | 'grpc'

export const OTLP_MEDIA_TYPES: Readonly<Record<string, OtlpEncoding>> = {
  'application/x-protobuf': 'protobuf',
  'application/protobuf': 'protobuf',
  'application/octet-stream': 'protobuf',
  'application/x-google-protobuf': 'protobuf',
  'application/json': 'json',
  'application/protobuf+json': 'json',
  'application/grpc': 'grpc',
  'application/grpc+proto': 'grpc',
}

export const OTLP_ACCEPTED_TYPES_TEXT = Object.keys(OTLP_MEDIA_TYPES).join(', ')

/** The encoding of a Content-Type header value, or null when the receiver does not take it. */
export function otlpEncodingOf(contentType: string | null): OtlpEncoding | null {
  const base = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase()
  return OTLP_MEDIA_TYPES[base] ?? null
}
