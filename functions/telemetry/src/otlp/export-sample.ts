/**
 * A small sample of an accepted export, kept with its ingestion result so the workspace sees what
 * it sent (GET /platform/v1/telemetry/recent, the console's Telemetry page) whichever collector
 * took it: the collector is outside the product and may be a file, a vendor or nothing readable.
 *
 * What is kept, per export: the first 10 items (spans, metrics, log records), each with its
 * resource's service.name and at most 6 attributes; texts cut to 160 characters (names, log
 * bodies), attribute values to 100, keys to 64; and items dropped from the end until the whole
 * sample is at most 4 KiB of JSON. So a workspace's retained samples stay under
 * OTLP_RESULTS_RETAINED × 4 KiB (4 MiB at the default), whatever its exports carry.
 *
 * The cost is one more partial pass over a body already validated: OTLP JSON is summarised from
 * the object the validator parsed; protobuf is read with the same wire reader and table
 * (otlp-schema.ts) into the shape OTLP JSON parses to, but only as far as the sample needs: items
 * past the first 10 are skipped by their length prefix, and so are a metric's data points after
 * its first, span events and links, exemplars and histogram buckets. One summariser then reads
 * both shapes (lowerCamelCase or snake_case keys, 64-bit integers as numbers or strings), so the
 * two encodings of one export give the same sample. bench/NOTES.md has the cost per export.
 */
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire'
import type { ExportSample } from '../telemetry.schemas'
import {
  jsonName,
  MAX_NESTING,
  type MessageName,
  OTLP_MESSAGES,
  type OtlpSignal,
  type ScalarKind,
} from './otlp-schema'

export const SAMPLE_LIMITS = {
  items: 10,
  attributes: 6,
  text: 160,
  value: 100,
  key: 64,
  bytes: 4096,
} as const

type Sample<S extends OtlpSignal> = Extract<ExportSample, { signal: S }>
type SpanSample = Sample<'traces'>['spans'][number]
type MetricSample = Sample<'metrics'>['metrics'][number]
type LogSample = Sample<'logs'>['records'][number]
type AttributeValue = string | number | boolean

// ---------------------------------------------------------------------------------------------
// Protobuf: only what the sample reads, in the shape OTLP JSON parses to.

/** The messages that are the sample's items: the first SAMPLE_LIMITS.items are read, the rest skipped. */
const ITEM_MESSAGES: ReadonlySet<MessageName> = new Set(['Span', 'Metric', 'LogRecord'])
/** A metric's data points: the first is read, the others only counted. */
const POINT_MESSAGES: ReadonlySet<MessageName> = new Set([
  'NumberDataPoint',
  'HistogramDataPoint',
  'ExponentialHistogramDataPoint',
  'SummaryDataPoint',
])
/** Fields no sample shows, skipped unread. */
const UNREAD_FIELDS: ReadonlySet<string> = new Set([
  'events',
  'links',
  'exemplars',
  'bucket_counts',
  'explicit_bounds',
  'positive',
  'negative',
  'quantile_values',
  'metadata',
  'trace_state',
  'schema_url',
  'flags',
  'scope',
  'dropped_attributes_count',
  'dropped_events_count',
  'dropped_links_count',
])

type Decoded = { [key: string]: unknown }

/** Proto name → OTLP JSON key, computed once per name (a regex per field read costs more than the read). */
const JSON_KEYS = new Map<string, string>()
function keyOf(protoName: string): string {
  let key = JSON_KEYS.get(protoName)
  if (key === undefined) {
    key = jsonName(protoName)
    JSON_KEYS.set(protoName, key)
  }
  return key
}

interface Budget {
  items: number
  truncated: boolean
}

const HEX_BYTES = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'))
function hex(bytes: Uint8Array): string {
  let out = ''
  for (let i = 0; i < bytes.length; i++) out += HEX_BYTES[bytes[i]!]
  return out
}

/** A 64-bit integer as a number when exact, else its decimal string. */
const exact = (value: bigint | string): number | string => {
  const n = Number(value)
  return Number.isSafeInteger(n) ? n : String(value)
}

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

