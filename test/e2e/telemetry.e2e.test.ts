/**
 * OTLP ingestion end to end, through the gateway of a stack started with `npm start`, with the
 * official OpenTelemetry JS exporters (http/protobuf and http/json, gzip on and off) for traces,
 * metrics and logs, and the collector fake (test/fakes/otlp-collector.ts) as the collector the
 * receiver forwards to.
 *
 * Exporters send through a recording proxy, so each test knows the exact bytes the exporter put on
 * the wire and can compare them with what reached the collector.
 */

import { createServer, type IncomingMessage, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { type Attributes, SpanKind } from '@opentelemetry/api'
import { SeverityNumber } from '@opentelemetry/api-logs'
import { ExportResultCode } from '@opentelemetry/core'
import { OTLPLogExporter as LogsHttpExporter } from '@opentelemetry/exporter-logs-otlp-http'
import { OTLPLogExporter as LogsProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto'
import { OTLPMetricExporter as MetricsHttpExporter } from '@opentelemetry/exporter-metrics-otlp-http'
import { OTLPMetricExporter as MetricsProtoExporter } from '@opentelemetry/exporter-metrics-otlp-proto'
import { OTLPTraceExporter as TracesHttpExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as TracesProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { beforeAll, describe, expect, it } from 'vitest'
import { getPlan, PLAN_CATALOG } from '../../shared/plans/plan-catalog.ts'
import type { CollectorRule, RecordedExport } from '../fakes/otlp-collector.ts'
import { zeroBomb } from '../support/zero-bomb.ts'
import { createWorkspace, waitForLedger } from './chat-fixtures.ts'
import { fileStack } from './file-stack.ts'

const stack = await fileStack({ login: true })
const collector = stack.fakes['otlp-collector'] as { controlUrl: string; url: string }
const url = (p: string) => `${stack.baseUrl}${p}`

type Signal = 'traces' | 'metrics' | 'logs'
type Flavour = 'proto' | 'json'

interface Ingestion {
  request_id: string
  signal: Signal
  encoding: string
  content_encoding: string
  items: number
  rejected_items: number
  received_bytes: number
  decoded_bytes: number
  outcome: string
  status: number
  error_code: string | null
  collector_status: number | null
}

const tag = (name: string) => `otlp-${name}-${crypto.randomUUID().slice(0, 8)}`

async function serviceToken(
  clientId: string,
  clientSecret: string,
  audience = 'internal-service',
): Promise<string> {
  const res = await fetch(url('/auth/service-token'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: clientId, client_secret: clientSecret, audience }),
  })
  expect(res.status, await res.clone().text()).toBe(200)
  return ((await res.json()) as { access_token: string }).access_token
}

async function collectorRequests(match: string): Promise<RecordedExport[]> {
  return (await (
    await fetch(`${collector.controlUrl}/requests?match=${encodeURIComponent(match)}`)
  ).json()) as RecordedExport[]
}

async function script(rule: CollectorRule): Promise<void> {
  const res = await fetch(`${collector.controlUrl}/script`, { method: 'POST', body: JSON.stringify(rule) })
  expect(res.status).toBe(204)
}

async function ingestions(
  token: string,
  query = '',
): Promise<{ data: Ingestion[]; totals: { signal: Signal; items: number; requests: number }[] }> {
  const res = await fetch(url(`/platform/v1/telemetry/ingestions?limit=200${query}`), {
    headers: { authorization: `Bearer ${token}` },
  })
  expect(res.status, await res.clone().text()).toBe(200)
  return (await res.json()) as never
}

async function ingestionsTagged(token: string, match: string): Promise<Ingestion[]> {
  return (await ingestions(token)).data.filter((r) => r.request_id.startsWith(match))
}

/** What an exporter put on the wire, and what the gateway answered. */
interface Exchange {
  path: string
  headers: Record<string, string>
  body: Buffer
  status: number
}

/**
 * A pass-through HTTP proxy in front of the gateway that records each request's exact bytes: the
 * exporters' own transport (Node http, keep-alive agent, gzip) is what is tested.
 */
async function recordingProxy(): Promise<{ url: string; exchanges: Exchange[]; close(): Promise<void> }> {
  const exchanges: Exchange[] = []
  const server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks)
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(req.headers)) {
      if (!['host', 'connection', 'content-length', 'transfer-encoding'].includes(k) && v !== undefined) {
        headers[k] = Array.isArray(v) ? v.join(', ') : v
      }
    }
    const answer = await fetch(url(req.url ?? '/'), { method: req.method ?? 'POST', headers, body })
    const payload = Buffer.from(await answer.arrayBuffer())
    exchanges.push({ path: req.url ?? '/', headers, body, status: answer.status })
    const out: Record<string, string> = {}
    answer.headers.forEach((value, name) => {
      if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name))
        out[name] = value
    })
    res.writeHead(answer.status, out).end(payload)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

function exportWith<T>(
  exporter: { export(items: T, cb: (r: { code: number; error?: Error }) => void): void },
  items: T,
) {
  return new Promise<{ code: number; error?: Error }>((resolve) => exporter.export(items, resolve))
}

const RESOURCE = (extra: Attributes = {}) =>
  resourceFromAttributes({
    'service.name': 'e2e-emitter',
    'service.version': '1.2.3',
    'deployment.environment': 'test',
    ...extra,
  })

