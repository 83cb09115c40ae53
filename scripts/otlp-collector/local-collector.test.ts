/**
 * The local collector over HTTP, as the telemetry worker forwards to it and as the official
 * exporters would send to a Collector: one OTLP JSON line per export and signal under
 * DATA_DIR/telemetry, the tenant headers made resource attributes, the OTLP/HTTP receiver's
 * refusals, and files that stay within their bound as they rotate.
 */
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { deflateSync, gzipSync } from 'node:zlib'
import { BinaryReader } from '@bufbuild/protobuf/wire'
import { ExportResultCode } from '@opentelemetry/core'
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterEach, describe, expect, it } from 'vitest'
import { type LocalCollector, MAX_BODY_BYTES, startLocalCollector } from './local-collector.ts'

const open: LocalCollector[] = []
afterEach(async () => {
  for (const c of open.splice(0)) await c.close()
})

async function collector(options: { maxFileBytes?: number; rotatedFiles?: number; dataDir?: string } = {}) {
  const dataDir = options.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'svc-local-collector-'))
  const started = await startLocalCollector({ dataDir, ...options })
  open.push(started)
  return { ...started, dataDir }
}

const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : []

async function spans(attributes: Record<string, string> = {}) {
  const memory = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'checkout', ...attributes }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  })
  const span = provider.getTracer('shop').startSpan('GET /cart', { attributes: { 'http.status_code': 200 } })
  span.end()
  await provider.forceFlush()
  return memory.getFinishedSpans()
}

const exportWith = <T>(
  exporter: { export(items: T, cb: (r: { code: number; error?: Error }) => void): void },
  items: T,
) => new Promise<{ code: number; error?: Error }>((resolve) => exporter.export(items, resolve))

/** The headers the telemetry worker sets on a forwarded export (functions/telemetry/src/otlp/collector.ts). */
const RECEIVER_HEADERS = {
  'x-scope-orgid': 'tenant-1',
  'x-svc-tenant-id': 'tenant-1',
  'x-svc-deployment-environment': 'development',
  'x-svc-cloud-region': 'local',
  'x-svc-request-id': 'req-1',
}

type Resource = { attributes: { key: string; value: { stringValue?: string } }[] }
const resourceAttributes = (line: Record<string, unknown>, key: string) =>
  Object.fromEntries(
    ((line[key] as { resource: Resource }[])[0]!.resource.attributes ?? []).map((a) => [
      a.key,
      a.value.stringValue,
    ]),
  )

