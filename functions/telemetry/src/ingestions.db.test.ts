/**
 * The telemetry family as the gateway calls it, against Postgres, with the collector played by a
 * stubbed fetch (the e2e tests use a real collector fake over HTTP): what is retained per export,
 * paging, pruning past OTLP_RESULTS_RETAINED, tenancy of the results, and the collector not
 * being configured. Metering goes to a recording stand-in of the RateLimiter (the e2e tests meet the
 * real one): what each export was charged.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Identity } from '../../../shared/worker/request-context'
import { createTenant, databaseEnv } from '../../../test/unit/database'
import { apiKeyIdentity, callFamily, errorOf } from '../../../test/unit/family-call'
import { namespaceOf, RecordingLimiter } from '../../../test/unit/recording-limiter'
import TelemetryWorker from './index'
import type { TelemetryEnv } from './telemetry.context'

const COLLECTOR = 'http://collector.test:4318'
let limiter = new RecordingLimiter()
const env = (extra: Partial<TelemetryEnv> = {}): TelemetryEnv => ({
  ...databaseEnv,
  OTLP_COLLECTOR_URL: COLLECTOR,
  RATE_LIMITER: namespaceOf(limiter),
  ...extra,
})

/** A recorded forward: URL, headers and exact body. */
interface Forwarded {
  url: string
  headers: Record<string, string>
  body: Uint8Array
}

function stubCollector(status = 200): Forwarded[] {
  const seen: Forwarded[] = []
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const request = new Request(input as RequestInfo, init)
    seen.push({
      url: request.url,
      headers: Object.fromEntries(request.headers),
      body: new Uint8Array(await request.arrayBuffer()),
    })
    return new Response(status === 200 ? '{}' : 'nope', {
      status,
      headers: { 'content-type': status === 200 ? 'application/json' : 'text/plain' },
    })
  })
  return seen
}

afterEach(() => {
  vi.restoreAllMocks()
  limiter = new RecordingLimiter()
})

const logs = (count: number) =>
  JSON.stringify({
    resourceLogs: [{ scopeLogs: [{ logRecords: Array.from({ length: count }, () => ({})) }] }],
  })

const exportLogs = (identity: Identity, body: string, e = env()) =>
  callFamily(TelemetryWorker, e, '/otlp/v1/logs', {
    method: 'POST',
    identity,
    body,
    headers: { 'content-type': 'application/json', 'x-forged': 'yes', 'x-scope-orgid': 'someone-else' },
    maxBodyBytes: 8 * 1024 * 1024,
  })

interface Page {
  data: {
    id: string
    request_id: string
    items: number
    signal: string
    outcome: string
    decoded_bytes: number
  }[]
  has_more: boolean
  totals: { signal: string; requests: number; items: number }[]
}

const list = async (identity: Identity, query = '', e = env()) => {
  const res = await callFamily(TelemetryWorker, e, `/platform/v1/telemetry/ingestions${query}`, { identity })
  expect(res.status, await res.clone().text()).toBe(200)
  return (await res.json()) as Page
}

