/**
 * The retained ingestion results: one row per export the receiver answered (accepted or not),
 * with the sample of what the collector took, and the tenant's running totals per signal, written
 * in one statement (one round trip) that also prunes the tenant's rows beyond the newest
 * OTLP_RESULTS_RETAINED.
 */
import { and, desc, eq, gte, isNotNull, type SQL, sql } from 'drizzle-orm'
import { unionAll } from 'drizzle-orm/pg-core'
import type { Drizzle } from '../../../shared/db/client'
import { olderThanCursor } from '../../../shared/db/list-cursor'
import {
  type INGESTION_OUTCOMES,
  OTLP_SIGNALS,
  telemetryIngestions,
  telemetryTotals,
} from '../../../shared/db/schema'
import type { OtlpSignal } from './otlp/otlp-schema'
import type { ExportSample } from './telemetry.schemas'

export type IngestionOutcome = (typeof INGESTION_OUTCOMES)[number]

export interface IngestionResult {
  tenantId: string
  requestId: string
  signal: OtlpSignal
  encoding: string
  contentEncoding: string
  items: number
  rejectedItems: number
  receivedBytes: number
  decodedBytes: number
  outcome: IngestionOutcome
  status: number
  errorCode: string | null
  collectorStatus: number | null
  principal: string
  durationMs: number
  /** Kept for exports the collector took (export-sample.ts); null otherwise. */
  sample: ExportSample | null
}

/**
 * The rows a workspace may read. Scoped by tenant; the one place to add another scope (the
 * credential's mode, say) to every telemetry read.
 */
function workspaceRows(tenantId: string): SQL {
  return eq(telemetryIngestions.tenantId, tenantId)
}

export async function recordIngestion(db: Drizzle, result: IngestionResult, retained: number): Promise<void> {
  const forwarded = result.outcome === 'forwarded' || result.outcome === 'partially_rejected' ? 1 : 0
  const failed = forwarded ? 0 : 1
  await db.execute(sql`
    WITH inserted AS (
      INSERT INTO ${telemetryIngestions} (
        tenant_id, request_id, signal, encoding, content_encoding, items, rejected_items,
        received_bytes, decoded_bytes, outcome, status, error_code, collector_status, principal, duration_ms,
        sample
      ) VALUES (
        ${result.tenantId}, ${result.requestId}, ${result.signal}, ${result.encoding}, ${result.contentEncoding},
        ${result.items}, ${result.rejectedItems}, ${result.receivedBytes}, ${result.decodedBytes},
        ${result.outcome}, ${result.status}, ${result.errorCode}, ${result.collectorStatus},
        ${result.principal}, ${result.durationMs},
        ${result.sample === null ? null : JSON.stringify(result.sample)}::jsonb
      ) RETURNING created_at
    ), totals AS (
      INSERT INTO ${telemetryTotals} AS t (
        tenant_id, signal, requests, forwarded_requests, failed_requests, items, rejected_items,
        received_bytes, decoded_bytes, last_ingested_at
      ) SELECT ${result.tenantId}, ${result.signal}, 1, ${forwarded}, ${failed}, ${forwarded ? result.items : 0},
        ${result.rejectedItems}, ${result.receivedBytes}, ${result.decodedBytes}, created_at FROM inserted
      ON CONFLICT (tenant_id, signal) DO UPDATE SET
        requests = t.requests + 1,
        forwarded_requests = t.forwarded_requests + excluded.forwarded_requests,
        failed_requests = t.failed_requests + excluded.failed_requests,
        items = t.items + excluded.items,
        rejected_items = t.rejected_items + excluded.rejected_items,
        received_bytes = t.received_bytes + excluded.received_bytes,
        decoded_bytes = t.decoded_bytes + excluded.decoded_bytes,
        last_ingested_at = excluded.last_ingested_at
    )
    -- The statement's snapshot does not see the row it inserts: keep the newest retained - 1 others.
    DELETE FROM ${telemetryIngestions}
    WHERE tenant_id = ${result.tenantId} AND created_at <= (
      SELECT created_at FROM ${telemetryIngestions}
      WHERE tenant_id = ${result.tenantId}
      ORDER BY created_at DESC OFFSET ${Math.max(0, retained - 1)} LIMIT 1
    )`)
}