async function makeSpans(count: number, resource = RESOURCE()) {
  const memory = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(memory)] })
  const tracer = provider.getTracer('e2e', '0.1.0')
  for (let i = 0; i < count; i++) {
    const span = tracer.startSpan(`GET /items/${i}`, {
      kind: SpanKind.SERVER,
      attributes: {
        'http.method': 'GET',
        'http.status_code': 200,
        'db.system': 'postgresql',
        note: 'héllo ✓',
      },
    })
    span.addEvent('cache.miss', { key: `k${i}` })
    span.end()
  }
  await provider.forceFlush()
  return memory.getFinishedSpans()
}

/** Metrics collected on demand (the reader the tests drive instead of a timer). */
class CollectingReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

async function makeMetrics() {
  const reader = new CollectingReader()
  const provider = new MeterProvider({ resource: RESOURCE(), readers: [reader] })
  const meter = provider.getMeter('e2e')
  const counter = meter.createCounter('requests')
  const histogram = meter.createHistogram('latency', { unit: 'ms' })
  const gauge = meter.createGauge('queue.depth')
  for (const route of ['/a', '/b', '/c']) counter.add(2, { route })
  for (const route of ['/a', '/b']) histogram.record(12.5, { route })
  gauge.record(4)
  const { resourceMetrics } = await reader.collect()
  const points = resourceMetrics.scopeMetrics
    .flatMap((s) => s.metrics)
    .reduce((n, m) => n + m.dataPoints.length, 0)
  return { resourceMetrics, points }
}

async function makeLogs(count: number) {
  const memory = new InMemoryLogRecordExporter()
  const provider = new LoggerProvider({
    resource: RESOURCE(),
    processors: [new SimpleLogRecordProcessor({ exporter: memory })],
  })
  const logger = provider.getLogger('e2e')
  for (let i = 0; i < count; i++) {
    logger.emit({
      body: `line ${i}`,
      severityNumber: SeverityNumber.INFO,
      attributes: { 'messaging.system': 'kafka', i },
    })
  }
  await provider.forceFlush()
  return memory.getFinishedLogRecords()
}

function exporterOptions(base: string, signal: Signal, token: string, requestTag: string, gzip: boolean) {
  return {
    url: `${base}/otlp/v1/${signal}`,
    headers: { authorization: `Bearer ${token}`, 'x-request-id': requestTag },
    compression: gzip ? CompressionAlgorithm.GZIP : CompressionAlgorithm.NONE,
    timeoutMillis: 10_000,
  }
}

let tokenA: string
let tokenB: string

beforeAll(async () => {
  tokenA = await serviceToken(stack.tenantA.serviceAccountId, stack.tenantA.serviceAccountSecret)
  // Tenant B's own service account, made through the platform API with B's owner key.
  const created = await fetch(url('/platform/v1/service-accounts'), {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.tenantB.liveKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `otlp-e2e-${crypto.randomUUID().slice(0, 6)}` }),
  })
  expect(created.status, await created.clone().text()).toBe(201)
  const account = (await created.json()) as { id: string; secret: string }
  tokenB = await serviceToken(account.id, account.secret)
})

describe(`OTLP export with the official exporters (${stack.kind})`, () => {
  const cases: [Signal, Flavour, boolean][] = []
  for (const signal of ['traces', 'metrics', 'logs'] as const) {
    for (const flavour of ['proto', 'json'] as const)
      for (const gzip of [false, true]) cases.push([signal, flavour, gzip])
  }

  it.each(cases)(
    '%s over http/%s (gzip %s): accepted, forwarded byte for byte, counted',
    async (signal, flavour, gzip) => {
      const proxy = await recordingProxy()
      const requestTag = tag(`${signal}-${flavour}-${gzip ? 'gz' : 'id'}`)
      try {
        const options = exporterOptions(proxy.url, signal, tokenA, requestTag, gzip)
        let result: { code: number; error?: Error }
        let expected: number
        if (signal === 'traces') {
          const spans = await makeSpans(7)
          expected = spans.length
          const exporter =
            flavour === 'proto' ? new TracesProtoExporter(options) : new TracesHttpExporter(options)
          result = await exportWith(exporter, spans)
          await exporter.shutdown()
        } else if (signal === 'metrics') {
          const { resourceMetrics, points } = await makeMetrics()
          expected = points
          const exporter =
            flavour === 'proto' ? new MetricsProtoExporter(options) : new MetricsHttpExporter(options)
          result = await exportWith(exporter, resourceMetrics)
          await exporter.shutdown()
        } else {
          const logs = await makeLogs(5)
          expected = logs.length
          const exporter =
            flavour === 'proto' ? new LogsProtoExporter(options) : new LogsHttpExporter(options)
          result = await exportWith(exporter, logs)
          await exporter.shutdown()
        }
        expect(result.error?.message ?? null).toBeNull()
        expect(result.code).toBe(ExportResultCode.SUCCESS)

        expect(proxy.exchanges).toHaveLength(1)
        const sent = proxy.exchanges[0]!
        expect(sent.status).toBe(200)
        expect(sent.headers['content-encoding'] ?? 'identity').toBe(gzip ? 'gzip' : 'identity')

        const received = await collectorRequests(requestTag)
        expect(received).toHaveLength(1)
        const forwarded = received[0]!
        expect(forwarded.path).toBe(`/v1/${signal}`)
        // Byte for byte: what the exporter sent (compressed as it was) is what the collector got.
        expect(Buffer.from(forwarded.body, 'base64').equals(sent.body)).toBe(true)
        expect(forwarded.headers['content-type']).toBe(
          flavour === 'proto' ? 'application/x-protobuf' : 'application/json',
        )
        expect(forwarded.headers['content-encoding']).toBe(gzip ? 'gzip' : undefined)
        expect(forwarded.headers['x-scope-orgid']).toBe(stack.tenantA.id)
        expect(forwarded.headers['x-svc-tenant-id']).toBe(stack.tenantA.id)
        expect(forwarded.headers['x-svc-deployment-environment']).toBe('e2e')
        expect(forwarded.headers['x-svc-cloud-region']).toBe('local-e2e')
        // The collector's own credential, never the client's token.
        expect(forwarded.headers.authorization).toMatch(/^Bearer collector-/)
        expect(forwarded.headers.authorization).not.toContain(tokenA)

        const [result_] = await ingestionsTagged(tokenA, requestTag)
        expect(result_).toMatchObject({
          signal,
          encoding: flavour === 'proto' ? 'protobuf' : 'json',
          content_encoding: gzip ? 'gzip' : 'identity',
          items: expected,
          rejected_items: 0,
          received_bytes: sent.body.length,
          outcome: 'forwarded',
          status: 200,
          collector_status: 200,
        })
        expect(result_!.decoded_bytes).toBe(
          gzip ? (await import('node:zlib')).gunzipSync(sent.body).length : sent.body.length,
        )
      } finally {
        await proxy.close()
      }
    },
  )

  it('retries through a collector 503 with the exporter: the second attempt is acknowledged', async () => {
    const requestTag = tag('retry')
    await script({ fault: { kind: 'status', status: 503, retryAfter: '1' }, match: requestTag })
    const exporter = new TracesProtoExporter(
      exporterOptions(stack.baseUrl, 'traces', tokenA, requestTag, false),
    )
    const result = await exportWith(exporter, await makeSpans(2))
    await exporter.shutdown()
    expect(result.code).toBe(ExportResultCode.SUCCESS)
    const received = await collectorRequests(requestTag)
    expect(received.map((r) => r.status)).toEqual([503, 200])
    expect(received[0]!.body).toBe(received[1]!.body)
    const outcomes = (await ingestionsTagged(tokenA, requestTag)).map((r) => [
      r.outcome,
      r.status,
      r.collector_status,
    ])
    expect(outcomes).toEqual([
      ['forwarded', 200, 200],
      ['collector_failed', 503, 503],
    ])
  })
})