/** One scalar as OTLP JSON would carry it; undefined (left unread) when its wire type is another. */
function readScalar(reader: BinaryReader, kind: ScalarKind, name: string, wireType: WireType): unknown {
  if (wireType !== WIRE_OF[kind]) return undefined
  switch (kind) {
    case 'string':
      return reader.string()
    case 'bytes':
      return reader.bytes()
    case 'trace_id':
    case 'span_id':
      return hex(reader.bytes())
    case 'varint':
      return name === 'bool_value' ? reader.bool() : exact(reader.int64())
    case 'sint':
      return exact(reader.sint64())
    case 'fixed64':
      // as_int is an sfixed64; the times and counts are fixed64.
      return String(name === 'as_int' ? reader.sfixed64() : reader.fixed64())
    case 'double':
      return reader.double()
    case 'fixed32':
      return reader.fixed32()
  }
}

function decode(bytes: Uint8Array, name: MessageName, budget: Budget, depth: number): Decoded {
  const spec = OTLP_MESSAGES[name]
  const reader = new BinaryReader(bytes)
  const out: Decoded = {}
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag()
    const field = spec[fieldNo]
    if (!field || UNREAD_FIELDS.has(field.name) || depth > MAX_NESTING) {
      reader.skip(wireType, fieldNo)
      continue
    }
    const key = keyOf(field.name)
    if (field.kind === 'message') {
      if (wireType !== WireType.LengthDelimited) {
        reader.skip(wireType, fieldNo)
        continue
      }
      const message = field.message!
      const seen = out[key] as unknown[] | undefined
      let value: Decoded | null = null
      if (ITEM_MESSAGES.has(message)) {
        if (budget.items <= 0) {
          budget.truncated = true
          reader.skip(wireType, fieldNo)
          continue
        }
        budget.items -= 1
        value = decode(reader.bytes(), message, budget, depth + 1)
      } else if (POINT_MESSAGES.has(message) && seen !== undefined) {
        reader.skip(wireType, fieldNo)
      } else {
        value = decode(reader.bytes(), message, budget, depth + 1)
      }
      if (!field.repeated) out[key] = value
      else if (seen) seen.push(value)
      else out[key] = [value]
      continue
    }
    const value = field.repeated ? undefined : readScalar(reader, field.kind, field.name, wireType)
    if (value === undefined) reader.skip(wireType, fieldNo)
    else out[key] = value
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// One summariser for both shapes.

const isObject = (v: unknown): v is Decoded => typeof v === 'object' && v !== null && !Array.isArray(v)

/** A field by its OTLP JSON key or its proto name; null is absent. */
function get(o: unknown, protoName: string): unknown {
  if (!isObject(o)) return undefined
  return o[keyOf(protoName)] ?? o[protoName] ?? undefined
}

function list(o: unknown, protoName: string): unknown[] {
  const v = get(o, protoName)
  return Array.isArray(v) ? v : []
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

function numberOf(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN
  return Number.isFinite(n) ? n : null
}

/** Nanoseconds since the epoch as a bigint; null when absent, zero or malformed. */
function nanos(v: unknown): bigint | null {
  if (typeof v === 'number' && Number.isInteger(v) && v > 0) return BigInt(v)
  if (typeof v === 'string' && /^\d+$/.test(v) && !/^0+$/.test(v)) return BigInt(v)
  return null
}

function isoOf(v: unknown): string | null {
  const ns = nanos(v)
  if (ns === null) return null
  const date = new Date(Number(ns / 1_000_000n))
  return Number.isNaN(date.getTime()) ? null : date.toISOString()
}

/** An AnyValue as one short value: scalars as they are, lists and maps as compact JSON-like text. */
function anyValueText(v: unknown, budget: number, depth = 0): AttributeValue {
  if (!isObject(v) || depth > 4) return ''
  const text = get(v, 'string_value')
  if (typeof text === 'string') return cut(text, budget)
  const flag = get(v, 'bool_value')
  if (typeof flag === 'boolean') return flag
  const int = get(v, 'int_value')
  if (int !== undefined) return typeof int === 'number' ? int : exactText(int)
  const double = get(v, 'double_value')
  if (double !== undefined) return numberOf(double) ?? String(double)
  const array = get(v, 'array_value')
  if (array !== undefined) {
    const items = list(array, 'values').slice(0, 10)
    return cut(
      `[${items.map((item) => JSON.stringify(anyValueText(item, budget, depth + 1))).join(',')}]`,
      budget,
    )
  }
  const map = get(v, 'kvlist_value')
  if (map !== undefined) {
    const entries = list(map, 'values').slice(0, 10)
    const text = entries.map(
      (kv) =>
        `${JSON.stringify(String(get(kv, 'key') ?? ''))}:${JSON.stringify(anyValueText(get(kv, 'value'), budget, depth + 1))}`,
    )
    return cut(`{${text.join(',')}}`, budget)
  }
  const bytes = get(v, 'bytes_value')
  if (bytes instanceof Uint8Array) return `(${bytes.length} bytes)`
  if (typeof bytes === 'string') return `(${Math.floor((bytes.replace(/=+$/, '').length * 3) / 4)} bytes)`
  return ''
}

function exactText(v: unknown): number | string {
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return exact(v)
  return String(v)
}

function attributesOf(kvs: unknown[]): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {}
  let n = 0
  for (const kv of kvs) {
    if (n >= SAMPLE_LIMITS.attributes) break
    const key = get(kv, 'key')
    if (typeof key !== 'string' || key === '') continue
    out[cut(key, SAMPLE_LIMITS.key)] = anyValueText(get(kv, 'value'), SAMPLE_LIMITS.value)
    n += 1
  }
  return out
}

function serviceOf(resource: unknown): string | null {
  for (const kv of list(resource, 'attributes')) {
    if (get(kv, 'key') !== 'service.name') continue
    const name = anyValueText(get(kv, 'value'), SAMPLE_LIMITS.text)
    return typeof name === 'string' ? name : String(name)
  }
  return null
}

const SPAN_KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const
const STATUS_CODES = ['unset', 'ok', 'error'] as const
const METRIC_TYPES = ['gauge', 'sum', 'histogram', 'exponential_histogram', 'summary'] as const
const SEVERITIES = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'] as const

const idOf = (v: unknown) => (typeof v === 'string' ? v.toLowerCase() : '')

function spanSample(span: unknown, service: string | null): SpanSample {
  const start = nanos(get(span, 'start_time_unix_nano'))
  const end = nanos(get(span, 'end_time_unix_nano'))
  return {
    service,
    name: cut(String(get(span, 'name') ?? ''), SAMPLE_LIMITS.text),
    kind: SPAN_KINDS[numberOf(get(span, 'kind')) ?? 0] ?? 'unspecified',
    trace_id: idOf(get(span, 'trace_id')),
    span_id: idOf(get(span, 'span_id')),
    start_time: isoOf(get(span, 'start_time_unix_nano')),
    duration_ms:
      start !== null && end !== null && end >= start ? Number((end - start) / 1_000n) / 1_000 : null,
    status: STATUS_CODES[numberOf(get(get(span, 'status'), 'code')) ?? 0] ?? 'unset',
    attributes: attributesOf(list(span, 'attributes')),
  }
}

function metricSample(metric: unknown, service: string | null): MetricSample {
  const type = METRIC_TYPES.find((t) => isObject(get(metric, t)))
  const points = type ? list(get(metric, type), 'data_points') : []
  const first = points[0]
  const number = type === 'gauge' || type === 'sum'
  return {
    service,
    name: cut(String(get(metric, 'name') ?? ''), SAMPLE_LIMITS.text),
    unit: cut(String(get(metric, 'unit') ?? ''), SAMPLE_LIMITS.key),
    type: type ?? 'empty',
    points: points.length,
    value: number
      ? (numberOf(get(first, 'as_double')) ?? numberOf(get(first, 'as_int')))
      : numberOf(get(first, 'sum')),
    count: number ? null : numberOf(get(first, 'count')),
    attributes: attributesOf(list(first, 'attributes')),
  }
}

function logSample(record: unknown, service: string | null): LogSample {
  const text = get(record, 'severity_text')
  const number = numberOf(get(record, 'severity_number')) ?? 0
  const body = anyValueText(get(record, 'body'), SAMPLE_LIMITS.text)
  const traceId = idOf(get(record, 'trace_id'))
  return {
    service,
    time: isoOf(get(record, 'time_unix_nano')) ?? isoOf(get(record, 'observed_time_unix_nano')),
    severity:
      typeof text === 'string' && text !== ''
        ? cut(text, SAMPLE_LIMITS.key)
        : number >= 1 && number <= 24
          ? SEVERITIES[Math.floor((number - 1) / 4)]!
          : 'UNSPECIFIED',
    body: typeof body === 'string' ? body : String(body),
    trace_id: traceId === '' ? null : traceId,
    attributes: attributesOf(list(record, 'attributes')),
  }
}

/** resource_X → scope_X → items, with each item's service; at most SAMPLE_LIMITS.items. */
function collect<T>(
  request: unknown,
  path: readonly [string, string, string],
  sample: (item: unknown, service: string | null) => T,
): { items: T[]; truncated: boolean } {
  const items: T[] = []
  for (const resource of list(request, path[0])) {
    const service = serviceOf(get(resource, 'resource'))
    for (const scope of list(resource, path[1])) {
      for (const item of list(scope, path[2])) {
        if (items.length >= SAMPLE_LIMITS.items) return { items, truncated: true }
        items.push(sample(item, service))
      }
    }
  }
  return { items, truncated: false }
}

/** Drops items from the end until the sample's JSON is within SAMPLE_LIMITS.bytes. */
function withinBytes<T>(items: T[]): { items: T[]; truncated: boolean } {
  const sizes = items.map((item) => JSON.stringify(item).length + 1)
  let total = sizes.reduce((a, b) => a + b, 64)
  let kept = items.length
  while (kept > 0 && total > SAMPLE_LIMITS.bytes) total -= sizes[--kept]!
  return { items: items.slice(0, kept), truncated: kept < items.length }
}

function summarize(signal: OtlpSignal, request: unknown, truncatedBefore: boolean): ExportSample {
  const take = <T>(
    path: readonly [string, string, string],
    sample: (item: unknown, service: string | null) => T,
  ) => {
    const collected = collect(request, path, sample)
    const bounded = withinBytes(collected.items)
    return { items: bounded.items, truncated: truncatedBefore || collected.truncated || bounded.truncated }
  }
  if (signal === 'traces') {
    const { items, truncated } = take(['resource_spans', 'scope_spans', 'spans'], spanSample)
    return { signal, spans: items, truncated }
  }
  if (signal === 'metrics') {
    const { items, truncated } = take(['resource_metrics', 'scope_metrics', 'metrics'], metricSample)
    return { signal, metrics: items, truncated }
  }
  const { items, truncated } = take(['resource_logs', 'scope_logs', 'log_records'], logSample)
  return { signal, records: items, truncated }
}

/**
 * The sample of an OTLP JSON export, from the object the validator parsed. The sample is what the
 * workspace sees, not what it is billed or refused for: should it fail, the export goes on without
 * one (null) rather than being refused.
 */
export function sampleOfJson(signal: OtlpSignal, parsed: unknown): ExportSample | null {
  try {
    return summarize(signal, parsed, false)
  } catch {
    return null
  }
}

/** The sample of a protobuf export (already validated by countProtobufItems); null as above. */
export function sampleOfProtobuf(
  signal: OtlpSignal,
  bytes: Uint8Array,
  message: MessageName,
): ExportSample | null {
  try {
    const budget: Budget = { items: SAMPLE_LIMITS.items, truncated: false }
    return summarize(signal, decode(bytes, message, budget, 0), budget.truncated)
  } catch {
    return null
  }
}
