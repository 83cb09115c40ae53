/**
 * What the receiver retained, for the workspace: GET /platform/v1/telemetry/ingestions (the
 * newest ingestion results, paged, and the totals per signal), GET /platform/v1/telemetry/recent
 * (samples of the newest exports the collector took: spans, metrics, log records) and
 * GET /platform/v1/telemetry/status (operational status: whether the collector answers an empty
 * export now, the tenant's recent error rate, and the retry queue, which is always empty because
 * the receiver keeps none).
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { listIngestions, recentOutcomes, recentSamples, totalsOf } from './ingestion-store'
import { sendToCollector } from './otlp/collector'
import { type TelemetryEnv, telemetrySettings } from './telemetry.context'
import {
  IngestionListQuerySchema,
  IngestionListSchema,
  RecentTelemetryQuerySchema,
  RecentTelemetrySchema,
  TelemetryStatusSchema,
} from './telemetry.schemas'

type TelemetryContext = Context<FamilyEnv<TelemetryEnv>>

const TAGS = ['Telemetry']
const RECENT_WINDOW_SECONDS = 300

const iso = (d: Date | null) => (d ? d.toISOString() : null)

/** Scheme, host and port only: the path may carry a token in some setups, the secret is never shown. */
function endpointOf(url: string | null): string | null {
  if (!url) return null
  const parsed = new URL(url)
  return `${parsed.protocol}//${parsed.host}`
}

async function probeCollector(c: TelemetryContext) {
  const settings = telemetrySettings(c.env)
  if (!settings.OTLP_COLLECTOR_URL) {
    return {
      configured: false,
      endpoint: null,
      reachable: null,
      probe_status: null,
      probe_ms: null,
      detail: 'OTLP_COLLECTOR_URL is not set',
    }
  }
  const identity = identityOf(c)
  const started = Date.now()
  try {
    // An empty ExportTraceServiceRequest (zero bytes) is a valid export of nothing.
    const answer = await sendToCollector(settings, {
      signal: 'traces',
      body: new Uint8Array(0),
      contentType: 'application/x-protobuf',
      contentEncoding: 'identity',
      tenantId: identity.tenantId,
      requestId: c.get('request').requestId,
    })
    const ok = answer.status >= 200 && answer.status < 300
    return {
      configured: true,
      endpoint: endpointOf(settings.OTLP_COLLECTOR_URL),
      reachable: ok,
      probe_status: answer.status,
      probe_ms: Date.now() - started,
      detail: ok ? null : `the collector answered ${answer.status} to an empty export`,
    }
  } catch (err) {
    return {
      configured: true,
      endpoint: endpointOf(settings.OTLP_COLLECTOR_URL),
      reachable: false,
      probe_status: null,
      probe_ms: Date.now() - started,
      detail: err instanceof Error ? err.message : String(err),
    }
  }
}

