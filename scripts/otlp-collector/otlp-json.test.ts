/**
 * The local collector's OTLP decoder: what the official OpenTelemetry JS serializers put in
 * protobuf and in OTLP JSON for the same spans, metrics and logs comes out as the same OTLP JSON
 * line (two independent encoders, one output), with the values the SDK recorded; and the JSON
 * spellings a receiver must take are written the one canonical way.
 */

import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire'
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
import { AggregationType, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { describe, expect, it } from 'vitest'
import { canonicalOtlpJson, type Json, OtlpBodyError, protobufToOtlpJson } from './otlp-json.ts'

const resource = resourceFromAttributes({
  'service.name': 'checkout',
  'service.version': '2.0.1',
  'host.cores': 8,
  ratio: 0.25,
  enabled: false,
  tags: ['a', 'b'],
})

async function spans() {
  const memory = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(memory)] })
  const tracer = provider.getTracer('shop', '1.0.0')
  const parent = tracer.startSpan('POST /orders', {
    kind: SpanKind.SERVER,
    attributes: { 'http.method': 'POST', 'http.status_code': 201, zero: 0, empty: '', 'big.int': 2 ** 40 },
  })
  const child = tracer.startSpan(
    'SELECT orders',
    {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system': 'postgresql', note: 'héllo ✓' },
      links: [{ context: parent.spanContext(), attributes: { why: 'retry' } }],
    },
    trace.setSpan(context.active(), parent),
  )
  child.addEvent('cache.miss', { key: 'k1', attempt: 2 })
  child.setStatus({ code: SpanStatusCode.ERROR, message: 'timeout' })
  child.end()
  parent.setStatus({ code: SpanStatusCode.OK })
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
  const provider = new MeterProvider({
    resource,
    readers: [reader],
    views: [{ instrumentName: 'payload.size', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } }],
  })
  const meter = provider.getMeter('shop')
  meter.createCounter('orders').add(3, { region: 'eu' })
  meter.createUpDownCounter('inflight').add(-2)
  meter.createHistogram('latency', { unit: 'ms' }).record(12.5, { route: '/orders' })
  meter.createGauge('queue.depth').record(0)
  const sizes = meter.createHistogram('payload.size')
  for (const v of [0.001, 0.5, 3, 700]) sizes.record(v)
  return (await reader.collect()).resourceMetrics
}

async function logs() {
  const memory = new InMemoryLogRecordExporter()
  const provider = new LoggerProvider({
    resource,
    processors: [new SimpleLogRecordProcessor({ exporter: memory })],
  })
  const logger = provider.getLogger('shop')
  logger.emit({ body: 'order 42 placed', severityNumber: SeverityNumber.INFO, severityText: 'INFO' })
  logger.emit({
    body: { order: 42, items: ['x', 'y'], paid: true },
    severityNumber: SeverityNumber.ERROR,
    attributes: { blob: new Uint8Array([0, 255, 7]), 'messaging.system': 'kafka' },
  })
  await provider.forceFlush()
  return memory.getFinishedLogRecords()
}

const parse = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as Json

