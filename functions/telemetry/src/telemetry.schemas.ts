import { z } from '@hono/zod-openapi'
import { ListCursorSchema } from '../../../shared/db/list-cursor'
import { INGESTION_OUTCOMES, OTLP_SIGNALS } from '../../../shared/db/schema'

export const IngestionResultSchema = z
  .object({
    id: z.string().uuid(),
    object: z.literal('telemetry.ingestion'),
    created_at: z.string(),
    request_id: z.string(),
    signal: z.enum(OTLP_SIGNALS),
    encoding: z.string().openapi({ description: 'protobuf, json or grpc' }),
    content_encoding: z.string().openapi({ description: 'identity, gzip or deflate' }),
    items: z
      .number()
      .int()
      .openapi({ description: 'Spans, metric data points or log records in the export' }),
    rejected_items: z
      .number()
      .int()
      .openapi({ description: 'Items the collector rejected (its partial_success)' }),
    received_bytes: z.number().int(),
    decoded_bytes: z.number().int().openapi({ description: 'After decompression' }),
    outcome: z.enum(INGESTION_OUTCOMES),
    status: z.number().int().openapi({ description: 'What the receiver answered (HTTP status)' }),
    error_code: z.string().nullable(),
    collector_status: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The collector's HTTP status; null when nothing reached it" }),
    principal: z.string(),
    duration_ms: z.number().int(),
  })
  .openapi('TelemetryIngestion')

export const IngestionTotalsSchema = z
  .object({
    signal: z.enum(OTLP_SIGNALS),
    requests: z.number().int(),
    forwarded_requests: z.number().int(),
    failed_requests: z.number().int(),
    items: z.number().int().openapi({ description: 'Items forwarded' }),
    rejected_items: z.number().int(),
    received_bytes: z.number().int(),
    decoded_bytes: z.number().int(),
    last_ingested_at: z.string().nullable(),
  })
  .openapi('TelemetryTotals')

export const IngestionListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(IngestionResultSchema),
    has_more: z.boolean(),
    totals: z.array(IngestionTotalsSchema),
  })
  .openapi('TelemetryIngestionList')

export const IngestionListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: ListCursorSchema,
  signal: z.enum(OTLP_SIGNALS).optional(),
})

/** Attribute values in a sample: strings cut to 100 characters, lists and maps written as short JSON. */
const SampleAttributesSchema = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
  .openapi({ description: 'At most 6 attributes of the item (keys up to 64, values up to 100 characters)' })

export const SpanSampleSchema = z
  .object({
    service: z.string().nullable().openapi({ description: "The resource's service.name" }),
    name: z.string(),
    kind: z.enum(['unspecified', 'internal', 'server', 'client', 'producer', 'consumer']),
    trace_id: z.string().openapi({ description: 'Hex; empty when the emitter sent none' }),
    span_id: z.string(),
    start_time: z.string().nullable().openapi({ description: 'ISO 8601; null when the emitter sent none' }),
    duration_ms: z.number().nullable().openapi({ description: 'end − start, to the microsecond' }),
    status: z.enum(['unset', 'ok', 'error']),
    attributes: SampleAttributesSchema,
  })
  .openapi('TelemetrySpanSample')

export const MetricSampleSchema = z
  .object({
    service: z.string().nullable(),
    name: z.string(),
    unit: z.string(),
    type: z.enum(['gauge', 'sum', 'histogram', 'exponential_histogram', 'summary', 'empty']),
    points: z.number().int().openapi({ description: 'Data points of the metric in this export' }),
    value: z.number().nullable().openapi({
      description:
        'The first data point: its value (gauge, sum), or the sum of its observations (histograms, summary)',
    }),
    count: z
      .number()
      .nullable()
      .openapi({ description: 'Observations in the first data point (histograms, summary)' }),
    attributes: SampleAttributesSchema.openapi({
      description: "The first data point's attributes (at most 6)",
    }),
  })
  .openapi('TelemetryMetricSample')

