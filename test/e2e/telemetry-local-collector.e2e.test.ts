/**
 * Telemetry on a plain `npm start` (its own stack, OTLP_COLLECTOR_URL not set): the official
 * OpenTelemetry exporters' traces, metrics and logs are accepted and listed as forwarded, the
 * local collector keeps each export as an OTLP JSON line under DATA_DIR/telemetry with the
 * workspace's id on its resource, and the console's Telemetry page, in a real browser, shows the
 * span (service, name, duration, attributes), the metric and the log record that were sent.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { type HrTime, SpanKind } from '@opentelemetry/api'
import { SeverityNumber } from '@opentelemetry/api-logs'
import { ExportResultCode } from '@opentelemetry/core'
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto'
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { type Browser, launchBrowser } from '../support/browser.ts'
import { launchStack, type RunningStack } from '../support/stack-process.ts'

const fixture = inject('stack')

const SERVICE = 'e2e-shop'
const SPAN = 'checkout GET /cart'
/** The span's own times: 42.5 ms apart, so the duration shown is exactly this. */
const START: HrTime = [Math.floor(Date.now() / 1000), 100_000_000]
const END: HrTime = [START[0], 142_500_000]

class CollectingReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

const exportWith = <T>(
  exporter: { export(items: T, cb: (r: { code: number; error?: Error }) => void): void },
  items: T,
) => new Promise<{ code: number; error?: Error }>((resolve) => exporter.export(items, resolve))

const jsonLines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)

type KeyValue = { key: string; value: Record<string, unknown> }
const attributeMap = (list: KeyValue[] | undefined) =>
  Object.fromEntries((list ?? []).map((a) => [a.key, a.value]))