describe('OTLP export against Postgres', () => {
  it('forwards the exact body with only the receiver headers, and retains the result and totals', async () => {
    const seen = stubCollector()
    const identity = apiKeyIdentity({ tenantId: await createTenant() })
    const body = logs(3)
    const res = await exportLogs(identity, body)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({})
    expect(seen).toHaveLength(1)
    expect(seen[0]!.url).toBe(`${COLLECTOR}/v1/logs`)
    expect(new TextDecoder().decode(seen[0]!.body)).toBe(body)
    expect(seen[0]!.headers['x-scope-orgid']).toBe(identity.tenantId)
    expect(seen[0]!.headers['x-forged']).toBeUndefined()
    const page = await list(identity)
    expect(page.data).toEqual([
      expect.objectContaining({ signal: 'logs', items: 3, outcome: 'forwarded', decoded_bytes: body.length }),
    ])
    expect(page.totals).toEqual([expect.objectContaining({ signal: 'logs', requests: 1, items: 3 })])
    // Admitted as the paid tool telemetry_ingest and charged the decoded bytes.
    expect(limiter.acquireCalls).toEqual([expect.objectContaining({ model: 'telemetry_ingest' })])
    await vi.waitFor(() =>
      expect(limiter.settleCalls.flat()).toEqual([
        expect.objectContaining({
          model: 'telemetry_ingest',
          usage: expect.objectContaining({ quantity: body.length }),
        }),
      ]),
    )
  })

  it('pages by the last id, keeps only the newest OTLP_RESULTS_RETAINED, never shows another tenant', async () => {
    stubCollector()
    const identity = apiKeyIdentity({ tenantId: await createTenant() })
    const other = apiKeyIdentity({ tenantId: await createTenant() })
    const small = env({ OTLP_RESULTS_RETAINED: '4' })
    for (let i = 1; i <= 6; i++) expect((await exportLogs(identity, logs(i), small)).status).toBe(200)
    expect((await exportLogs(other, logs(9), small)).status).toBe(200)

    const first = await list(identity, '?limit=3', small)
    expect(first.data.map((r) => r.items)).toEqual([6, 5, 4])
    expect(first.has_more).toBe(true)
    const second = await list(identity, `?limit=3&before=${first.data[2]!.id}`, small)
    expect(second.data.map((r) => r.items)).toEqual([3])
    expect(second.has_more).toBe(false)
    // Totals keep every export, pruned or not.
    expect(first.totals).toEqual([expect.objectContaining({ requests: 6, items: 21 })])

    // Another tenant's cursor names nothing in this list.
    const theirs = (await list(other, '', small)).data[0]!
    const res = await callFamily(
      TelemetryWorker,
      small,
      `/platform/v1/telemetry/ingestions?before=${theirs.id}`,
      {
        identity,
      },
    )
    expect(res.status).toBe(400)
    expect((await errorOf(res)).code).toBe('unknown_cursor')
    expect((await list(other, '', small)).data.map((r) => r.items)).toEqual([9])
  })

  it('answers 503 collector_not_configured without a collector, and records the refusal', async () => {
    const seen = stubCollector()
    const identity = apiKeyIdentity({ tenantId: await createTenant() })
    const res = await exportLogs(identity, logs(1), { ...databaseEnv, RATE_LIMITER: namespaceOf(limiter) })
    expect(res.status).toBe(503)
    expect((await errorOf(res)).code).toBe('collector_not_configured')
    expect(seen).toEqual([])
    // The body was read and checked before the configuration was: its one record is counted.
    expect((await list(identity)).data).toEqual([
      expect.objectContaining({ outcome: 'collector_failed', items: 1 }),
    ])
  })

  it('a bomb is 413 whatever is configured, the collector or not, and nothing is metered', async () => {
    const seen = stubCollector()
    const identity = apiKeyIdentity({ tenantId: await createTenant() })
    const zeros = new Response(new Uint8Array(64 * 1024 * 1024)).body!.pipeThrough(
      new CompressionStream('gzip'),
    )
    const bomb = new Uint8Array(await new Response(zeros).arrayBuffer())
    for (const e of [env(), { ...databaseEnv, RATE_LIMITER: namespaceOf(limiter) }]) {
      const res = await callFamily(TelemetryWorker, e, '/otlp/v1/logs', {
        method: 'POST',
        identity,
        body: bomb,
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        maxBodyBytes: 1024 * 1024,
      })
      expect(res.status).toBe(413)
      expect((await errorOf(res)).message).toMatch(/decompressed request body is larger than 1 MiB/)
    }
    expect(seen).toEqual([])
    expect(limiter.acquireCalls).toEqual([])
    expect((await list(identity)).data).toEqual([
      expect.objectContaining({
        outcome: 'refused',
        status: 413,
        received_bytes: bomb.length,
        decoded_bytes: 0,
      }),
      expect.objectContaining({
        outcome: 'refused',
        status: 413,
        received_bytes: bomb.length,
        decoded_bytes: 0,
      }),
    ])
  })

  it('a collector answer past 1 MiB is not read on (a 502, retryable), whatever it would inflate to', async () => {
    let pulled = 0
    vi.spyOn(globalThis, 'fetch').mockImplementation(async () => {
      const endless = new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled += 64 * 1024
          controller.enqueue(new Uint8Array(64 * 1024))
        },
      })
      return new Response(endless, { status: 200, headers: { 'content-type': 'application/json' } })
    })
    const identity = apiKeyIdentity({ tenantId: await createTenant() })
    const res = await exportLogs(identity, logs(1))
    expect(res.status).toBe(502)
    expect(res.headers.get('retry-after')).toBe('5')
    expect((await errorOf(res)).code).toBe('collector_failed')
    expect(pulled).toBeLessThan(2 * 1024 * 1024)
  })

  it('a collector refusing its credential is a 502 for the client, not a 401', async () => {
    stubCollector(401)
    const identity = apiKeyIdentity({ tenantId: await createTenant() })
    const res = await exportLogs(identity, logs(1))
    expect(res.status).toBe(502)
    expect((await errorOf(res)).code).toBe('collector_failed')
  })
})