export const LogSampleSchema = z
  .object({
    service: z.string().nullable(),
    time: z
      .string()
      .nullable()
      .openapi({ description: 'ISO 8601: the time of the event, else when it was observed' }),
    severity: z
      .string()
      .openapi({ description: 'severity_text, else named from severity_number (INFO, ERROR…)' }),
    body: z.string().openapi({ description: 'Up to 160 characters; structured bodies as short JSON' }),
    trace_id: z.string().nullable(),
    attributes: SampleAttributesSchema,
  })
  .openapi('TelemetryLogSample')

/** What an accepted export is kept as (with its ingestion result), by signal. */
export type ExportSample =
  | { signal: 'traces'; spans: z.infer<typeof SpanSampleSchema>[]; truncated: boolean }
  | { signal: 'metrics'; metrics: z.infer<typeof MetricSampleSchema>[]; truncated: boolean }
  | { signal: 'logs'; records: z.infer<typeof LogSampleSchema>[]; truncated: boolean }

const sampledExport = {
  ingestion_id: z.string().uuid(),
  created_at: z.string(),
  request_id: z.string(),
  items: z.number().int().openapi({ description: 'Items in the whole export' }),
  truncated: z.boolean().openapi({ description: 'The export had more than the sample keeps' }),
}

export const RecentTelemetrySchema = z
  .object({
    object: z.literal('telemetry.recent'),
    traces: z.array(z.object({ ...sampledExport, spans: z.array(SpanSampleSchema) })),
    metrics: z.array(z.object({ ...sampledExport, metrics: z.array(MetricSampleSchema) })),
    logs: z.array(z.object({ ...sampledExport, records: z.array(LogSampleSchema) })),
  })
  .openapi('TelemetryRecent')

export const RecentTelemetryQuerySchema = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(20)
    .default(5)
    .openapi({ description: 'Exports per signal, newest first (1–20, default 5)' }),
})

export const TelemetryStatusSchema = z
  .object({
    object: z.literal('telemetry.status'),
    collector: z.object({
      configured: z.boolean(),
      endpoint: z.string().nullable().openapi({ description: 'Scheme, host and port of OTLP_COLLECTOR_URL' }),
      reachable: z
        .boolean()
        .nullable()
        .openapi({ description: 'Result of an empty export sent now; null when not configured' }),
      probe_status: z.number().int().nullable(),
      probe_ms: z.number().int().nullable(),
      detail: z.string().nullable(),
    }),
    recent: z.object({
      window_seconds: z.number().int(),
      requests: z.number().int(),
      refused: z
        .number()
        .int()
        .openapi({ description: 'Exports refused as invalid (the sender must fix them)' }),
      collector_failed: z
        .number()
        .int()
        .openapi({ description: 'Exports the collector did not take (retryable)' }),
      error_rate: z
        .number()
        .openapi({ description: '(refused + collector_failed) / requests in the window; 0 when none' }),
      last_error_code: z.string().nullable(),
    }),
    retry_queue: z.object({
      depth: z.literal(0),
      detail: z.string(),
    }),
  })
  .openapi('TelemetryStatus')

export const ObservabilityTokenSchema = z
  .object({
    id: z.string().uuid(),
    object: z.literal('observability_token'),
    name: z.string(),
    suffix: z.string().openapi({ description: 'Last four characters of the token' }),
    created_by: z.string().nullable(),
    created_at: z.string(),
    rotated_at: z.string().nullable(),
    last_used_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
  })
  .openapi('ObservabilityToken')

export const ObservabilityTokenWithSecretSchema = ObservabilityTokenSchema.extend({
  token: z.string().openapi({
    description: 'svc_ot_…: shown only in this answer; send it as Authorization: Bearer on /otlp/v1/*',
  }),
}).openapi('ObservabilityTokenWithSecret')

export const ObservabilityTokenListSchema = z
  .object({ object: z.literal('list'), data: z.array(ObservabilityTokenSchema) })
  .openapi('ObservabilityTokenList')

export const ObservabilityTokenCreateSchema = z
  .object({
    name: z
      .string()
      .trim()
      .min(1, 'name must not be empty')
      .max(120, 'name must be at most 120 characters')
      .openapi({ example: 'production collector' }),
  })
  .strict()
  .openapi('ObservabilityTokenCreate')

export const ObservabilityTokenParamsSchema = z.object({
  tokenId: z.string().uuid({ message: 'tokenId must be a UUID' }),
})