describe('protobuf and OTLP JSON from the official serializers give the same line', () => {
  it('traces', async () => {
    const finished = await spans()
    const fromProto = protobufToOtlpJson(
      ProtobufTraceSerializer.serializeRequest(finished)!,
      'ExportTraceServiceRequest',
    )
    const fromJson = canonicalOtlpJson(
      parse(JsonTraceSerializer.serializeRequest(finished)!),
      'ExportTraceServiceRequest',
    )
    expect(fromProto).toEqual(fromJson)

    const [child, parent] = finished
    const resourceSpans = fromProto.resourceSpans as never as {
      resource: { attributes: { key: string; value: Record<string, Json> }[] }
      scopeSpans: { scope: Json; spans: Record<string, Json>[] }[]
    }[]
    const attrs = Object.fromEntries(resourceSpans[0]!.resource.attributes.map((a) => [a.key, a.value]))
    expect(attrs['service.name']).toEqual({ stringValue: 'checkout' })
    expect(attrs['host.cores']).toEqual({ intValue: '8' })
    expect(attrs.ratio).toEqual({ doubleValue: 0.25 })
    // A oneof member is written even at its default value.
    expect(attrs.enabled).toEqual({ boolValue: false })
    expect(attrs.tags).toEqual({ arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] } })
    expect(resourceSpans[0]!.scopeSpans[0]!.scope).toEqual({ name: 'shop', version: '1.0.0' })
    const [first, second] = resourceSpans[0]!.scopeSpans[0]!.spans
    expect(first).toMatchObject({
      traceId: child!.spanContext().traceId,
      spanId: child!.spanContext().spanId,
      parentSpanId: parent!.spanContext().spanId,
      name: 'SELECT orders',
      kind: 3,
      status: { message: 'timeout', code: 2 },
      links: [{ traceId: parent!.spanContext().traceId, spanId: parent!.spanContext().spanId }],
      events: [{ name: 'cache.miss' }],
    })
    const [seconds, nanos] = child!.startTime
    expect(first!.startTimeUnixNano).toBe((BigInt(seconds) * 1_000_000_000n + BigInt(nanos)).toString())
    expect(second).toMatchObject({ name: 'POST /orders', kind: 2, status: { code: 1 } })
    expect(second!.parentSpanId).toBeUndefined()
    expect(second!.attributes).toEqual([
      { key: 'http.method', value: { stringValue: 'POST' } },
      { key: 'http.status_code', value: { intValue: '201' } },
      { key: 'zero', value: { intValue: '0' } },
      { key: 'empty', value: { stringValue: '' } },
      { key: 'big.int', value: { intValue: String(2 ** 40) } },
    ])
  })

  it('metrics, every kind of data point', async () => {
    const collected = await metrics()
    const fromProto = protobufToOtlpJson(
      ProtobufMetricsSerializer.serializeRequest(collected)!,
      'ExportMetricsServiceRequest',
    )
    const fromJson = canonicalOtlpJson(
      parse(JsonMetricsSerializer.serializeRequest(collected)!),
      'ExportMetricsServiceRequest',
    )
    expect(fromProto).toEqual(fromJson)
    const list = (
      fromProto.resourceMetrics as never as { scopeMetrics: { metrics: Record<string, Json>[] }[] }[]
    )[0]!.scopeMetrics[0]!.metrics
    const byName = Object.fromEntries(list.map((m) => [m.name, m]))
    expect(byName.orders).toMatchObject({
      sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: [{ asDouble: 3 }] },
    })
    expect(byName.inflight).toMatchObject({ sum: { dataPoints: [{ asDouble: -2 }] } })
    expect((byName.inflight as { sum: Record<string, Json> }).sum.isMonotonic).toBeUndefined()
    expect(byName.latency).toMatchObject({
      unit: 'ms',
      histogram: { dataPoints: [{ count: '1', sum: 12.5, min: 12.5 }] },
    })
    // asDouble 0 is a oneof member: kept.
    expect(byName['queue.depth']).toMatchObject({ gauge: { dataPoints: [{ asDouble: 0 }] } })
    const exp = (byName['payload.size'] as { exponentialHistogram: { dataPoints: Record<string, Json>[] } })
      .exponentialHistogram.dataPoints[0]!
    expect(exp.count).toBe('4')
    expect(typeof exp.scale).toBe('number')
    expect((exp.positive as { offset: number }).offset).toBeLessThan(0) // sint32, negative
  })

  it('logs, string and structured bodies, bytes attributes', async () => {
    const records = await logs()
    const fromProto = protobufToOtlpJson(
      ProtobufLogsSerializer.serializeRequest(records)!,
      'ExportLogsServiceRequest',
    )
    const fromJson = canonicalOtlpJson(
      parse(JsonLogsSerializer.serializeRequest(records)!),
      'ExportLogsServiceRequest',
    )
    expect(fromProto).toEqual(fromJson)
    const [info, error] = (
      fromProto.resourceLogs as never as { scopeLogs: { logRecords: Record<string, Json>[] }[] }[]
    )[0]!.scopeLogs[0]!.logRecords
    expect(info).toMatchObject({
      severityNumber: 9,
      severityText: 'INFO',
      body: { stringValue: 'order 42 placed' },
    })
    expect(error).toMatchObject({
      severityNumber: 17,
      body: {
        kvlistValue: {
          values: [
            { key: 'order', value: { intValue: '42' } },
            { key: 'items', value: { arrayValue: { values: [{ stringValue: 'x' }, { stringValue: 'y' }] } } },
            { key: 'paid', value: { boolValue: true } },
          ],
        },
      },
      attributes: [
        { key: 'blob', value: { bytesValue: Buffer.from([0, 255, 7]).toString('base64') } },
        { key: 'messaging.system', value: { stringValue: 'kafka' } },
      ],
    })
  })
})