describe(`telemetry on a plain npm start, no OTLP_COLLECTOR_URL (${fixture.kind})`, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-e2e-local-collector-'))
  let stack: RunningStack
  let token: string
  let traceId: string
  let browser: Browser | undefined

  const url = (p: string) => `${stack.baseUrl}${p}`
  const platform = async <T>(p: string) => {
    const res = await fetch(url(p), { headers: { authorization: `Bearer ${token}` } })
    expect(res.status, await res.clone().text()).toBe(200)
    return (await res.json()) as T
  }
  const exporterOptions = (signal: string, gzip = false) => ({
    url: url(`/otlp/v1/${signal}`),
    headers: { authorization: `Bearer ${token}` },
    compression: gzip ? CompressionAlgorithm.GZIP : CompressionAlgorithm.NONE,
    timeoutMillis: 10_000,
  })
  const resource = resourceFromAttributes({ 'service.name': SERVICE, 'service.version': '1.0.0' })

  beforeAll(async () => {
    // Its own stack and embedded database; '' is how an environment says "not set" to npm start.
    stack = await launchStack({ dataDir, env: { OTLP_COLLECTOR_URL: '' } })
    const res = await fetch(url('/auth/service-token'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_id: stack.credentials.serviceAccountId,
        client_secret: stack.credentials.serviceAccountSecret,
        audience: 'internal-service',
      }),
    })
    expect(res.status, await res.clone().text()).toBe(200)
    token = ((await res.json()) as { access_token: string }).access_token
  })

  afterAll(async () => {
    await browser?.close()
    await stack?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('says where telemetry goes when it starts', () => {
    expect(stack.output()).toContain(
      `Telemetry       local OTLP collector, files in ${path.join(dataDir, 'telemetry')}/{traces,metrics,logs}.jsonl`,
    )
  })

  it('the official exporters succeed, the exports are listed as forwarded, the collector answers', async () => {
    const spans = new InMemorySpanExporter()
    const tracer = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(spans)] })
    const span = tracer.getTracer('shop').startSpan(SPAN, {
      kind: SpanKind.SERVER,
      startTime: START,
      attributes: { 'cart.items': 3, 'http.route': '/cart' },
    })
    span.end(END)
    traceId = span.spanContext().traceId
    const traces = new OTLPTraceExporter(exporterOptions('traces', true))
    expect(await exportWith(traces, spans.getFinishedSpans())).toEqual({ code: ExportResultCode.SUCCESS })
    await traces.shutdown()

    const reader = new CollectingReader()
    new MeterProvider({ resource, readers: [reader] }).getMeter('shop').createCounter('cart.checkouts').add(7)
    const metrics = new OTLPMetricExporter(exporterOptions('metrics'))
    expect(await exportWith(metrics, (await reader.collect()).resourceMetrics)).toEqual({
      code: ExportResultCode.SUCCESS,
    })
    await metrics.shutdown()

    const records = new InMemoryLogRecordExporter()
    const logger = new LoggerProvider({
      resource,
      processors: [new SimpleLogRecordProcessor({ exporter: records })],
    })
    logger
      .getLogger('shop')
      .emit({ body: 'cart emptied', severityNumber: SeverityNumber.WARN, severityText: 'WARN' })
    const logs = new OTLPLogExporter(exporterOptions('logs'))
    expect(await exportWith(logs, records.getFinishedLogRecords())).toEqual({
      code: ExportResultCode.SUCCESS,
    })
    await logs.shutdown()

    const listed = await platform<{
      data: { signal: string; outcome: string; status: number; collector_status: number }[]
    }>('/platform/v1/telemetry/ingestions')
    expect(listed.data.map((r) => [r.signal, r.outcome, r.status, r.collector_status]).sort()).toEqual([
      ['logs', 'forwarded', 200, 200],
      ['metrics', 'forwarded', 200, 200],
      ['traces', 'forwarded', 200, 200],
    ])
    const status = await platform<{
      collector: { configured: boolean; reachable: boolean; endpoint: string }
    }>('/platform/v1/telemetry/status')
    expect(status.collector).toMatchObject({
      configured: true,
      reachable: true,
      endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
    })
  })

  it('keeps each export as an OTLP JSON line under DATA_DIR/telemetry, with the workspace on its resource', () => {
    const dir = path.join(dataDir, 'telemetry')
    // One line per export: the status probe's empty export is not written.
    const [traces, ...moreTraces] = jsonLines(path.join(dir, 'traces.jsonl'))
    expect(moreTraces).toEqual([])
    const resourceSpans = traces!.resourceSpans as {
      resource: { attributes: KeyValue[] }
      scopeSpans: { spans: Record<string, unknown>[] }[]
    }[]
    expect(attributeMap(resourceSpans[0]!.resource.attributes)).toMatchObject({
      'service.name': { stringValue: SERVICE },
      'svc.tenant_id': { stringValue: stack.credentials.tenantId },
      'cloud.region': { stringValue: 'local' },
    })
    const span = resourceSpans[0]!.scopeSpans[0]!.spans[0]!
    expect(span).toMatchObject({
      traceId,
      name: SPAN,
      kind: 2,
      startTimeUnixNano: `${START[0]}100000000`,
      endTimeUnixNano: `${END[0]}142500000`,
    })
    expect(attributeMap(span.attributes as KeyValue[])).toEqual({
      'cart.items': { intValue: '3' },
      'http.route': { stringValue: '/cart' },
    })

    const [metrics] = jsonLines(path.join(dir, 'metrics.jsonl'))
    expect(JSON.stringify(metrics)).toContain('"name":"cart.checkouts"')
    expect(metrics).toMatchObject({
      resourceMetrics: [
        { scopeMetrics: [{ metrics: [{ name: 'cart.checkouts', sum: { dataPoints: [{ asDouble: 7 }] } }] }] },
      ],
    })
    expect(jsonLines(path.join(dir, 'logs.jsonl'))).toMatchObject([
      {
        resourceLogs: [
          { scopeLogs: [{ logRecords: [{ body: { stringValue: 'cart emptied' }, severityText: 'WARN' }] }] },
        ],
      },
    ])
  })

  it("the console's Telemetry page shows the span, the metric and the log record", async () => {
    browser = await launchBrowser(path.join('telemetry-local-collector', fixture.kind))
    const page = await browser.context.newPage()
    await page.goto(url('/console/sign-in'))
    await page.getByLabel('Email').fill(stack.credentials.ownerEmail)
    await page.getByLabel('Password').fill(stack.credentials.ownerPassword!)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(/\/console\//)
    await page.goto(url('/console/telemetry'))

    expect(await page.locator('[data-collector-state]').textContent()).toBe('reachable')
    const spans = page.getByRole('region', { name: 'Recent spans' })
    const row = spans.locator('tr', { hasText: SPAN })
    await expect.poll(() => row.count()).toBe(1)
    const cells = await row.locator('td').allTextContents()
    expect(cells[1]).toBe(SERVICE)
    expect(cells[2]).toBe(`${SPAN}server`)
    expect(cells[3]).toBe('42.5 ms')
    expect(cells[5]).toContain('cart.items=3')
    expect(cells[5]).toContain('http.route=/cart')

    const metric = page
      .getByRole('region', { name: 'Recent metrics' })
      .locator('tr', { hasText: 'cart.checkouts' })
    const metricCells = await metric.locator('td').allTextContents()
    expect(metricCells.slice(1, 6)).toEqual([SERVICE, 'cart.checkouts', 'sum', '7', '1'])

    const log = page
      .getByRole('region', { name: 'Recent log records' })
      .locator('tr', { hasText: 'cart emptied' })
    const logCells = await log.locator('td').allTextContents()
    expect(logCells.slice(1, 4)).toEqual([SERVICE, 'WARN', 'cart emptied'])
    await browser.shot(page, 'telemetry')
  }, 60_000)
})