interface Recent {
  object: string
  traces: {
    request_id: string
    items: number
    truncated: boolean
    spans: { service: string; name: string }[]
  }[]
  metrics: { request_id: string; metrics: { name: string; value: number | null }[] }[]
  logs: { request_id: string; records: { body: string; severity: string }[] }[]
}

describe('samples of what the collector took (GET /platform/v1/telemetry/recent)', () => {
  const exportJson = (identity: Identity, signal: string, body: unknown, requestId: string) =>
    callFamily(TelemetryWorker, env(), `/otlp/v1/${signal}`, {
      method: 'POST',
      identity,
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
      maxBodyBytes: 8 * 1024 * 1024,
      requestId,
    })
  const trace = (service: string, span: string) => ({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
        scopeSpans: [
          {
            spans: [
              {
                traceId: '5b8efff798038103d269b633813fc60c',
                spanId: 'eee19b7ec3c1b174',
                name: span,
                kind: 2,
                startTimeUnixNano: '1700000000000000000',
                endTimeUnixNano: '1700000000012345678',
                attributes: [{ key: 'http.route', value: { stringValue: '/cart' } }],
              },
            ],
          },
        ],
      },
    ],
  })
  const recent = async (identity: Identity, query = '') => {
    const res = await callFamily(TelemetryWorker, env(), `/platform/v1/telemetry/recent${query}`, {
      identity,
    })
    expect(res.status, await res.clone().text()).toBe(200)
    return (await res.json()) as Recent
  }

  it('newest first per signal, only exports the collector took, only the caller’s workspace', async () => {
    stubCollector()
    const identity = apiKeyIdentity({ tenantId: await createTenant() })
    const other = apiKeyIdentity({ tenantId: await createTenant() })
    for (const [i, name] of ['GET /a', 'GET /b', 'GET /c'].entries()) {
      expect((await exportJson(identity, 'traces', trace('shop', name), `req-t${i}`)).status).toBe(200)
    }
    const gauge = {
      resourceMetrics: [
        { scopeMetrics: [{ metrics: [{ name: 'queue.depth', gauge: { dataPoints: [{ asInt: '-4' }] } }] }] },
      ],
    }
    expect((await exportJson(identity, 'metrics', gauge, 'req-m')).status).toBe(200)
    const line = {
      resourceLogs: [
        { scopeLogs: [{ logRecords: [{ body: { stringValue: 'hello' }, severityNumber: 13 }] }] },
      ],
    }
    expect((await exportJson(identity, 'logs', line, 'req-l')).status).toBe(200)
    expect((await exportJson(other, 'traces', trace('theirs', 'GET /secret'), 'req-other')).status).toBe(200)
    // An export the collector did not take is listed as an ingestion but has no sample.
    vi.restoreAllMocks()
    stubCollector(503)
    expect((await exportJson(identity, 'traces', trace('shop', 'GET /lost'), 'req-lost')).status).toBe(503)

    const page = await recent(identity, '?limit=2')
    expect(page.object).toBe('telemetry.recent')
    expect(page.traces.map((t) => [t.request_id, t.spans.map((s) => `${s.service} ${s.name}`)])).toEqual([
      ['req-t2', ['shop GET /c']],
      ['req-t1', ['shop GET /b']],
    ])
    expect(page.traces[0]).toMatchObject({
      items: 1,
      truncated: false,
      spans: [{ kind: 'server', duration_ms: 12.345, attributes: { 'http.route': '/cart' } }],
    })
    expect(page.metrics).toEqual([
      expect.objectContaining({
        request_id: 'req-m',
        metrics: [expect.objectContaining({ name: 'queue.depth', value: -4 })],
      }),
    ])
    expect(page.logs).toEqual([
      expect.objectContaining({
        request_id: 'req-l',
        records: [expect.objectContaining({ body: 'hello', severity: 'WARN' })],
      }),
    ])
    expect((await recent(identity)).traces).toHaveLength(3)
    const theirs = await recent(other)
    expect(theirs.traces.map((t) => t.spans[0]!.name)).toEqual(['GET /secret'])
    expect(theirs.metrics).toEqual([])
    // The results list keeps its shape: no sample in it.
    const listed = await list(identity)
    expect(listed.data.flatMap((r) => Object.keys(r))).not.toContain('sample')
    expect(listed.data[0]).toMatchObject({ request_id: 'req-lost', outcome: 'collector_failed' })
  })

  it('refuses a limit outside 1–20', async () => {
    const identity = apiKeyIdentity({ tenantId: await createTenant() })
    const res = await callFamily(TelemetryWorker, env(), '/platform/v1/telemetry/recent?limit=21', {
      identity,
    })
    expect(res.status).toBe(400)
  })
})
