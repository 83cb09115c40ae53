/**
 * OTLP Export requests → OTLP JSON, as an OpenTelemetry Collector's file exporter writes them: the
 * proto3 JSON mapping with OTLP's exceptions (trace and span ids as lowercase hex, enums as
 * integers), lowerCamelCase keys, 64-bit integers as decimal strings, fields at their default
 * value left out (except members of a oneof and `optional` fields, which are written whenever they
 * are set), unknown fields dropped.
 *
 * Two inputs give the same output: a protobuf body (`protobufToOtlpJson`) and an OTLP JSON body in
 * any spelling the OTLP/HTTP receiver takes (`canonicalOtlpJson`: snake_case keys, integers as
 * numbers or strings, nulls). This is the local collector's own decoder, written from
 * opentelemetry-proto v1 (common, resource, trace, metrics, logs, collector services): it stands in
 * for the Collector, so it shares nothing with the product's receiver (functions/telemetry).
 */
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire'

type Scalar =
  | 'string'
  | 'bytes'
  | 'bool'
  | 'int32'
  | 'uint32'
  | 'sint32'
  | 'fixed32'
  | 'enum'
  | 'int64'
  | 'uint64'
  | 'fixed64'
  | 'sfixed64'
  | 'double'
  /** trace_id / span_id: bytes on the wire, hex in OTLP JSON. */
  | 'id'

interface Field {
  /** The proto name (snake_case); the JSON key is its lowerCamelCase form. */
  name: string
  /** A message field names its message type (a key of MESSAGES). */
  type: Scalar | { message: string }
  repeated?: boolean
  /** A oneof member or an `optional` field: written whenever set, even at its default. */
  presence?: boolean
}

export type MessageName = keyof typeof MESSAGES

const s = (name: string, type: Scalar, extra: Partial<Field> = {}): Field => ({ name, type, ...extra })
const m = (name: string, message: string, extra: Partial<Field> = {}): Field => ({
  name,
  type: { message },
  ...extra,
})
const many = { repeated: true }
const oneof = { presence: true }
const attrs = (name = 'attributes') => m(name, 'KeyValue', many)

