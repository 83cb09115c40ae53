/**
 * The OTLP messages the receiver validates, as one table read by both decoders (protobuf wire
 * format: otlp-protobuf.ts; the OTLP JSON mapping: otlp-json.ts), so the two accept the same
 * shape. Field numbers and names are those of opentelemetry-proto (common, resource, trace,
 * metrics, logs and the collector services, v1). Fields not listed are skipped as unknown fields,
 * as every protobuf decoder does, so a newer emitter's additions pass through untouched.
 *
 * `counts` marks the repeated field whose elements are the signal's items: spans, metric data
 * points, log records (what an export is counted in, and what partial success rejects).
 */

export type ScalarKind =
  /** int32, int64, uint32, uint64, enum, bool (varint on the wire). */
  | 'varint'
  | 'sint' // sint32 / sint64 (zigzag varint)
  | 'fixed64' // fixed64, sfixed64
  | 'double'
  | 'fixed32'
  | 'string'
  | 'bytes'
  /** A trace id: 16 bytes (hex in JSON), or empty. */
  | 'trace_id'
  /** A span id: 8 bytes (hex in JSON), or empty. */
  | 'span_id'

export interface FieldSpec {
  /** The proto field name (snake_case); JSON uses its lowerCamelCase form and accepts both. */
  name: string
  kind: ScalarKind | 'message'
  /** For kind 'message': the message's name in OTLP_MESSAGES. */
  message?: MessageName
  repeated?: boolean
  /** Packed repeated scalars (bucket counts, explicit bounds). */
  packed?: boolean
  /** The elements of this field are the signal's items. */
  counts?: boolean
}

const msg = (name: string, message: MessageName, repeated = false, counts = false): FieldSpec => ({
  name,
  kind: 'message',
  message,
  ...(repeated ? { repeated } : {}),
  ...(counts ? { counts } : {}),
})
const scalar = (name: string, kind: ScalarKind, repeated = false): FieldSpec => ({
  name,
  kind,
  ...(repeated ? { repeated, packed: kind !== 'string' && kind !== 'bytes' } : {}),
})
const attributes = (name = 'attributes') => msg(name, 'KeyValue', true)

export type MessageName =
  | 'ExportTraceServiceRequest'
  | 'ExportMetricsServiceRequest'
  | 'ExportLogsServiceRequest'
  | 'AnyValue'
  | 'ArrayValue'
  | 'KeyValueList'
  | 'KeyValue'
  | 'InstrumentationScope'
  | 'Resource'
  | 'ResourceSpans'
  | 'ScopeSpans'
  | 'Span'
  | 'SpanEvent'
  | 'SpanLink'
  | 'SpanStatus'
  | 'ResourceMetrics'
  | 'ScopeMetrics'
  | 'Metric'
  | 'Gauge'
  | 'Sum'
  | 'Histogram'
  | 'ExponentialHistogram'
  | 'Summary'
  | 'NumberDataPoint'
  | 'HistogramDataPoint'
  | 'ExponentialHistogramDataPoint'
  | 'Buckets'
  | 'SummaryDataPoint'
  | 'ValueAtQuantile'
  | 'Exemplar'
  | 'ResourceLogs'
  | 'ScopeLogs'
  | 'LogRecord'

export type MessageSpec = Readonly<Record<number, FieldSpec>>