describe('the local OTLP collector', () => {
  it('keeps what the official exporters send, one OTLP JSON line per export, protobuf and JSON, gzip or not', async () => {
    const c = await collector()
    const traces = new OTLPTraceExporter({
      url: `${c.url}/v1/traces`,
      compression: CompressionAlgorithm.GZIP,
    })
    expect((await exportWith(traces, await spans())).code).toBe(ExportResultCode.SUCCESS)
    await traces.shutdown()

    const memory = new InMemoryLogRecordExporter()
    const logger = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter: memory })] })
    logger.getLogger('shop').emit({ body: 'cart emptied', severityText: 'WARN' })
    await logger.forceFlush()
    const logs = new OTLPLogExporter({ url: `${c.url}/v1/logs` })
    expect((await exportWith(logs, memory.getFinishedLogRecords())).code).toBe(ExportResultCode.SUCCESS)
    await logs.shutdown()

    expect(c.files.traces).toBe(path.join(c.dataDir, 'telemetry', 'traces.jsonl'))
    const [trace] = lines(c.files.traces)
    expect(trace).toMatchObject({
      resourceSpans: [
        {
          scopeSpans: [
            {
              scope: { name: 'shop' },
              spans: [
                { name: 'GET /cart', attributes: [{ key: 'http.status_code', value: { intValue: '200' } }] },
              ],
            },
          ],
        },
      ],
    })
    expect(resourceAttributes(trace!, 'resourceSpans')['service.name']).toBe('checkout')
    expect(lines(c.files.logs)).toMatchObject([
      {
        resourceLogs: [
          { scopeLogs: [{ logRecords: [{ body: { stringValue: 'cart emptied' }, severityText: 'WARN' }] }] },
        ],
      },
    ])
    expect(lines(c.files.metrics)).toEqual([])
  })

  it('makes the receiver headers resource attributes as deploy/otel-collector.yaml does', async () => {
    const c = await collector()
    const body = {
      resourceSpans: [
        {
          resource: {
            attributes: [
              { key: 'service.name', value: { stringValue: 'api' } },
              // The emitter's own tenant id is replaced; its environment is kept.
              { key: 'svc.tenant_id', value: { stringValue: 'another-workspace' } },
              { key: 'deployment.environment', value: { stringValue: 'staging' } },
            ],
          },
          scopeSpans: [],
        },
        { scopeSpans: [] },
      ],
    }
    const res = await fetch(`${c.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...RECEIVER_HEADERS },
      body: JSON.stringify(body),
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({})
    const [line] = lines(c.files.traces)
    expect(resourceAttributes(line!, 'resourceSpans')).toEqual({
      'service.name': 'api',
      'svc.tenant_id': 'tenant-1',
      'deployment.environment': 'staging',
      'cloud.region': 'local',
    })
    const second = (line!.resourceSpans as { resource: Resource }[])[1]!.resource.attributes
    expect(Object.fromEntries(second.map((a) => [a.key, a.value.stringValue]))).toEqual({
      'svc.tenant_id': 'tenant-1',
      'cloud.region': 'local',
      'deployment.environment': 'development',
    })
  })

  it('answers as an OTLP/HTTP receiver: deflate, empty exports, and its refusals', async () => {
    const c = await collector()
    const post = (p: string, body: Uint8Array | string, headers: Record<string, string>, method = 'POST') =>
      fetch(`${c.url}${p}`, { method, headers, ...(method === 'POST' ? { body: body as BodyInit } : {}) })
    const json = { 'content-type': 'application/json' }
    const metrics = JSON.stringify({
      resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'm', gauge: {} }] }] }],
    })

    const deflated = await post('/v1/metrics', deflateSync(metrics), {
      ...json,
      'content-encoding': 'deflate',
    })
    expect(deflated.status).toBe(200)
    expect(lines(c.files.metrics)).toEqual([
      { resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'm', gauge: {} }] }] }] },
    ])

    // The receiver's status probe: an empty protobuf export, acknowledged with an empty answer, not written.
    const probe = await post('/v1/traces', new Uint8Array(0), { 'content-type': 'application/x-protobuf' })
    expect(probe.status).toBe(200)
    expect(probe.headers.get('content-type')).toBe('application/x-protobuf')
    expect((await probe.arrayBuffer()).byteLength).toBe(0)
    expect(existsSync(c.files.traces)).toBe(false)

    expect((await post('/v1/spans', metrics, json)).status).toBe(404)
    expect((await post('/v1/logs', '', json, 'GET')).status).toBe(405)
    expect((await post('/v1/logs', metrics, { 'content-type': 'text/plain' })).status).toBe(415)
    expect((await post('/v1/logs', metrics, { ...json, 'content-encoding': 'br' })).status).toBe(400)
    expect(
      (await post('/v1/logs', gzipSync(metrics).subarray(0, 10), { ...json, 'content-encoding': 'gzip' }))
        .status,
    ).toBe(400)

    const notJson = await post('/v1/logs', '{"resourceLogs":', json)
    expect(notJson.status).toBe(400)
    expect(await notJson.json()).toEqual({
      code: 3,
      message: expect.stringMatching(/^failed to unmarshal request body/),
    })
    // A protobuf refusal is a google.rpc.Status in protobuf: code 3 (INVALID_ARGUMENT).
    const truncated = await post('/v1/logs', new Uint8Array([0x0a, 0x20, 1]), {
      'content-type': 'application/x-protobuf',
    })
    expect(truncated.status).toBe(400)
    const reader = new BinaryReader(new Uint8Array(await truncated.arrayBuffer()))
    expect(reader.tag()[0]).toBe(1)
    expect(reader.int32()).toBe(3)

    const bomb = gzipSync(Buffer.alloc(MAX_BODY_BYTES + 1, 0x20))
    expect((await post('/v1/logs', bomb, { ...json, 'content-encoding': 'gzip' })).status).toBe(413)
    expect(lines(c.files.logs)).toEqual([])
  })

  it('rotates each signal file at its bound and keeps the newest ones, across a restart', async () => {
    const maxFileBytes = 1_000
    const c = await collector({ maxFileBytes, rotatedFiles: 2 })
    const sent: string[] = []
    let target = c.url
    const send = async (i: number) => {
      const body = {
        resourceLogs: [
          { scopeLogs: [{ logRecords: [{ body: { stringValue: `line ${i} ${'x'.repeat(150)}` } }] }] },
        ],
      }
      sent.push(`line ${i}`)
      const res = await fetch(`${target}/v1/logs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      expect(res.status).toBe(200)
    }
    for (let i = 0; i < 15; i++) await send(i)
    await c.close()
    open.splice(0)
    // A restart appends to the current file and goes on counting its size.
    const again = await collector({ maxFileBytes, rotatedFiles: 2, dataDir: c.dataDir })
    target = again.url
    for (let i = 15; i < 30; i++) await send(i)
    expect(again.files.logs).toBe(c.files.logs)

    const dir = path.join(c.dataDir, 'telemetry')
    const files = ['logs.2.jsonl', 'logs.1.jsonl', 'logs.jsonl'].map((f) => path.join(dir, f))
    for (const file of files) expect(statSync(file).size).toBeLessThanOrEqual(maxFileBytes)
    expect(existsSync(path.join(dir, 'logs.3.jsonl'))).toBe(false)
    const kept = files.flatMap(lines).map((l) => JSON.stringify(l).match(/line \d+/)![0])
    // Oldest first across the rotated files: exactly the newest exports, in the order they came.
    expect(kept.length).toBeGreaterThan(6)
    expect(kept).toEqual(sent.slice(-kept.length))
  })
})