export function ingestionStatusRoutes(app: OpenAPIHono<FamilyEnv<TelemetryEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/telemetry/ingestions',
      tags: TAGS,
      summary: "The workspace's newest OTLP ingestion results (newest first) and its totals per signal",
      description:
        'One result per export the receiver answered, accepted or refused; the newest OTLP_RESULTS_RETAINED are kept per workspace. Totals count every export since the first.',
      request: { query: IngestionListQuerySchema },
      responses: {
        200: { description: 'Results', content: { 'application/json': { schema: IngestionListSchema } } },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const query = c.req.valid('query')
      const { rows, totals } = await withRequestDatabase(c, 'telemetry', async (db) => ({
        rows: await listIngestions(db, identity.tenantId, {
          limit: query.limit + 1,
          before: query.before,
          signal: query.signal ?? null,
        }),
        totals: await totalsOf(db, identity.tenantId),
      }))
      const page = rows.slice(0, query.limit)
      return c.json(
        {
          object: 'list' as const,
          data: page.map((r) => ({
            id: r.id,
            object: 'telemetry.ingestion' as const,
            created_at: r.createdAt.toISOString(),
            request_id: r.requestId,
            signal: r.signal,
            encoding: r.encoding,
            content_encoding: r.contentEncoding,
            items: r.items,
            rejected_items: r.rejectedItems,
            received_bytes: r.receivedBytes,
            decoded_bytes: r.decodedBytes,
            outcome: r.outcome,
            status: r.status,
            error_code: r.errorCode,
            collector_status: r.collectorStatus,
            principal: r.principal,
            duration_ms: r.durationMs,
          })),
          has_more: rows.length > query.limit,
          totals: totals.map((t) => ({
            signal: t.signal,
            requests: t.requests,
            forwarded_requests: t.forwardedRequests,
            failed_requests: t.failedRequests,
            items: t.items,
            rejected_items: t.rejectedItems,
            received_bytes: t.receivedBytes,
            decoded_bytes: t.decodedBytes,
            last_ingested_at: iso(t.lastIngestedAt),
          })),
        },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/telemetry/recent',
      tags: TAGS,
      summary: 'What the workspace sent lately: samples of the newest exports the collector took, per signal',
      description:
        "For each signal, the newest exports the collector accepted (forwarded or partially rejected), newest first, each with a sample kept when it was received: its first 10 spans (service, name, kind, ids, start, duration, status, attributes), metrics (service, name, unit, type, data points, the first point's value) or log records (service, time, severity, body, trace id, attributes), at most 6 attributes each, texts cut short, at most 4 KiB per export. Kept with the ingestion results (the newest OTLP_RESULTS_RETAINED per workspace), whichever collector took the export.",
      request: { query: RecentTelemetryQuerySchema },
      responses: {
        200: { description: 'Samples', content: { 'application/json': { schema: RecentTelemetrySchema } } },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const { limit } = c.req.valid('query')
      const rows = await withRequestDatabase(c, 'telemetry', (db) =>
        recentSamples(db, identity.tenantId, limit),
      )
      const exported = (row: (typeof rows)[number]) => ({
        ingestion_id: row.id,
        created_at: row.createdAt.toISOString(),
        request_id: row.requestId,
        items: row.items,
        truncated: row.sample.truncated,
      })
      const recent = {
        object: 'telemetry.recent' as const,
        traces: rows.flatMap((r) =>
          r.sample.signal === 'traces' ? [{ ...exported(r), spans: r.sample.spans }] : [],
        ),
        metrics: rows.flatMap((r) =>
          r.sample.signal === 'metrics' ? [{ ...exported(r), metrics: r.sample.metrics }] : [],
        ),
        logs: rows.flatMap((r) =>
          r.sample.signal === 'logs' ? [{ ...exported(r), records: r.sample.records }] : [],
        ),
      }
      return c.json(recent, 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/telemetry/status',
      tags: TAGS,
      summary:
        'Operational status of the OTLP receiver: collector reachability, recent error rate, retry queue',
      description:
        'Reachability is measured now, with an empty trace export to the collector. The receiver queues nothing: an export the collector did not take is answered retryable (429/502/503/504 with Retry-After) and the exporter retries, so the retry queue is always empty.',
      responses: {
        200: { description: 'Status', content: { 'application/json': { schema: TelemetryStatusSchema } } },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const [collector, recent] = await Promise.all([
        probeCollector(c),
        withRequestDatabase(c, 'telemetry', (db) =>
          recentOutcomes(db, identity.tenantId, RECENT_WINDOW_SECONDS),
        ),
      ])
      const failed = recent.refused + recent.collectorFailed
      return c.json(
        {
          object: 'telemetry.status' as const,
          collector,
          recent: {
            window_seconds: RECENT_WINDOW_SECONDS,
            requests: recent.requests,
            refused: recent.refused,
            collector_failed: recent.collectorFailed,
            error_rate: recent.requests === 0 ? 0 : failed / recent.requests,
            last_error_code: recent.lastErrorCode,
          },
          retry_queue: {
            depth: 0 as const,
            detail:
              'The receiver keeps no queue: an export the collector did not take is answered retryable and the exporter retries it.',
          },
        },
        200,
      )
    },
  )
}