/** A hand-made OTLP request: the exporters' own serializer is not needed to send bytes. */
async function protobufTraces(spans = 3): Promise<Buffer> {
  const proxy = await recordingProxy()
  const requestTag = tag('capture')
  try {
    const exporter = new TracesProtoExporter(exporterOptions(proxy.url, 'traces', tokenA, requestTag, false))
    await exportWith(exporter, await makeSpans(spans))
    await exporter.shutdown()
    return proxy.exchanges[0]!.body
  } finally {
    await proxy.close()
  }
}

async function post(
  signal: Signal,
  body: BodyInit | Uint8Array,
  headers: Record<string, string>,
  token = tokenA,
) {
  return fetch(url(`/otlp/v1/${signal}`), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, ...headers },
    body: body as BodyInit,
    ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit)
}

/** google.rpc.Status from a protobuf body: field 1 code, field 2 message. */
function decodeStatus(bytes: Uint8Array): { code: number; message: string } {
  let code = 0
  let message = ''
  let i = 0
  while (i < bytes.length) {
    const key = bytes[i++]!
    if (key === 0x08) {
      let shift = 0
      code = 0
      while (true) {
        const b = bytes[i++]!
        code |= (b & 0x7f) << shift
        shift += 7
        if (!(b & 0x80)) break
      }
    } else if (key === 0x12) {
      let len = 0
      let shift = 0
      while (true) {
        const b = bytes[i++]!
        len |= (b & 0x7f) << shift
        shift += 7
        if (!(b & 0x80)) break
      }
      message = new TextDecoder().decode(bytes.subarray(i, i + len))
      i += len
    } else break
  }
  return { code, message }
}

/** A protobuf OTLP refusal: its google.rpc.Status and the product's error code header. */
async function refusalOf(
  res: Response,
  mediaType = 'application/x-protobuf',
): Promise<{ code: number; message: string; errorCode: string | null }> {
  // OTLP/HTTP: the response uses the request's own Content-Type.
  expect(res.headers.get('content-type')).toBe(mediaType)
  const status = decodeStatus(new Uint8Array(await res.arrayBuffer()))
  return { ...status, errorCode: res.headers.get('x-svc-error-code') }
}

/** A gRPC request body: one uncompressed length-prefixed message. */
function grpcFrame(message: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(5 + message.length)
  new DataView(out.buffer).setUint32(1, message.length)
  out.set(message, 5)
  return out
}

