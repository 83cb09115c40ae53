/**
 * gRPC on a Worker. Workers cannot send HTTP trailers, so the receiver takes a unary OTLP Export
 * call's body (the length-prefixed message framing of the gRPC over HTTP/2 protocol: one byte
 * compressed-flag, four bytes big-endian length, the message), validates the framing and the
 * message, forwards the message bytes as OTLP/HTTP protobuf, and answers "Trailers-Only" style:
 * `grpc-status` and `grpc-message` in the response headers (HTTP 200), with the framed Export
 * response as the body on success. docs/telemetry.md says what that means for clients.
 */
import { AppError } from '../../../../shared/http/errors'

export interface GrpcMessage {
  /** The message bytes exactly as framed (still compressed when `compressed`). */
  message: Uint8Array
  compressed: boolean
}

/** The one message of a unary call; 400 when the framing is not exactly one whole message. */
export function unframe(body: Uint8Array): GrpcMessage {
  if (body.length < 5) {
    throw new AppError(
      400,
      'invalid_grpc_framing',
      `A gRPC request body starts with a 5-byte message prefix (flag and length); got ${body.length} bytes.`,
    )
  }
  const flag = body[0]!
  if (flag !== 0 && flag !== 1) {
    throw new AppError(
      400,
      'invalid_grpc_framing',
      `The gRPC compressed-flag byte must be 0 or 1 (got ${flag}).`,
    )
  }
  const length = new DataView(body.buffer, body.byteOffset, body.byteLength).getUint32(1)
  if (5 + length !== body.length) {
    throw new AppError(
      400,
      'invalid_grpc_framing',
      5 + length > body.length
        ? `The gRPC message prefix declares ${length} bytes but only ${body.length - 5} follow.`
        : `A unary gRPC export carries exactly one message; ${body.length - 5 - length} bytes follow the first.`,
    )
  }
  return { message: body.subarray(5, 5 + length), compressed: flag === 1 }
}

export function frame(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length)
  new DataView(out.buffer).setUint32(1, message.length)
  out.set(message, 5)
  return out
}