describe('OTLP JSON written the canonical way', () => {
  it('takes snake_case keys, integers as numbers or strings, nulls; drops unknown fields and defaults', () => {
    const line = canonicalOtlpJson(
      {
        resource_spans: [
          {
            resource: { attributes: [{ key: 'n', value: { int_value: 5 } }], dropped_attributes_count: 0 },
            scope_spans: [
              {
                scope: null,
                spans: [
                  {
                    trace_id: '5B8EFFF798038103D269B633813FC60C',
                    span_id: 'EEE19B7EC3C1B174',
                    parent_span_id: '',
                    name: '0',
                    kind: '2',
                    start_time_unix_nano: 1544712660000000000,
                    end_time_unix_nano: '1544712661000000000',
                    attributes: [],
                    vendor_extension: { anything: true },
                  },
                ],
              },
            ],
          },
        ],
      },
      'ExportTraceServiceRequest',
    )
    expect(line).toEqual({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'n', value: { intValue: '5' } }] },
          scopeSpans: [
            {
              spans: [
                {
                  traceId: '5b8efff798038103d269b633813fc60c',
                  spanId: 'eee19b7ec3c1b174',
                  name: '0',
                  kind: 2,
                  startTimeUnixNano: '1544712660000000000',
                  endTimeUnixNano: '1544712661000000000',
                },
              ],
            },
          ],
        },
      ],
    })
  })

  it('refuses what is not the Export request', () => {
    expect(() => canonicalOtlpJson([], 'ExportLogsServiceRequest')).toThrow(OtlpBodyError)
    expect(() => canonicalOtlpJson({ resourceLogs: {} }, 'ExportLogsServiceRequest')).toThrow(/not an array/)
    expect(() =>
      canonicalOtlpJson(
        { resourceLogs: [{ scopeLogs: [{ logRecords: [{ severityNumber: 'x' }] }] }] },
        'ExportLogsServiceRequest',
      ),
    ).toThrow(/resourceLogs\[0\]\.scopeLogs\[0\]\.logRecords\[0\]\.severityNumber/)
  })
})

describe('protobuf bodies', () => {
  it('an empty body is an empty export; unknown fields and packed or unpacked repeats are read', () => {
    expect(protobufToOtlpJson(new Uint8Array(0), 'ExportTraceServiceRequest')).toEqual({})
    // Buckets { offset = -3 (sint32); bucket_counts = [1, 2] unpacked, then [3] packed; field 9 unknown }
    const buckets = new BinaryWriter()
      .tag(1, WireType.Varint)
      .sint32(-3)
      .tag(2, WireType.Varint)
      .uint64(1)
      .tag(2, WireType.Varint)
      .uint64(2)
      .tag(9, WireType.LengthDelimited)
      .string('future field')
    buckets.tag(2, WireType.LengthDelimited).fork().uint64(3).join()
    const point = new BinaryWriter().tag(8, WireType.LengthDelimited).bytes(buckets.finish()).finish()
    const metric = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .string('m')
      .tag(10, WireType.LengthDelimited)
      .bytes(new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(point).finish())
      .finish()
    const scope = new BinaryWriter().tag(2, WireType.LengthDelimited).bytes(metric).finish()
    const request = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .bytes(new BinaryWriter().tag(2, WireType.LengthDelimited).bytes(scope).finish())
      .finish()
    expect(protobufToOtlpJson(request, 'ExportMetricsServiceRequest')).toEqual({
      resourceMetrics: [
        {
          scopeMetrics: [
            {
              metrics: [
                {
                  name: 'm',
                  exponentialHistogram: {
                    dataPoints: [{ positive: { offset: -3, bucketCounts: ['1', '2', '3'] } }],
                  },
                },
              ],
            },
          ],
        },
      ],
    })
  })

  it('refuses a truncated body', () => {
    const whole = new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(new Uint8Array(40)).finish()
    expect(() => protobufToOtlpJson(whole.subarray(0, 20), 'ExportLogsServiceRequest')).toThrow(OtlpBodyError)
  })
})