describe(`OTLP bad input is refused and nothing is forwarded (${stack.kind})`, () => {
  it('415 for a content type the receiver does not take, naming the accepted ones', async () => {
    const requestTag = tag('type')
    const res = await post('traces', 'hello', { 'content-type': 'text/plain', 'x-request-id': requestTag })
    expect(res.status).toBe(415)
    const body = (await res.json()) as { error: { message: string } }
    for (const type of [
      'application/x-protobuf',
      'application/json',
      'application/grpc',
      'application/x-google-protobuf',
    ]) {
      expect(body.error.message).toContain(type)
    }
    expect(await collectorRequests(requestTag)).toEqual([])
  })

  it('400 with google.rpc.Status in protobuf for a corrupt protobuf body, naming where', async () => {
    const good = await protobufTraces(2)
    const requestTag = tag('corrupt')
    const cut = good.subarray(0, good.length - 5)
    const res = await post('traces', cut, {
      'content-type': 'application/x-protobuf',
      'x-request-id': requestTag,
    })
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toBe('application/x-protobuf')
    const status = decodeStatus(new Uint8Array(await res.arrayBuffer()))
    expect(status.code).toBe(3)
    expect(status.message).toMatch(/ExportTraceServiceRequest.*resource_spans\[0\]/)
    expect(await collectorRequests(requestTag)).toEqual([])
    const [recorded] = await ingestionsTagged(tokenA, requestTag)
    expect(recorded).toMatchObject({
      outcome: 'refused',
      status: 400,
      error_code: 'invalid_otlp_payload',
      collector_status: null,
    })
  })

  it('400 in JSON for malformed OTLP JSON and for a bad trace id', async () => {
    for (const body of [
      '{"resourceSpans": [',
      '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"0102030405060708"}]}]}]}',
    ]) {
      const requestTag = tag('json')
      const res = await post('traces', body, {
        'content-type': 'application/json',
        'x-request-id': requestTag,
      })
      expect(res.status).toBe(400)
      const status = (await res.json()) as { code: number; message: string; error: { code: string } }
      expect(status.code).toBe(3)
      expect(status.error.code).toBe('invalid_otlp_payload')
      expect(await collectorRequests(requestTag)).toEqual([])
    }
  })

  it('400 for truncated gzip', async () => {
    const requestTag = tag('gzip-cut')
    const gz = gzipSync(await protobufTraces(2))
    const res = await post('traces', gz.subarray(0, gz.length - 12), {
      'content-type': 'application/x-protobuf',
      'content-encoding': 'gzip',
      'x-request-id': requestTag,
    })
    expect(res.status).toBe(400)
    expect(decodeStatus(new Uint8Array(await res.arrayBuffer())).message).toMatch(/gzip/)
    expect(await collectorRequests(requestTag)).toEqual([])
  })

  it('413 for a gzip bomb (7 GiB of zeros in 7.3 MB), counted after decompression', async () => {
    // Generated as it is sent (test/support/zero-bomb.ts); otlp-bomb.e2e.test.ts measures the
    // stack's memory and another tenant's latency meanwhile, on a stack with no collector.
    const bomb = zeroBomb(7 * 2 ** 30, 'gzip')
    const requestTag = tag('bomb')
    const res = await sendRaw(
      '/otlp/v1/traces',
      Array.from(bomb.pieces(), (piece) => Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength)),
      {
        'content-type': 'application/x-protobuf',
        'content-encoding': 'gzip',
        'content-length': String(bomb.length),
        'x-request-id': requestTag,
      },
    )
    expect(res.status).toBe(413)
    expect(decodeStatus(Buffer.from(res.body, 'latin1')).message).toMatch(
      /decompressed request body is larger than 8 MiB/,
    )
    expect(await collectorRequests(requestTag)).toEqual([])
    const [recorded] = await ingestionsTagged(tokenA, requestTag)
    expect(recorded).toMatchObject({
      outcome: 'refused',
      status: 413,
      received_bytes: bomb.length,
      decoded_bytes: 0,
    })
  }, 60_000)

  it('413 for an oversize body, declared or streamed without a length', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 0x0a)
    const declaredTag = tag('declared')
    // Refused on the declared length alone: the client sends only a first part and waits.
    const declared = await sendRaw(
      '/otlp/v1/traces',
      [chunk.subarray(0, 64 * 1024)],
      {
        'content-type': 'application/x-protobuf',
        'content-length': String(9 * chunk.length),
        'x-request-id': declaredTag,
      },
      false,
    )
    // Refused by the gateway (declared length), in the request's encoding like every OTLP refusal.
    expect(declared.status).toBe(413)
    expect(declared.headers['content-type']).toBe('application/x-protobuf')
    expect(decodeStatus(Buffer.from(declared.body, 'latin1'))).toMatchObject({
      code: 8,
      message: expect.stringMatching(/accepts at most 8 MiB/),
    })
    const streamedTag = tag('streamed')
    const streamed = await sendRaw('/otlp/v1/traces', Array(9).fill(chunk), {
      'content-type': 'application/x-protobuf',
      'x-request-id': streamedTag,
    })
    expect(streamed.status).toBe(413)
    expect(streamed.body).toMatch(/larger than 8 MiB/)
    expect(await collectorRequests(declaredTag)).toEqual([])
    expect(await collectorRequests(streamedTag)).toEqual([])
  })
})

/**
 * A POST with node:http, which (unlike fetch) reads an answer that arrives while the body is still
 * being written: the receiver answers 413 without reading an oversize body to its end. Without a
 * content-length the body goes chunked.
 */
function sendRaw(
  target: string,
  chunks: Buffer[],
  headers: Record<string, string>,
  end = true,
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url(target),
      { method: 'POST', agent: false, headers: { authorization: `Bearer ${tokenA}`, ...headers } },
      (res) => {
        const parts: Buffer[] = []
        res.on('data', (d: Buffer) => parts.push(d))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(parts).toString('latin1'),
            headers: res.headers,
          }),
        )
      },
    )
    req.on('error', (err: NodeJS.ErrnoException) => {
      // The server may close before the whole body is written; its answer has then arrived.
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err)
    })
    ;(async () => {
      for (const chunk of chunks) {
        if (req.destroyed) return
        if (!req.write(chunk)) await new Promise((r) => req.once('drain', r))
      }
      if (end) req.end()
    })().catch(() => {})
  })
}