/** opentelemetry-proto v1: each message's fields by number. */
const MESSAGES = {
  ExportTraceServiceRequest: { 1: m('resource_spans', 'ResourceSpans', many) },
  ExportMetricsServiceRequest: { 1: m('resource_metrics', 'ResourceMetrics', many) },
  ExportLogsServiceRequest: { 1: m('resource_logs', 'ResourceLogs', many) },

  AnyValue: {
    1: s('string_value', 'string', oneof),
    2: s('bool_value', 'bool', oneof),
    3: s('int_value', 'int64', oneof),
    4: s('double_value', 'double', oneof),
    5: m('array_value', 'ArrayValue', oneof),
    6: m('kvlist_value', 'KeyValueList', oneof),
    7: s('bytes_value', 'bytes', oneof),
  },
  ArrayValue: { 1: m('values', 'AnyValue', many) },
  KeyValueList: { 1: m('values', 'KeyValue', many) },
  KeyValue: { 1: s('key', 'string'), 2: m('value', 'AnyValue') },
  InstrumentationScope: {
    1: s('name', 'string'),
    2: s('version', 'string'),
    3: attrs(),
    4: s('dropped_attributes_count', 'uint32'),
  },
  EntityRef: {
    1: s('schema_url', 'string'),
    2: s('type', 'string'),
    3: s('id_keys', 'string', many),
    4: s('description_keys', 'string', many),
  },
  Resource: {
    1: attrs(),
    2: s('dropped_attributes_count', 'uint32'),
    3: m('entity_refs', 'EntityRef', many),
  },

  ResourceSpans: {
    1: m('resource', 'Resource'),
    2: m('scope_spans', 'ScopeSpans', many),
    3: s('schema_url', 'string'),
  },
  ScopeSpans: {
    1: m('scope', 'InstrumentationScope'),
    2: m('spans', 'Span', many),
    3: s('schema_url', 'string'),
  },
  Span: {
    1: s('trace_id', 'id'),
    2: s('span_id', 'id'),
    3: s('trace_state', 'string'),
    4: s('parent_span_id', 'id'),
    16: s('flags', 'fixed32'),
    5: s('name', 'string'),
    6: s('kind', 'enum'),
    7: s('start_time_unix_nano', 'fixed64'),
    8: s('end_time_unix_nano', 'fixed64'),
    9: attrs(),
    10: s('dropped_attributes_count', 'uint32'),
    11: m('events', 'SpanEvent', many),
    12: s('dropped_events_count', 'uint32'),
    13: m('links', 'SpanLink', many),
    14: s('dropped_links_count', 'uint32'),
    15: m('status', 'Status'),
  },
  SpanEvent: {
    1: s('time_unix_nano', 'fixed64'),
    2: s('name', 'string'),
    3: attrs(),
    4: s('dropped_attributes_count', 'uint32'),
  },
  SpanLink: {
    1: s('trace_id', 'id'),
    2: s('span_id', 'id'),
    3: s('trace_state', 'string'),
    4: attrs(),
    5: s('dropped_attributes_count', 'uint32'),
    6: s('flags', 'fixed32'),
  },
  Status: { 2: s('message', 'string'), 3: s('code', 'enum') },

  ResourceMetrics: {
    1: m('resource', 'Resource'),
    2: m('scope_metrics', 'ScopeMetrics', many),
    3: s('schema_url', 'string'),
  },
  ScopeMetrics: {
    1: m('scope', 'InstrumentationScope'),
    2: m('metrics', 'Metric', many),
    3: s('schema_url', 'string'),
  },
  Metric: {
    1: s('name', 'string'),
    2: s('description', 'string'),
    3: s('unit', 'string'),
    5: m('gauge', 'Gauge', oneof),
    7: m('sum', 'Sum', oneof),
    9: m('histogram', 'Histogram', oneof),
    10: m('exponential_histogram', 'ExponentialHistogram', oneof),
    11: m('summary', 'Summary', oneof),
    12: attrs('metadata'),
  },
  Gauge: { 1: m('data_points', 'NumberDataPoint', many) },
  Sum: {
    1: m('data_points', 'NumberDataPoint', many),
    2: s('aggregation_temporality', 'enum'),
    3: s('is_monotonic', 'bool'),
  },
  Histogram: {
    1: m('data_points', 'HistogramDataPoint', many),
    2: s('aggregation_temporality', 'enum'),
  },
  ExponentialHistogram: {
    1: m('data_points', 'ExponentialHistogramDataPoint', many),
    2: s('aggregation_temporality', 'enum'),
  },
  Summary: { 1: m('data_points', 'SummaryDataPoint', many) },
  NumberDataPoint: {
    7: attrs(),
    2: s('start_time_unix_nano', 'fixed64'),
    3: s('time_unix_nano', 'fixed64'),
    4: s('as_double', 'double', oneof),
    6: s('as_int', 'sfixed64', oneof),
    5: m('exemplars', 'Exemplar', many),
    8: s('flags', 'uint32'),
  },
  HistogramDataPoint: {
    9: attrs(),
    2: s('start_time_unix_nano', 'fixed64'),
    3: s('time_unix_nano', 'fixed64'),
    4: s('count', 'fixed64'),
    5: s('sum', 'double', oneof),
    6: s('bucket_counts', 'fixed64', many),
    7: s('explicit_bounds', 'double', many),
    8: m('exemplars', 'Exemplar', many),
    10: s('flags', 'uint32'),
    11: s('min', 'double', oneof),
    12: s('max', 'double', oneof),
  },
  ExponentialHistogramDataPoint: {
    1: attrs(),
    2: s('start_time_unix_nano', 'fixed64'),
    3: s('time_unix_nano', 'fixed64'),
    4: s('count', 'fixed64'),
    5: s('sum', 'double', oneof),
    6: s('scale', 'sint32'),
    7: s('zero_count', 'fixed64'),
    8: m('positive', 'Buckets'),
    9: m('negative', 'Buckets'),
    10: s('flags', 'uint32'),
    11: m('exemplars', 'Exemplar', many),
    12: s('min', 'double', oneof),
    13: s('max', 'double', oneof),
    14: s('zero_threshold', 'double'),
  },
  Buckets: { 1: s('offset', 'sint32'), 2: s('bucket_counts', 'uint64', many) },
  SummaryDataPoint: {
    7: attrs(),
    2: s('start_time_unix_nano', 'fixed64'),
    3: s('time_unix_nano', 'fixed64'),
    4: s('count', 'fixed64'),
    5: s('sum', 'double'),
    6: m('quantile_values', 'ValueAtQuantile', many),
    8: s('flags', 'uint32'),
  },
  ValueAtQuantile: { 1: s('quantile', 'double'), 2: s('value', 'double') },
  Exemplar: {
    7: attrs('filtered_attributes'),
    2: s('time_unix_nano', 'fixed64'),
    3: s('as_double', 'double', oneof),
    6: s('as_int', 'sfixed64', oneof),
    4: s('span_id', 'id'),
    5: s('trace_id', 'id'),
  },

  ResourceLogs: {
    1: m('resource', 'Resource'),
    2: m('scope_logs', 'ScopeLogs', many),
    3: s('schema_url', 'string'),
  },
  ScopeLogs: {
    1: m('scope', 'InstrumentationScope'),
    2: m('log_records', 'LogRecord', many),
    3: s('schema_url', 'string'),
  },
  LogRecord: {
    1: s('time_unix_nano', 'fixed64'),
    11: s('observed_time_unix_nano', 'fixed64'),
    2: s('severity_number', 'enum'),
    3: s('severity_text', 'string'),
    5: m('body', 'AnyValue'),
    6: attrs(),
    7: s('dropped_attributes_count', 'uint32'),
    8: s('flags', 'fixed32'),
    9: s('trace_id', 'id'),
    10: s('span_id', 'id'),
    12: s('event_name', 'string'),
  },
} satisfies Record<string, Record<number, Field>>

