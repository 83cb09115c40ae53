/**
 * What the sample kept of each accepted OTLP export costs the receiver, beside what validating the
 * export already costs: the product's own functions (functions/telemetry/src/otlp/) on the exports
 * the ingestion benchmark sends (bench/telemetry.ts: spans serialized by the OpenTelemetry JS
 * exporters' serializers), in protobuf and OTLP JSON, at 1, 100 and 1,000 spans. In Node: the same
 * V8 as workerd, without the isolate and RPC around it (bench/telemetry.ts measures those).
 *
 *   npx tsx bench/telemetry-sample.ts          # ROUNDS=5 ROUND_MS=300
 */
import { SpanKind } from '@opentelemetry/api'
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { sampleOfJson, sampleOfProtobuf } from '../functions/telemetry/src/otlp/export-sample.ts'
import { countJsonItems } from '../functions/telemetry/src/otlp/otlp-json.ts'
import { countProtobufItems } from '../functions/telemetry/src/otlp/otlp-protobuf.ts'
import { median } from './bench-support.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 5)
const ROUND_MS = Number(process.env.ROUND_MS ?? 300)

async function spans(count: number) {
  const memory = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'bench-emitter', 'service.version': '1.0.0' }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  })
  const tracer = provider.getTracer('bench', '1.0.0')
  for (let i = 0; i < count; i++) {
    const span = tracer.startSpan(`GET /api/items/${i % 10}`, {
      kind: SpanKind.SERVER,
      attributes: {
        'http.method': 'GET',
        'http.status_code': 200,
        'http.route': '/api/items/:id',
        'db.system': 'postgresql',
        'db.operation': 'SELECT',
        'net.peer.name': 'db.internal',
      },
    })
    span.addEvent('cache.miss', { key: `item:${i}` })
    span.end()
  }
  await provider.forceFlush()
  return memory.getFinishedSpans()
}

/** Microseconds per call of `fn`: the median of ROUNDS rounds of about ROUND_MS each. */
function timed(fn: () => unknown): number {
  const perRound: number[] = []
  for (let r = 0; r <= ROUNDS; r++) {
    const start = process.hrtime.bigint()
    let calls = 0
    while (Number(process.hrtime.bigint() - start) < ROUND_MS * 1e6) {
      for (let i = 0; i < 10; i++) fn()
      calls += 10
    }
    // The first round warms the code up and is not counted.
    if (r > 0) perRound.push(Number(process.hrtime.bigint() - start) / 1000 / calls)
  }
  return Math.round(median(perRound) * 10) / 10
}

const MESSAGE = 'ExportTraceServiceRequest'
const rows: Record<string, unknown>[] = []
for (const count of [1, 100, 1000]) {
  const finished = await spans(count)
  const proto = ProtobufTraceSerializer.serializeRequest(finished)!
  const jsonText = new TextDecoder().decode(JsonTraceSerializer.serializeRequest(finished)!)
  const parsed = JSON.parse(jsonText) as unknown
  const sample = sampleOfProtobuf('traces', proto, MESSAGE)
  rows.push({
    spans: count,
    'protobuf bytes': proto.length,
    'validate protobuf µs': timed(() => countProtobufItems(proto, MESSAGE)),
    'sample protobuf µs': timed(() => sampleOfProtobuf('traces', proto, MESSAGE)),
    'JSON bytes': jsonText.length,
    'parse + validate JSON µs': timed(() => countJsonItems(JSON.parse(jsonText), MESSAGE)),
    'sample JSON µs': timed(() => sampleOfJson('traces', parsed)),
    'sample bytes (stored)': JSON.stringify(sample).length,
  })
}
console.table(rows)