describe(`OTLP gRPC framing (${stack.kind})`, () => {
  const framed = (message: Uint8Array, flag = 0) => {
    const out = Buffer.alloc(5 + message.length)
    out[0] = flag
    out.writeUInt32BE(message.length, 1)
    Buffer.from(message).copy(out, 5)
    return out
  }

  it('accepts one length-prefixed message, forwards the message bytes, answers grpc-status 0 in headers', async () => {
    const message = await protobufTraces(4)
    const requestTag = tag('grpc')
    const res = await post('traces', framed(message), {
      'content-type': 'application/grpc',
      'x-request-id': requestTag,
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('grpc-status')).toBe('0')
    expect(res.headers.get('content-type')).toBe('application/grpc')
    expect(Buffer.from(await res.arrayBuffer())).toEqual(Buffer.from([0, 0, 0, 0, 0]))
    const [forwarded] = await collectorRequests(requestTag)
    expect(Buffer.from(forwarded!.body, 'base64').equals(message)).toBe(true)
    expect(forwarded!.headers['content-type']).toBe('application/x-protobuf')
    const [recorded] = await ingestionsTagged(tokenA, requestTag)
    expect(recorded).toMatchObject({ encoding: 'grpc', items: 4, outcome: 'forwarded' })
  })

  it('a gzip-compressed message (flag 1, grpc-encoding gzip) is forwarded still compressed', async () => {
    const compressed = gzipSync(await protobufTraces(1))
    const requestTag = tag('grpc-gz')
    const res = await post('traces', framed(compressed, 1), {
      'content-type': 'application/grpc+proto',
      'grpc-encoding': 'gzip',
      'x-request-id': requestTag,
    })
    expect(res.headers.get('grpc-status')).toBe('0')
    const [forwarded] = await collectorRequests(requestTag)
    expect(Buffer.from(forwarded!.body, 'base64').equals(compressed)).toBe(true)
    expect(forwarded!.headers['content-encoding']).toBe('gzip')
  })

  it('bad framing: grpc-status 3 (INVALID_ARGUMENT) with grpc-message, nothing forwarded', async () => {
    const message = await protobufTraces(1)
    const requestTag = tag('grpc-bad')
    const bad = framed(message).subarray(0, message.length)
    const res = await post('traces', bad, { 'content-type': 'application/grpc', 'x-request-id': requestTag })
    expect(res.status).toBe(200)
    expect(res.headers.get('grpc-status')).toBe('3')
    expect(decodeURIComponent(res.headers.get('grpc-message') ?? '')).toMatch(/declares \d+ bytes but only/)
    expect(await collectorRequests(requestTag)).toEqual([])
  })
})

describe(`OTLP collector answers are mapped per the OTLP spec (${stack.kind})`, () => {
  it("passes the collector's partial_success through and records the rejected count", async () => {
    const body = await protobufTraces(5)
    const requestTag = tag('partial')
    await script({ fault: { kind: 'partial', rejected: 2, message: 'two spans too old' }, match: requestTag })
    const res = await post('traces', body, {
      'content-type': 'application/x-protobuf',
      'x-request-id': requestTag,
    })
    expect(res.status).toBe(200)
    const answer = Buffer.from(await res.arrayBuffer())
    expect(answer.toString('latin1')).toContain('two spans too old')
    const [recorded] = await ingestionsTagged(tokenA, requestTag)
    expect(recorded).toMatchObject({ items: 5, rejected_items: 2, outcome: 'partially_rejected' })

    const jsonTag = tag('partial-json')
    await script({ fault: { kind: 'partial', rejected: 1, message: 'one' }, match: jsonTag })
    const json = await post(
      'logs',
      JSON.stringify({
        resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'a' } }, {}] }] }],
      }),
      { 'content-type': 'application/json', 'x-request-id': jsonTag },
    )
    expect(await json.json()).toEqual({ partialSuccess: { rejectedLogRecords: '1', errorMessage: 'one' } })
  })

  it('429 and 503 from the collector stay retryable with Retry-After; a hang is 504; never 200', async () => {
    const body = await protobufTraces(1)
    for (const [fault, status, retryAfter] of [
      [{ kind: 'status', status: 429, retryAfter: '7' }, 429, '7'],
      [{ kind: 'status', status: 503 }, 503, '1'],
      [{ kind: 'status', status: 500, body: 'boom' }, 502, '5'],
      [{ kind: 'hang' }, 504, '1'],
    ] as const) {
      const requestTag = tag(`fault-${status}`)
      await script({ fault, match: requestTag })
      const res = await post('traces', body, {
        'content-type': 'application/x-protobuf',
        'x-request-id': requestTag,
      })
      expect(res.status).toBe(status)
      expect(res.headers.get('retry-after')).toBe(retryAfter)
      const [recorded] = await ingestionsTagged(tokenA, requestTag)
      expect(recorded).toMatchObject({ outcome: 'collector_failed', status })
    }
  })
})