/** Field number → field, and the fields in field-number order (the order they are written in). */
const TABLE = new Map<MessageName, { byNumber: Map<number, Field>; ordered: Field[] }>()
for (const [name, fields] of Object.entries(MESSAGES) as [MessageName, Record<number, Field>][]) {
  const numbered = Object.entries(fields).map(([n, f]) => [Number(n), f] as const)
  TABLE.set(name, {
    byNumber: new Map(numbered),
    ordered: numbered.sort(([a], [b]) => a - b).map(([, f]) => f),
  })
}

/** An Export request that cannot be read; the collector answers 400 with this message. */
export class OtlpBodyError extends Error {
  override name = 'OtlpBodyError'
}

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json }
export type JsonObject = { [key: string]: Json }

const MAX_DEPTH = 64

export function jsonKey(protoName: string): string {
  return protoName.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64')
const jsonDouble = (value: number): number | string =>
  Number.isNaN(value) ? 'NaN' : value === Infinity ? 'Infinity' : value === -Infinity ? '-Infinity' : value

const WIRE: Record<Scalar, WireType> = {
  string: WireType.LengthDelimited,
  bytes: WireType.LengthDelimited,
  id: WireType.LengthDelimited,
  bool: WireType.Varint,
  int32: WireType.Varint,
  uint32: WireType.Varint,
  sint32: WireType.Varint,
  enum: WireType.Varint,
  int64: WireType.Varint,
  uint64: WireType.Varint,
  fixed32: WireType.Bit32,
  fixed64: WireType.Bit64,
  sfixed64: WireType.Bit64,
  double: WireType.Bit64,
}

function readScalar(reader: BinaryReader, type: Scalar): Json {
  switch (type) {
    case 'string':
      return reader.string()
    case 'bytes':
      return base64(reader.bytes())
    case 'id':
      return hex(reader.bytes())
    case 'bool':
      return reader.bool()
    case 'int32':
    case 'enum':
      return reader.int32()
    case 'uint32':
      return reader.uint32()
    case 'sint32':
      return reader.sint32()
    case 'fixed32':
      return reader.fixed32()
    case 'int64':
      return String(reader.int64())
    case 'uint64':
      return String(reader.uint64())
    case 'fixed64':
      return String(reader.fixed64())
    case 'sfixed64':
      return String(reader.sfixed64())
    case 'double':
      return jsonDouble(reader.double())
  }
}

/** The default a field without presence is left out at (64-bit integers are strings). */
function isDefault(type: Scalar, value: Json): boolean {
  return value === '' || value === 0 || value === false || (value === '0' && type !== 'string')
}

/** Assembles decoded values in field-number order, leaving out what proto3 JSON leaves out. */
function assemble(name: MessageName, values: Map<Field, Json | Json[]>): JsonObject {
  const out: JsonObject = {}
  for (const field of TABLE.get(name)!.ordered) {
    const value = values.get(field)
    if (value === undefined) continue
    if (field.repeated) {
      if ((value as Json[]).length > 0) out[jsonKey(field.name)] = value
    } else if (field.presence || typeof field.type === 'object' || !isDefault(field.type, value as Json)) {
      out[jsonKey(field.name)] = value
    }
  }
  return out
}

function decodeMessage(bytes: Uint8Array, name: MessageName, depth: number): JsonObject {
  if (depth > MAX_DEPTH) throw new OtlpBodyError(`messages nested deeper than ${MAX_DEPTH} levels`)
  const { byNumber } = TABLE.get(name)!
  const reader = new BinaryReader(bytes)
  const values = new Map<Field, Json | Json[]>()
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag()
    const field = byNumber.get(fieldNo)
    if (!field) {
      reader.skip(wireType, fieldNo)
      continue
    }
    if (typeof field.type === 'object') {
      if (wireType !== WireType.LengthDelimited) {
        reader.skip(wireType, fieldNo)
        continue
      }
      const inner = decodeMessage(reader.bytes(), field.type.message as MessageName, depth + 1)
      if (field.repeated) ((values.get(field) as Json[] | undefined) ?? setList(values, field)).push(inner)
      else values.set(field, inner)
      continue
    }
    const scalar = field.type
    if (
      field.repeated &&
      wireType === WireType.LengthDelimited &&
      WIRE[scalar] !== WireType.LengthDelimited
    ) {
      // Packed repeated scalars (proto3's default for numbers).
      const packed = new BinaryReader(reader.bytes())
      const list = (values.get(field) as Json[] | undefined) ?? setList(values, field)
      while (packed.pos < packed.len) list.push(readScalar(packed, scalar))
      continue
    }
    if (wireType !== WIRE[scalar]) {
      reader.skip(wireType, fieldNo)
      continue
    }
    const value = readScalar(reader, scalar)
    if (field.repeated) ((values.get(field) as Json[] | undefined) ?? setList(values, field)).push(value)
    else values.set(field, value)
  }
  return assemble(name, values)
}