export const OTLP_MESSAGES: Readonly<Record<MessageName, MessageSpec>> = {
  ExportTraceServiceRequest: { 1: msg('resource_spans', 'ResourceSpans', true) },
  ExportMetricsServiceRequest: { 1: msg('resource_metrics', 'ResourceMetrics', true) },
  ExportLogsServiceRequest: { 1: msg('resource_logs', 'ResourceLogs', true) },

  AnyValue: {
    1: scalar('string_value', 'string'),
    2: scalar('bool_value', 'varint'),
    3: scalar('int_value', 'varint'),
    4: scalar('double_value', 'double'),
    5: msg('array_value', 'ArrayValue'),
    6: msg('kvlist_value', 'KeyValueList'),
    7: scalar('bytes_value', 'bytes'),
  },
  ArrayValue: { 1: msg('values', 'AnyValue', true) },
  KeyValueList: { 1: msg('values', 'KeyValue', true) },
  KeyValue: { 1: scalar('key', 'string'), 2: msg('value', 'AnyValue') },
  InstrumentationScope: {
    1: scalar('name', 'string'),
    2: scalar('version', 'string'),
    3: attributes(),
    4: scalar('dropped_attributes_count', 'varint'),
  },
  Resource: { 1: attributes(), 2: scalar('dropped_attributes_count', 'varint') },

  ResourceSpans: {
    1: msg('resource', 'Resource'),
    2: msg('scope_spans', 'ScopeSpans', true),
    3: scalar('schema_url', 'string'),
  },
  ScopeSpans: {
    1: msg('scope', 'InstrumentationScope'),
    2: msg('spans', 'Span', true, true),
    3: scalar('schema_url', 'string'),
  },
  Span: {
    1: scalar('trace_id', 'trace_id'),
    2: scalar('span_id', 'span_id'),
    3: scalar('trace_state', 'string'),
    4: scalar('parent_span_id', 'span_id'),
    16: scalar('flags', 'fixed32'),
    5: scalar('name', 'string'),
    6: scalar('kind', 'varint'),
    7: scalar('start_time_unix_nano', 'fixed64'),
    8: scalar('end_time_unix_nano', 'fixed64'),
    9: attributes(),
    10: scalar('dropped_attributes_count', 'varint'),
    11: msg('events', 'SpanEvent', true),
    12: scalar('dropped_events_count', 'varint'),
    13: msg('links', 'SpanLink', true),
    14: scalar('dropped_links_count', 'varint'),
    15: msg('status', 'SpanStatus'),
  },
  SpanEvent: {
    1: scalar('time_unix_nano', 'fixed64'),
    2: scalar('name', 'string'),
    3: attributes(),
    4: scalar('dropped_attributes_count', 'varint'),
  },
  SpanLink: {
    1: scalar('trace_id', 'trace_id'),
    2: scalar('span_id', 'span_id'),
    3: scalar('trace_state', 'string'),
    4: attributes(),
    5: scalar('dropped_attributes_count', 'varint'),
    6: scalar('flags', 'fixed32'),
  },
  SpanStatus: { 2: scalar('message', 'string'), 3: scalar('code', 'varint') },

  ResourceMetrics: {
    1: msg('resource', 'Resource'),
    2: msg('scope_metrics', 'ScopeMetrics', true),
    3: scalar('schema_url', 'string'),
  },
  ScopeMetrics: {
    1: msg('scope', 'InstrumentationScope'),
    2: msg('metrics', 'Metric', true),
    3: scalar('schema_url', 'string'),
  },
  Metric: {
    1: scalar('name', 'string'),
    2: scalar('description', 'string'),
    3: scalar('unit', 'string'),
    5: msg('gauge', 'Gauge'),
    7: msg('sum', 'Sum'),
    9: msg('histogram', 'Histogram'),
    10: msg('exponential_histogram', 'ExponentialHistogram'),
    11: msg('summary', 'Summary'),
    12: attributes('metadata'),
  },
  Gauge: { 1: msg('data_points', 'NumberDataPoint', true, true) },
  Sum: {
    1: msg('data_points', 'NumberDataPoint', true, true),
    2: scalar('aggregation_temporality', 'varint'),
    3: scalar('is_monotonic', 'varint'),
  },
  Histogram: {
    1: msg('data_points', 'HistogramDataPoint', true, true),
    2: scalar('aggregation_temporality', 'varint'),
  },
  ExponentialHistogram: {
    1: msg('data_points', 'ExponentialHistogramDataPoint', true, true),
    2: scalar('aggregation_temporality', 'varint'),
  },
  Summary: { 1: msg('data_points', 'SummaryDataPoint', true, true) },
  NumberDataPoint: {
    7: attributes(),
    2: scalar('start_time_unix_nano', 'fixed64'),
    3: scalar('time_unix_nano', 'fixed64'),
    4: scalar('as_double', 'double'),
    6: scalar('as_int', 'fixed64'),
    5: msg('exemplars', 'Exemplar', true),
    8: scalar('flags', 'varint'),
  },
  HistogramDataPoint: {
    9: attributes(),
    2: scalar('start_time_unix_nano', 'fixed64'),
    3: scalar('time_unix_nano', 'fixed64'),
    4: scalar('count', 'fixed64'),
    5: scalar('sum', 'double'),
    6: scalar('bucket_counts', 'fixed64', true),
    7: scalar('explicit_bounds', 'double', true),
    8: msg('exemplars', 'Exemplar', true),
    10: scalar('flags', 'varint'),
    11: scalar('min', 'double'),
    12: scalar('max', 'double'),
  },
  ExponentialHistogramDataPoint: {
    1: attributes(),
    2: scalar('start_time_unix_nano', 'fixed64'),
    3: scalar('time_unix_nano', 'fixed64'),
    4: scalar('count', 'fixed64'),
    5: scalar('sum', 'double'),
    6: scalar('scale', 'sint'),
    7: scalar('zero_count', 'fixed64'),
    8: msg('positive', 'Buckets'),
    9: msg('negative', 'Buckets'),
    10: scalar('flags', 'varint'),
    11: msg('exemplars', 'Exemplar', true),
    12: scalar('min', 'double'),
    13: scalar('max', 'double'),
    14: scalar('zero_threshold', 'double'),
  },
  Buckets: { 1: scalar('offset', 'sint'), 2: scalar('bucket_counts', 'varint', true) },
  SummaryDataPoint: {
    7: attributes(),
    2: scalar('start_time_unix_nano', 'fixed64'),
    3: scalar('time_unix_nano', 'fixed64'),
    4: scalar('count', 'fixed64'),
    5: scalar('sum', 'double'),
    6: msg('quantile_values', 'ValueAtQuantile', true),
    8: scalar('flags', 'varint'),
  },
  ValueAtQuantile: { 1: scalar('quantile', 'double'), 2: scalar('value', 'double') },
  Exemplar: {
    7: attributes('filtered_attributes'),
    2: scalar('time_unix_nano', 'fixed64'),
    3: scalar('as_double', 'double'),
    6: scalar('as_int', 'fixed64'),
    4: scalar('span_id', 'span_id'),
    5: scalar('trace_id', 'trace_id'),
  },

  ResourceLogs: {
    1: msg('resource', 'Resource'),
    2: msg('scope_logs', 'ScopeLogs', true),
    3: scalar('schema_url', 'string'),
  },
  ScopeLogs: {
    1: msg('scope', 'InstrumentationScope'),
    2: msg('log_records', 'LogRecord', true, true),
    3: scalar('schema_url', 'string'),
  },
  LogRecord: {
    1: scalar('time_unix_nano', 'fixed64'),
    11: scalar('observed_time_unix_nano', 'fixed64'),
    2: scalar('severity_number', 'varint'),
    3: scalar('severity_text', 'string'),
    5: msg('body', 'AnyValue'),
    6: attributes(),
    7: scalar('dropped_attributes_count', 'varint'),
    8: scalar('flags', 'fixed32'),
    9: scalar('trace_id', 'trace_id'),
    10: scalar('span_id', 'span_id'),
    12: scalar('event_name', 'string'),
  },
}