describe(`OTLP tenancy (${stack.kind})`, () => {
  it('attributes an export to the authenticated tenant only: forged X-Scope-OrgID and resource attributes are neutralised', async () => {
    const proxy = await recordingProxy()
    const requestTag = tag('forged')
    try {
      const exporter = new TracesProtoExporter({
        ...exporterOptions(proxy.url, 'traces', tokenB, requestTag, false),
        headers: {
          authorization: `Bearer ${tokenB}`,
          'x-request-id': requestTag,
          'X-Scope-OrgID': stack.tenantA.id,
          'x-svc-tenant-id': stack.tenantA.id,
          'x-svc-cloud-region': 'forged',
        },
      })
      const spans = await makeSpans(3, RESOURCE({ 'svc.tenant_id': stack.tenantA.id }))
      expect((await exportWith(exporter, spans)).code).toBe(ExportResultCode.SUCCESS)
      await exporter.shutdown()
      const [forwarded] = await collectorRequests(requestTag)
      expect(forwarded!.headers['x-scope-orgid']).toBe(stack.tenantB.id)
      expect(forwarded!.headers['x-svc-tenant-id']).toBe(stack.tenantB.id)
      expect(forwarded!.headers['x-svc-cloud-region']).toBe('local-e2e')
      // The payload is untouched (the collector's config overwrites svc.tenant_id from the header).
      expect(Buffer.from(forwarded!.body, 'base64').equals(proxy.exchanges[0]!.body)).toBe(true)
    } finally {
      await proxy.close()
    }
    // Tenant B sees its export; tenant A does not.
    expect(await ingestionsTagged(tokenB, requestTag)).toHaveLength(1)
    expect(await ingestionsTagged(tokenA, requestTag)).toEqual([])
  })

  it("a tenant's results, totals and status never include another tenant's exports", async () => {
    const requestTag = tag('tenancy')
    const res = await post('traces', await protobufTraces(2), {
      'content-type': 'application/x-protobuf',
      'x-request-id': requestTag,
    })
    expect(res.status).toBe(200)
    const a = await ingestions(tokenA)
    const b = await ingestions(tokenB)
    expect(a.data.some((r) => r.request_id === requestTag)).toBe(true)
    expect(b.data.some((r) => r.request_id === requestTag)).toBe(false)
    expect(JSON.stringify(b)).not.toContain(stack.tenantA.id)
    // B's totals count only B's exports: fewer requests than A's.
    const tracesOf = (list: typeof a) => list.totals.find((t) => t.signal === 'traces')?.requests ?? 0
    expect(tracesOf(b)).toBeLessThan(tracesOf(a))
    const statusA = (await (
      await fetch(url('/platform/v1/telemetry/status'), { headers: { authorization: `Bearer ${tokenA}` } })
    ).json()) as {
      recent: { requests: number }
      collector: { reachable: boolean; endpoint: string }
    }
    const statusB = (await (
      await fetch(url('/platform/v1/telemetry/status'), { headers: { authorization: `Bearer ${tokenB}` } })
    ).json()) as {
      recent: { requests: number }
    }
    expect(statusA.collector.reachable).toBe(true)
    expect(statusA.collector.endpoint).toBe(collector.url)
    expect(statusB.recent.requests).toBeLessThan(statusA.recent.requests)
  })

  it('refuses a request naming another tenant (x-svc-tenant) and tokens of the wrong audience', async () => {
    const named = await post('traces', new Uint8Array(0), {
      'content-type': 'application/x-protobuf',
      'x-svc-tenant': stack.tenantB.id,
    })
    expect(named.status).toBe(403)
    const external = await serviceToken(
      stack.tenantA.serviceAccountId,
      stack.tenantA.serviceAccountSecret,
      'external-api',
    )
    const wrong = await post(
      'traces',
      new Uint8Array(0),
      { 'content-type': 'application/x-protobuf' },
      external,
    )
    expect(wrong.status).toBe(403)
    const none = await fetch(url('/otlp/v1/logs'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
    })
    expect(none.status).toBe(401)
  })
})

