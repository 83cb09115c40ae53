/**
 * The sample kept of an accepted export, inside workerd: the official serializers' protobuf and
 * OTLP JSON for the same spans, metrics and logs give the same sample, with what the SDK recorded
 * (service, names, durations, attributes, values, bodies); and the sample stays within its bounds
 * whatever the export carries.
 */
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { SeverityNumber } from '@opentelemetry/api-logs'
import {
  JsonLogsSerializer,
  JsonMetricsSerializer,
  JsonTraceSerializer,
  ProtobufLogsSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from '@opentelemetry/otlp-transformer'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { describe, expect, it } from 'vitest'
import { SAMPLE_LIMITS, sampleOfJson, sampleOfProtobuf } from './export-sample'
import { countProtobufItems } from './otlp-protobuf'
import { type OtlpSignal, SIGNAL_REQUEST } from './otlp-schema'

const resource = resourceFromAttributes({ 'service.name': 'checkout', 'service.version': '2.0.1' })

async function spans(count: number, attributes: Record<string, string | number> = {}) {
  const memory = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(memory)] })
  const tracer = provider.getTracer('shop')
  const parent = tracer.startSpan('POST /orders', {
    kind: SpanKind.SERVER,
    attributes: { 'http.method': 'POST', 'http.status_code': 201, ...attributes },
  })
  for (let i = 1; i < count; i++) {
    const child = tracer.startSpan(
      `SELECT ${i}`,
      { kind: SpanKind.CLIENT },
      trace.setSpan(context.active(), parent),
    )
    child.setStatus({ code: SpanStatusCode.ERROR, message: 'timeout' })
    child.end()
  }
  parent.end()
  await provider.forceFlush()
  return memory.getFinishedSpans()
}

class CollectingReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

async function metrics() {
  const reader = new CollectingReader()
  const meter = new MeterProvider({ resource, readers: [reader] }).getMeter('shop')
  const orders = meter.createCounter('orders')
  for (const region of ['eu', 'us', 'ap']) orders.add(3, { region })
  meter.createHistogram('latency', { unit: 'ms' }).record(12.5)
  meter.createUpDownCounter('inflight').add(-2)
  return (await reader.collect()).resourceMetrics
}

async function logs() {
  const memory = new InMemoryLogRecordExporter()
  const provider = new LoggerProvider({
    resource,
    processors: [new SimpleLogRecordProcessor({ exporter: memory })],
  })
  const logger = provider.getLogger('shop')
  logger.emit({ body: 'order 42 placed', severityNumber: SeverityNumber.INFO, attributes: { order: 42 } })
  logger.emit({ body: { order: 42, paid: true }, severityNumber: SeverityNumber.ERROR2 })
  await provider.forceFlush()
  return memory.getFinishedLogRecords()
}

/** Both encodings of one export: the sample of each, and that they agree. */
function samplesOf(signal: OtlpSignal, proto: Uint8Array, json: Uint8Array) {
  const message = SIGNAL_REQUEST[signal].message
  countProtobufItems(proto, message) // the receiver validates before it samples
  const fromProto = sampleOfProtobuf(signal, proto, message)
  const fromJson = sampleOfJson(signal, JSON.parse(new TextDecoder().decode(json)))
  expect(fromProto).toEqual(fromJson)
  return fromProto!
}

const durationMs = (span: ReadableSpan) => {
  const [s, ns] = span.duration
  return Math.floor((s * 1e9 + ns) / 1e3) / 1e3
}