export type OtlpSignal = 'traces' | 'metrics' | 'logs'

export const SIGNALS: readonly OtlpSignal[] = ['traces', 'metrics', 'logs']

/** The request message of each signal's Export call, and what its items are called. */
export const SIGNAL_REQUEST: Readonly<
  Record<OtlpSignal, { message: MessageName; items: string; rejectedField: string; grpcService: string }>
> = {
  traces: {
    message: 'ExportTraceServiceRequest',
    items: 'spans',
    rejectedField: 'rejected_spans',
    grpcService: 'opentelemetry.proto.collector.trace.v1.TraceService',
  },
  metrics: {
    message: 'ExportMetricsServiceRequest',
    items: 'data points',
    rejectedField: 'rejected_data_points',
    grpcService: 'opentelemetry.proto.collector.metrics.v1.MetricsService',
  },
  logs: {
    message: 'ExportLogsServiceRequest',
    items: 'log records',
    rejectedField: 'rejected_log_records',
    grpcService: 'opentelemetry.proto.collector.logs.v1.LogsService',
  },
}

/** Deepest nesting of messages accepted (AnyValue lists and maps nest); deeper is refused. */
export const MAX_NESTING = 64

/** snake_case → lowerCamelCase, the OTLP JSON key of a proto field. */
export function jsonName(protoName: string): string {
  return protoName.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())
}