describe(`observability tokens (${stack.kind})`, () => {
  const admin = (key: string, method: string, p: string, body?: unknown) =>
    fetch(url(`/platform/v1/observability-tokens${p}`), {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  interface TokenView {
    id: string
    name: string
    suffix: string
    token?: string
    revoked_at: string | null
  }

  it('a workspace token sends telemetry with an exporter; rotation and revocation take effect; listed without its value', async () => {
    const created = await admin(stack.tenantA.liveKey, 'POST', '', { name: 'e2e collector' })
    expect(created.status).toBe(201)
    expect(created.headers.get('cache-control')).toBe('no-store')
    const token = (await created.json()) as TokenView
    expect(token.token).toMatch(/^svc_ot_[0-9A-Za-z]{43}$/)
    expect(token.suffix).toBe(token.token!.slice(-4))

    const requestTag = tag('obs-token')
    const exporter = new LogsProtoExporter(
      exporterOptions(stack.baseUrl, 'logs', token.token!, requestTag, true),
    )
    expect((await exportWith(exporter, await makeLogs(2))).code).toBe(ExportResultCode.SUCCESS)
    await exporter.shutdown()
    const [forwarded] = await collectorRequests(requestTag)
    expect(forwarded!.headers['x-scope-orgid']).toBe(stack.tenantA.id)
    const [recorded] = await ingestionsTagged(tokenA, requestTag)
    expect(recorded).toMatchObject({ items: 2, outcome: 'forwarded' })

    const listed = await admin(stack.tenantA.liveKey, 'GET', '')
    const text = await listed.text()
    expect(text).toContain(token.id)
    expect(text).not.toContain(token.token!)

    // Opens nothing but ingestion.
    for (const path of [
      '/svc/memories',
      '/platform/v1/telemetry/ingestions',
      '/platform/v1/observability-tokens',
    ]) {
      const res = await fetch(url(path), { headers: { authorization: `Bearer ${token.token}` } })
      expect(res.status, path).toBe(403)
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
        'observability_token_not_accepted',
      )
    }

    const rotated = (await (
      await admin(stack.tenantA.liveKey, 'POST', `/${token.id}/rotate`, {})
    ).json()) as TokenView
    expect(rotated.token).not.toBe(token.token)
    const send = (value: string) =>
      post('traces', new Uint8Array(0), { 'content-type': 'application/x-protobuf' }, value)
    const old = await send(token.token!)
    expect(old.status).toBe(401)
    expect(await refusalOf(old)).toMatchObject({ code: 16, errorCode: 'invalid_observability_token' })
    expect((await send(rotated.token!)).status).toBe(200)

    const revoked = await admin(stack.tenantA.liveKey, 'DELETE', `/${token.id}`)
    expect(revoked.status).toBe(200)
    expect(((await revoked.json()) as TokenView).revoked_at).not.toBeNull()
    const refused = await send(rotated.token!)
    expect(refused.status).toBe(401)
    expect(await refusalOf(refused)).toMatchObject({ code: 16, errorCode: 'revoked_observability_token' })
  })

  it('a general API key is refused on ingestion (403), and another tenant cannot see or change the tokens', async () => {
    const byKey = await post(
      'traces',
      new Uint8Array(0),
      { 'content-type': 'application/x-protobuf' },
      stack.tenantA.liveKey,
    )
    expect(byKey.status).toBe(403)
    expect(await refusalOf(byKey)).toMatchObject({ code: 7, errorCode: 'api_key_not_accepted' })

    const mine = (await (
      await admin(stack.tenantA.liveKey, 'POST', '', { name: 'a only' })
    ).json()) as TokenView
    const theirs = await admin(stack.tenantB.liveKey, 'GET', '')
    expect(await theirs.text()).not.toContain(mine.id)
    for (const [method, p] of [
      ['POST', `/${mine.id}/rotate`],
      ['DELETE', `/${mine.id}`],
    ] as const) {
      const res = await admin(stack.tenantB.liveKey, method, p, method === 'POST' ? {} : undefined)
      expect(res.status).toBe(404)
    }
    // Still A's and still working.
    expect(
      (await post('traces', new Uint8Array(0), { 'content-type': 'application/x-protobuf' }, mine.token!))
        .status,
    ).toBe(200)
    expect((await admin(stack.tenantA.liveKey, 'POST', '', { name: '' })).status).toBe(400)
  })
})

describe(`gateway refusals on /otlp/* are in the request's OTLP encoding (${stack.kind})`, () => {
  it('401 without a token: google.rpc.Status in protobuf and JSON, grpc-status in gRPC', async () => {
    const send = (headers: Record<string, string>, body: BodyInit) =>
      fetch(url('/otlp/v1/traces'), { method: 'POST', headers, body })
    const proto = await send({ 'content-type': 'application/x-protobuf' }, new Uint8Array(0))
    expect(proto.status).toBe(401)
    expect(proto.headers.get('www-authenticate')).toMatch(/^Bearer/)
    expect(await refusalOf(proto)).toMatchObject({ code: 16, errorCode: 'missing_credential' })

    const json = await send({ 'content-type': 'application/json' }, '{}')
    expect(json.status).toBe(401)
    expect(json.headers.get('content-type')).toBe('application/json')
    expect(await json.json()).toMatchObject({
      code: 16,
      message: expect.stringContaining('Authorization: Bearer'),
      details: [],
      error: { code: 'missing_credential' },
    })

    const grpc = await send({ 'content-type': 'application/grpc' }, grpcFrame(new Uint8Array(0)))
    expect(grpc.status).toBe(200)
    expect(grpc.headers.get('content-type')).toBe('application/grpc')
    expect(grpc.headers.get('grpc-status')).toBe('16')
    expect(decodeURIComponent(grpc.headers.get('grpc-message') ?? '')).toContain('Authorization: Bearer')
  })

  it('403 for a general API key and 404 for a signal that does not exist, as google.rpc.Status', async () => {
    const byKey = await post(
      'logs',
      new Uint8Array(0),
      { 'content-type': 'application/protobuf' },
      stack.tenantA.liveKey,
    )
    expect(byKey.status).toBe(403)
    expect(await refusalOf(byKey, 'application/protobuf')).toMatchObject({
      code: 7,
      errorCode: 'api_key_not_accepted',
    })
    const accepted = await post('logs', new Uint8Array(0), { 'content-type': 'application/octet-stream' })
    expect(accepted.status).toBe(200)
    expect(accepted.headers.get('content-type')).toBe('application/octet-stream')
    const unknown = await fetch(url('/otlp/v1/profiles'), {
      method: 'POST',
      headers: { authorization: `Bearer ${tokenA}`, 'content-type': 'application/x-protobuf' },
      body: new Uint8Array(0),
    })
    expect(unknown.status).toBe(404)
    expect(await refusalOf(unknown)).toMatchObject({ code: 12, errorCode: 'not_found' })
  })

  it("403 from the tenant's crypto policy in enforce mode, as google.rpc.Status; nothing forwarded", async () => {
    const ws = await createWorkspace('free')
    const admin = (method: string, p: string, body: unknown) =>
      fetch(url(p), {
        method,
        headers: { authorization: `Bearer ${ws.liveKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    const policy = await admin('PUT', '/platform/v1/crypto/policy', { preset: 'strict', mode: 'enforce' })
    expect(policy.status, await policy.clone().text()).toBe(200)
    const created = await admin('POST', '/platform/v1/observability-tokens', { name: 'policy' })
    const { token } = (await created.json()) as { token: string }
    const requestTag = tag('policy')
    const res = await post(
      'traces',
      new Uint8Array(0),
      {
        'content-type': 'application/x-protobuf',
        'x-svc-crypto-algorithms': 'x25519',
        'x-request-id': requestTag,
      },
      token,
    )
    expect(res.status).toBe(403)
    const refusal = await refusalOf(res)
    expect(refusal).toMatchObject({ code: 7, errorCode: 'crypto_policy_violation' })
    expect(refusal.message).toContain('x25519')
    expect(await collectorRequests(requestTag)).toEqual([])
  })
})

describe(`ingestion limits through the tenant's RateLimiter (${stack.kind})`, () => {
  const free = getPlan('free', PLAN_CATALOG)!

  async function observabilityToken(liveKey: string): Promise<string> {
    const created = await fetch(url('/platform/v1/observability-tokens'), {
      method: 'POST',
      headers: { authorization: `Bearer ${liveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'limits' }),
    })
    expect(created.status).toBe(201)
    return ((await created.json()) as { token: string }).token
  }

  it("exports per minute: one more than the plan's ingestRequestsPerMinute is 429 with Retry-After in every encoding, and not forwarded", async () => {
    const ws = await createWorkspace('free')
    const token = await observabilityToken(ws.liveKey)
    // Model requests have their own window: the ingestion limit is apart from requestsPerMinute.
    expect(free.ingestRequestsPerMinute).toBeGreaterThan(free.requestsPerMinute)
    const statuses: number[] = []
    let next = 0
    const worker = async () => {
      while (next < free.ingestRequestsPerMinute) {
        next += 1
        const res = await post('logs', new Uint8Array(0), { 'content-type': 'application/x-protobuf' }, token)
        await res.arrayBuffer()
        statuses.push(res.status)
      }
    }
    await Promise.all(Array.from({ length: 8 }, worker))
    expect(statuses.filter((s) => s === 200)).toHaveLength(free.ingestRequestsPerMinute)

    const requestTag = tag('over-rate')
    const proto = await post(
      'logs',
      new Uint8Array(0),
      { 'content-type': 'application/x-protobuf', 'x-request-id': requestTag },
      token,
    )
    expect(proto.status).toBe(429)
    const retryAfter = Number(proto.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(proto.headers.get('x-ratelimit-limit-requests')).toBeNull()
    const refusal = await refusalOf(proto)
    expect(refusal).toMatchObject({ code: 8, errorCode: 'rate_limited' })
    expect(refusal.message).toContain(`${free.ingestRequestsPerMinute} requests per minute`)

    const json = await post(
      'logs',
      '{}',
      { 'content-type': 'application/json', 'x-request-id': requestTag },
      token,
    )
    expect(json.status).toBe(429)
    expect(json.headers.get('retry-after')).not.toBeNull()
    expect(await json.json()).toMatchObject({
      code: 8,
      error: { code: 'rate_limited' },
      svc_upgrade: { reason: 'rate_limited', binding_limit: { limit: free.ingestRequestsPerMinute } },
    })

    const grpc = await post(
      'logs',
      grpcFrame(new Uint8Array(0)),
      { 'content-type': 'application/grpc', 'x-request-id': requestTag },
      token,
    )
    expect(grpc.status).toBe(200)
    expect(grpc.headers.get('grpc-status')).toBe('8')
    expect(grpc.headers.get('retry-after')).not.toBeNull()

    expect(await collectorRequests(requestTag)).toEqual([])
    const recorded = await ingestionsTagged(ws.liveKey, requestTag)
    expect(recorded.map((r) => [r.outcome, r.status, r.error_code])).toEqual([
      ['refused', 429, 'rate_limited'],
      ['refused', 429, 'rate_limited'],
      ['refused', 429, 'rate_limited'],
    ])
  }, 60_000)

  it('bytes: forwarded exports are in the usage ledger in bytes; a used-up monthly allowance is 429 until the month ends', async () => {
    const ws = await createWorkspace('free')
    const token = await observabilityToken(ws.liveKey)
    const requestTag = tag('ledger')
    const exporter = new TracesProtoExporter(
      exporterOptions(stack.baseUrl, 'traces', token, requestTag, true),
    )
    expect((await exportWith(exporter, await makeSpans(5))).code).toBe(ExportResultCode.SUCCESS)
    await exporter.shutdown()
    const [result] = await ingestionsTagged(ws.liveKey, requestTag)
    expect(result).toMatchObject({ outcome: 'forwarded', items: 5 })
    const rows = await waitForLedger(ws.tenantId, (r) => r.some((row) => row.request_id === requestTag))
    expect(rows.find((row) => row.request_id === requestTag)).toMatchObject({
      endpoint: 'telemetry.otlp',
      model: 'telemetry_ingest',
      unit: 'bytes',
      // Counted after decompression.
      quantity: result!.decoded_bytes,
      credits_cents: '0.0000',
    })

    const allowance = free.toolAllowances.telemetry_ingest!
    const spent = await createWorkspace('free', { toolUse: { telemetry_ingest: allowance } })
    const spentToken = await observabilityToken(spent.liveKey)
    const refusedTag = tag('allowance')
    const res = await post(
      'traces',
      await protobufTraces(2),
      { 'content-type': 'application/x-protobuf', 'x-request-id': refusedTag },
      spentToken,
    )
    expect(res.status).toBe(429)
    const now = new Date()
    const monthEnds = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)
    const retryAfter = Number(res.headers.get('retry-after'))
    expect(Math.abs(retryAfter - (monthEnds - Date.now()) / 1000)).toBeLessThan(120)
    expect(await refusalOf(res)).toMatchObject({ code: 8, errorCode: 'tier_allowance_exhausted' })
    // The official exporter gives up on it rather than reporting success.
    const spentExporter = new TracesProtoExporter({
      ...exporterOptions(stack.baseUrl, 'traces', spentToken, refusedTag, false),
      timeoutMillis: 3_000,
    })
    expect((await exportWith(spentExporter, await makeSpans(1))).code).toBe(ExportResultCode.FAILED)
    await spentExporter.shutdown()
    expect(await collectorRequests(refusedTag)).toEqual([])
  }, 60_000)
})