describe('the sample of an export', () => {
  it('traces: service, span names, kinds, durations, status and attributes, the same from protobuf and JSON', async () => {
    const finished = await spans(3)
    const sample = samplesOf(
      'traces',
      ProtobufTraceSerializer.serializeRequest(finished)!,
      JsonTraceSerializer.serializeRequest(finished)!,
    )
    const parent = finished.find((s) => s.name === 'POST /orders')!
    expect(sample).toEqual({
      signal: 'traces',
      truncated: false,
      spans: finished.map((s) => ({
        service: 'checkout',
        name: s.name,
        kind: s === parent ? 'server' : 'client',
        trace_id: s.spanContext().traceId,
        span_id: s.spanContext().spanId,
        start_time: new Date(s.startTime[0] * 1000 + Math.floor(s.startTime[1] / 1e6)).toISOString(),
        duration_ms: durationMs(s),
        status: s === parent ? 'unset' : 'error',
        attributes: s === parent ? { 'http.method': 'POST', 'http.status_code': 201 } : {},
      })),
    })
  })

  it('metrics: name, unit, type, points and the first point, the same from protobuf and JSON', async () => {
    const collected = await metrics()
    const sample = samplesOf(
      'metrics',
      ProtobufMetricsSerializer.serializeRequest(collected)!,
      JsonMetricsSerializer.serializeRequest(collected)!,
    )
    expect(sample).toEqual({
      signal: 'metrics',
      truncated: false,
      metrics: [
        {
          service: 'checkout',
          name: 'orders',
          unit: '',
          type: 'sum',
          points: 3,
          value: 3,
          count: null,
          attributes: { region: 'eu' },
        },
        {
          service: 'checkout',
          name: 'latency',
          unit: 'ms',
          type: 'histogram',
          points: 1,
          value: 12.5,
          count: 1,
          attributes: {},
        },
        {
          service: 'checkout',
          name: 'inflight',
          unit: '',
          type: 'sum',
          points: 1,
          value: -2,
          count: null,
          attributes: {},
        },
      ],
    })
  })

  it('logs: time, severity, bodies (structured ones as short JSON), attributes, the same from protobuf and JSON', async () => {
    const records = await logs()
    const sample = samplesOf(
      'logs',
      ProtobufLogsSerializer.serializeRequest(records)!,
      JsonLogsSerializer.serializeRequest(records)!,
    )
    expect(sample).toMatchObject({
      signal: 'logs',
      truncated: false,
      records: [
        {
          service: 'checkout',
          severity: 'INFO',
          body: 'order 42 placed',
          trace_id: null,
          attributes: { order: 42 },
        },
        { service: 'checkout', severity: 'ERROR', body: '{"order":42,"paid":true}', attributes: {} },
      ],
    })
    if (sample.signal !== 'logs') throw new Error('logs expected')
    expect(sample.records[0]!.time).toMatch(/^\d{4}-\d{2}-\d{2}T/)
  })

  it('keeps at most 6 attributes per item, keys and values cut short', async () => {
    const long = 'x'.repeat(500)
    const finished = await spans(1, { [`f${long}`]: 1, a: long, b: long, c: long, d: long, e: long })
    const sample = samplesOf(
      'traces',
      ProtobufTraceSerializer.serializeRequest(finished)!,
      JsonTraceSerializer.serializeRequest(finished)!,
    )
    if (sample.signal !== 'traces') throw new Error('traces expected')
    const attributes = Object.entries(sample.spans[0]!.attributes)
    expect(attributes).toHaveLength(SAMPLE_LIMITS.attributes)
    expect(String(sample.spans[0]!.attributes.a)).toBe(`${'x'.repeat(SAMPLE_LIMITS.value - 1)}…`)
    expect(attributes.map(([key]) => key.length)).toEqual([11, 16, SAMPLE_LIMITS.key, 1, 1, 1])
    expect(sample.truncated).toBe(false)
  })

  it('keeps the first 10 items, fewer when they would pass 4 KiB', async () => {
    const many = await spans(25)
    const sample = samplesOf(
      'traces',
      ProtobufTraceSerializer.serializeRequest(many)!,
      JsonTraceSerializer.serializeRequest(many)!,
    )
    if (sample.signal !== 'traces') throw new Error('traces expected')
    expect(sample.truncated).toBe(true)
    expect(sample.spans.map((s) => s.name)).toEqual(many.slice(0, SAMPLE_LIMITS.items).map((s) => s.name))

    const long = 'y'.repeat(1000)
    const record = {
      body: { stringValue: long },
      attributes: 'abcdef'.split('').map((key) => ({ key, value: { stringValue: long } })),
    }
    const heavy = sampleOfJson('logs', {
      resourceLogs: [{ scopeLogs: [{ logRecords: Array(10).fill(record) }] }],
    })
    if (heavy?.signal !== 'logs') throw new Error('logs expected')
    expect(heavy.truncated).toBe(true)
    expect(heavy.records.length).toBeGreaterThan(1)
    expect(heavy.records.length).toBeLessThan(10)
    expect(heavy.records[0]!.body).toHaveLength(SAMPLE_LIMITS.text)
    expect(JSON.stringify(heavy).length).toBeLessThanOrEqual(SAMPLE_LIMITS.bytes)
  })

  it('reads the snake_case JSON a receiver also takes, and exports with nothing in them', () => {
    const snake = {
      resource_logs: [
        {
          resource: { attributes: [{ key: 'service.name', value: { string_value: 'cron' } }] },
          scope_logs: [
            {
              log_records: [
                {
                  time_unix_nano: 1_700_000_000_000_000_000,
                  severity_text: 'warning',
                  body: { int_value: '7' },
                  trace_id: '5B8EFFF798038103D269B633813FC60C',
                },
              ],
            },
          ],
        },
      ],
    }
    expect(sampleOfJson('logs', snake)).toEqual({
      signal: 'logs',
      truncated: false,
      records: [
        {
          service: 'cron',
          time: '2023-11-14T22:13:20.000Z',
          severity: 'warning',
          body: '7',
          trace_id: '5b8efff798038103d269b633813fc60c',
          attributes: {},
        },
      ],
    })
    expect(sampleOfJson('metrics', {})).toEqual({ signal: 'metrics', metrics: [], truncated: false })
    expect(sampleOfProtobuf('traces', new Uint8Array(0), 'ExportTraceServiceRequest')).toEqual({
      signal: 'traces',
      spans: [],
      truncated: false,
    })
  })
})