/** Newest first; `before` is the id of the last result of the previous page, or an instant. */
export async function listIngestions(
  db: Drizzle,
  tenantId: string,
  page: { limit: number; before: string | undefined; signal: OtlpSignal | null },
) {
  const mine = workspaceRows(tenantId)
  const after = await olderThanCursor(
    db,
    {
      table: telemetryIngestions,
      id: telemetryIngestions.id,
      createdAt: telemetryIngestions.createdAt,
      scope: mine,
    },
    page.before,
  )
  return db
    .select({
      id: telemetryIngestions.id,
      createdAt: telemetryIngestions.createdAt,
      requestId: telemetryIngestions.requestId,
      signal: telemetryIngestions.signal,
      encoding: telemetryIngestions.encoding,
      contentEncoding: telemetryIngestions.contentEncoding,
      items: telemetryIngestions.items,
      rejectedItems: telemetryIngestions.rejectedItems,
      receivedBytes: telemetryIngestions.receivedBytes,
      decodedBytes: telemetryIngestions.decodedBytes,
      outcome: telemetryIngestions.outcome,
      status: telemetryIngestions.status,
      errorCode: telemetryIngestions.errorCode,
      collectorStatus: telemetryIngestions.collectorStatus,
      principal: telemetryIngestions.principal,
      durationMs: telemetryIngestions.durationMs,
    })
    .from(telemetryIngestions)
    .where(and(mine, after, page.signal ? eq(telemetryIngestions.signal, page.signal) : undefined))
    .orderBy(desc(telemetryIngestions.createdAt), desc(telemetryIngestions.id))
    .limit(page.limit)
}

/** The tenant's exports in the last `windowSeconds`: how many, how many failed, the latest error. */
export async function recentOutcomes(db: Drizzle, tenantId: string, windowSeconds: number) {
  const since = sql`now() - make_interval(secs => ${windowSeconds})`
  const [counts] = await db
    .select({
      requests: sql<number>`count(*)::int`,
      refused: sql<number>`count(*) filter (where ${telemetryIngestions.outcome} = 'refused')::int`,
      collectorFailed: sql<number>`count(*) filter (where ${telemetryIngestions.outcome} = 'collector_failed')::int`,
    })
    .from(telemetryIngestions)
    .where(and(workspaceRows(tenantId), gte(telemetryIngestions.createdAt, since)))
  const [last] = await db
    .select({ errorCode: telemetryIngestions.errorCode })
    .from(telemetryIngestions)
    .where(
      and(
        workspaceRows(tenantId),
        gte(telemetryIngestions.createdAt, since),
        isNotNull(telemetryIngestions.errorCode),
      ),
    )
    .orderBy(desc(telemetryIngestions.createdAt))
    .limit(1)
  return {
    ...(counts ?? { requests: 0, refused: 0, collectorFailed: 0 }),
    lastErrorCode: last?.errorCode ?? null,
  }
}

/**
 * The newest `perSignal` samples of each signal, newest first: one statement, three index scans
 * (tenant, time) that stop after `perSignal` rows each.
 */
export async function recentSamples(db: Drizzle, tenantId: string, perSignal: number) {
  const newest = (signal: OtlpSignal) =>
    db
      .select({
        id: telemetryIngestions.id,
        createdAt: telemetryIngestions.createdAt,
        requestId: telemetryIngestions.requestId,
        signal: telemetryIngestions.signal,
        items: telemetryIngestions.items,
        sample: telemetryIngestions.sample,
      })
      .from(telemetryIngestions)
      .where(
        and(
          workspaceRows(tenantId),
          eq(telemetryIngestions.signal, signal),
          isNotNull(telemetryIngestions.sample),
        ),
      )
      .orderBy(desc(telemetryIngestions.createdAt), desc(telemetryIngestions.id))
      .limit(perSignal)
  const [traces, metrics, logs] = OTLP_SIGNALS.map(newest) as [
    ReturnType<typeof newest>,
    ReturnType<typeof newest>,
    ReturnType<typeof newest>,
  ]
  const rows = await unionAll(traces, metrics, logs)
  return rows
    .map((row) => ({ ...row, sample: row.sample as ExportSample }))
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
}

export function totalsOf(db: Drizzle, tenantId: string) {
  return db.select().from(telemetryTotals).where(eq(telemetryTotals.tenantId, tenantId))
}
