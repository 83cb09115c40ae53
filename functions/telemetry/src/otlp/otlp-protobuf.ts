/**
 * Validates an OTLP Export request in the protobuf wire format and counts its items, without
 * building objects or transforming anything (the bytes are forwarded as they came). The wire is
 * read with @bufbuild/protobuf's BinaryReader (no code generated at run time, so it runs on
 * Workers); what each field is comes from the one OTLP table (otlp-schema.ts).
 *
 * Refused: a truncated or overlong field, a bad varint or tag, a nested message that is not a
 * message, a string that is not UTF-8, a trace or span id of the wrong length, nesting deeper
 * than MAX_NESTING. A known field with another wire type than its declaration is skipped as an
 * unknown field, as protobuf decoders (the Collector's included) do.
 */
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire'
import { type FieldSpec, MAX_NESTING, type MessageName, OTLP_MESSAGES, type ScalarKind } from './otlp-schema'

export class OtlpDecodeError extends Error {
  /** Where in the request, as in `resource_spans[0].scope_spans[0].spans[3].trace_id`. */
  readonly path: string

  constructor(message: string, path: string) {
    super(message)
    this.name = 'OtlpDecodeError'
    this.path = path
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

const WIRE_OF: Readonly<Record<ScalarKind, WireType>> = {
  varint: WireType.Varint,
  sint: WireType.Varint,
  fixed64: WireType.Bit64,
  double: WireType.Bit64,
  fixed32: WireType.Bit32,
  string: WireType.LengthDelimited,
  bytes: WireType.LengthDelimited,
  trace_id: WireType.LengthDelimited,
  span_id: WireType.LengthDelimited,
}

function isAscii(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) if (bytes[i]! > 0x7f) return false
  return true
}

function checkLengthDelimited(kind: ScalarKind, bytes: Uint8Array, path: string): void {
  if (kind === 'string') {
    if (isAscii(bytes)) return
    try {
      utf8.decode(bytes)
    } catch {
      throw new OtlpDecodeError('a string field is not valid UTF-8', path)
    }
  } else if (kind === 'trace_id' && bytes.length !== 0 && bytes.length !== 16) {
    throw new OtlpDecodeError(`a trace id must be 16 bytes (got ${bytes.length})`, path)
  } else if (kind === 'span_id' && bytes.length !== 0 && bytes.length !== 8) {
    throw new OtlpDecodeError(`a span id must be 8 bytes (got ${bytes.length})`, path)
  }
}

/** A packed repeated scalar: the payload must be whole elements. */
function checkPacked(kind: ScalarKind, bytes: Uint8Array, path: string): void {
  if (kind === 'fixed64' || kind === 'double') {
    if (bytes.length % 8 !== 0) throw new OtlpDecodeError('a packed 64-bit field has a partial element', path)
  } else if (kind === 'fixed32') {
    if (bytes.length % 4 !== 0) throw new OtlpDecodeError('a packed 32-bit field has a partial element', path)
  } else {
    const reader = new BinaryReader(bytes)
    while (reader.pos < reader.len) reader.skip(WireType.Varint)
  }
}

function describe(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err)
  if (/premature EOF|out of range/i.test(text)) return 'the message ends in the middle of a field'
  if (/varint/i.test(text)) return 'a varint is malformed'
  if (/illegal tag|wire type/i.test(text)) return `a field tag is invalid (${text})`
  return text
}

/** Walks one message; returns the number of items (spans, data points, log records) under it. */
function walk(bytes: Uint8Array, name: MessageName, path: string, depth: number): number {
  if (depth > MAX_NESTING) {
    throw new OtlpDecodeError(`messages are nested more than ${MAX_NESTING} levels deep`, path)
  }
  const spec = OTLP_MESSAGES[name]
  const reader = new BinaryReader(bytes)
  const indexes = new Map<number, number>()
  let items = 0
  while (reader.pos < reader.len) {
    let fieldNo: number
    let wireType: WireType
    let field: FieldSpec | undefined
    let fieldPath = path
    try {
      ;[fieldNo, wireType] = reader.tag()
      field = spec[fieldNo]
      if (field) {
        const index = field.repeated ? (indexes.get(fieldNo) ?? 0) : -1
        if (field.repeated) indexes.set(fieldNo, index + 1)
        fieldPath = `${path}${path ? '.' : ''}${field.name}${index >= 0 ? `[${index}]` : ''}`
      } else {
        fieldPath = `${path}${path ? '.' : ''}#${fieldNo}`
      }
    } catch (err) {
      throw new OtlpDecodeError(describe(err), path || '(top level)')
    }
    const expected =
      field === undefined
        ? undefined
        : field.kind === 'message' || field.packed
          ? WireType.LengthDelimited
          : WIRE_OF[field.kind]
    // Repeated scalars may also arrive unpacked (one element per tag): their scalar wire type.
    const unpacked = field?.packed === true && field.kind !== 'message' && wireType === WIRE_OF[field.kind]
    if (!field || (wireType !== expected && !unpacked)) {
      try {
        reader.skip(wireType, fieldNo, MAX_NESTING)
      } catch (err) {
        throw new OtlpDecodeError(describe(err), fieldPath)
      }
      continue
    }
    if (wireType !== WireType.LengthDelimited) {
      try {
        reader.skip(wireType)
      } catch (err) {
        throw new OtlpDecodeError(describe(err), fieldPath)
      }
      continue
    }
    let payload: Uint8Array
    try {
      payload = reader.bytes()
    } catch (err) {
      throw new OtlpDecodeError(describe(err), fieldPath)
    }
    if (field.kind === 'message') {
      const inner = walk(payload, field.message!, fieldPath, depth + 1)
      items += field.counts ? 1 : inner
    } else if (field.packed) {
      try {
        checkPacked(field.kind, payload, fieldPath)
      } catch (err) {
        if (err instanceof OtlpDecodeError) throw err
        throw new OtlpDecodeError(describe(err), fieldPath)
      }
    } else {
      checkLengthDelimited(field.kind, payload, fieldPath)
    }
  }
  return items
}

/**
 * Validates `bytes` as the Export request `message` (e.g. ExportTraceServiceRequest) and returns
 * how many items it carries. Throws OtlpDecodeError naming where it went wrong.
 */
export function countProtobufItems(bytes: Uint8Array, message: MessageName): number {
  return walk(bytes, message, '', 0)
}

/**
 * The `partial_success.rejected_*` count of an Export response (protobuf), 0 when absent or
 * unreadable: field 1 of the response is ExportPartialSuccess { int64 rejected = 1; string error_message = 2 }.
 */
export function rejectedInProtobufResponse(bytes: Uint8Array): { rejected: number; message: string } {
  let rejected = 0
  let message = ''
  try {
    const reader = new BinaryReader(bytes)
    while (reader.pos < reader.len) {
      const [fieldNo, wireType] = reader.tag()
      if (fieldNo !== 1 || wireType !== WireType.LengthDelimited) {
        reader.skip(wireType, fieldNo)
        continue
      }
      const inner = new BinaryReader(reader.bytes())
      while (inner.pos < inner.len) {
        const [n, w] = inner.tag()
        if (n === 1 && w === WireType.Varint) rejected = Number(inner.int64())
        else if (n === 2 && w === WireType.LengthDelimited) message = inner.string()
        else inner.skip(w, n)
      }
    }
  } catch {
    return { rejected: 0, message: '' }
  }
  return { rejected, message }
}