function setList(values: Map<Field, Json | Json[]>, field: Field): Json[] {
  const list: Json[] = []
  values.set(field, list)
  return list
}

/** A protobuf Export request (`message`) as OTLP JSON. Throws OtlpBodyError when unreadable. */
export function protobufToOtlpJson(bytes: Uint8Array, message: MessageName): JsonObject {
  try {
    return decodeMessage(bytes, message, 0)
  } catch (err) {
    if (err instanceof OtlpBodyError) throw err
    throw new OtlpBodyError(`the protobuf body cannot be read: ${err instanceof Error ? err.message : err}`)
  }
}

const INTEGER = /^-?\d+$/

function canonicalScalar(type: Scalar, value: Json, at: string): Json {
  const fail = (): never => {
    throw new OtlpBodyError(`${at}: ${JSON.stringify(value)?.slice(0, 60)} is not a valid ${type}`)
  }
  switch (type) {
    case 'string':
      return typeof value === 'string' ? value : fail()
    case 'bytes':
      // Either base64 alphabet; written in the standard one.
      return typeof value === 'string' ? base64(Buffer.from(value, 'base64')) : fail()
    case 'id':
      return typeof value === 'string' && /^[0-9a-fA-F]*$/.test(value) ? value.toLowerCase() : fail()
    case 'bool':
      return typeof value === 'boolean' ? value : fail()
    case 'double':
      if (typeof value === 'number') return value
      if (typeof value === 'string' && ['NaN', 'Infinity', '-Infinity'].includes(value)) return value
      if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
        return Number(value)
      return fail()
    case 'int64':
    case 'uint64':
    case 'fixed64':
    case 'sfixed64':
      if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value).toString()
      if (typeof value === 'string' && INTEGER.test(value)) return BigInt(value).toString()
      return fail()
    default:
      // 32-bit integers and enums: numbers.
      if (typeof value === 'number' && Number.isInteger(value)) return value
      if (typeof value === 'string' && INTEGER.test(value)) return Number(value)
      return fail()
  }
}

function canonicalMessage(value: Json, name: MessageName, at: string, depth: number): JsonObject {
  if (depth > MAX_DEPTH) throw new OtlpBodyError(`messages nested deeper than ${MAX_DEPTH} levels`)
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new OtlpBodyError(`${at || 'the body'} is not an object`)
  }
  const values = new Map<Field, Json | Json[]>()
  for (const field of TABLE.get(name)!.ordered) {
    const key = jsonKey(field.name)
    const raw = value[key] ?? value[field.name] ?? null
    if (raw === null) continue
    const fieldAt = `${at}${at ? '.' : ''}${key}`
    const one = (item: Json, itemAt: string): Json =>
      typeof field.type === 'object'
        ? canonicalMessage(item, field.type.message as MessageName, itemAt, depth + 1)
        : canonicalScalar(field.type, item, itemAt)
    if (field.repeated) {
      if (!Array.isArray(raw)) throw new OtlpBodyError(`${fieldAt} is not an array`)
      values.set(
        field,
        raw.map((item, i) => one(item, `${fieldAt}[${i}]`)),
      )
    } else {
      values.set(field, one(raw, fieldAt))
    }
  }
  return assemble(name, values)
}

/** An OTLP JSON Export request in any accepted spelling, written the one canonical way. */
export function canonicalOtlpJson(value: Json, message: MessageName): JsonObject {
  return canonicalMessage(value, message, '', 0)
}
