/**
 * POST /otlp/v1/{traces,metrics,logs}: one OTLP export, end to end.
 *
 *   1. content type → encoding (415 otherwise), Content-Encoding (415 otherwise)
 *   2. the body within the route's limit, then decompressed within the same limit (413), inflating
 *      no more than the limit whatever the body would expand to
 *   3. gRPC: exactly one length-prefixed message (400 otherwise)
 *   4. validated and counted (400 in the request's encoding, nothing forwarded)
 *   5. no collector configured: 503 (after 1-4, so a bomb is 413 whatever is configured)
 *   6. forwarded as received to the collector with the tenant in the receiver's own headers
 *   7. the collector's answer mapped (OTLP/HTTP: 429/502/503/504 retryable with Retry-After)
 *   8. the result stored with the tenant's totals, then answered: a 200 means the collector took
 *      the export and its result is retained (a store failure after forwarding is a 503, so the
 *      client retries: at least once, as OTLP delivery is)
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { AppError, toAppError } from '../../../shared/http/errors'
import { openMeter } from '../../../shared/metering/metering-client'
import { meterToolCall } from '../../../shared/metering/tool-metering'
import { resolvePlan } from '../../../shared/plans/plan-catalog'
import {
  OTLP_ACCEPTED_TYPES_TEXT,
  OTLP_MEDIA_TYPES,
  type OtlpEncoding,
  otlpEncodingOf,
} from '../../../shared/telemetry/otlp-content-types'
import { otlpResponseEncoding, otlpResponseMediaType } from '../../../shared/telemetry/otlp-errors'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { principalId } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { type IngestionOutcome, recordIngestion } from './ingestion-store'
import { collectorFailure, collectorUrl, sendToCollector } from './otlp/collector'
import { sampleOfJson, sampleOfProtobuf } from './otlp/export-sample'
import { unframe } from './otlp/grpc'
import { countJsonItems, rejectedInJsonResponse } from './otlp/otlp-json'
import { countProtobufItems, OtlpDecodeError, rejectedInProtobufResponse } from './otlp/otlp-protobuf'
import { successResponse } from './otlp/otlp-responses'
import { type OtlpSignal, SIGNAL_REQUEST, SIGNALS } from './otlp/otlp-schema'
import { type ContentEncoding, contentEncodingOf, decompress, readRawBody } from './otlp/request-body'
import { meteringOf, type TelemetryEnv, telemetrySettings } from './telemetry.context'
import type { ExportSample } from './telemetry.schemas'

type TelemetryContext = Context<FamilyEnv<TelemetryEnv>>

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

/** What the receiver learned about an export so far (recorded whatever the outcome). */
interface ExportFacts {
  encoding: OtlpEncoding
  contentEncoding: ContentEncoding
  items: number
  rejectedItems: number
  receivedBytes: number
  decodedBytes: number
  collectorStatus: number | null
  /** What the workspace sees of the export once the collector took it (export-sample.ts). */
  sample: ExportSample | null
}

function encodingOf(c: TelemetryContext): OtlpEncoding {
  const type = c.req.header('content-type') ?? null
  const encoding = otlpEncodingOf(type)
  if (!encoding) {
    throw new AppError(
      415,
      'unsupported_media_type',
      `OTLP exports take one of ${OTLP_ACCEPTED_TYPES_TEXT}; got ${type ?? 'no Content-Type'}.`,
      { param: 'content-type' },
    )
  }
  return encoding
}

function responseEncodingOf(c: Context): OtlpEncoding {
  return otlpResponseEncoding(c.req.header('content-type') ?? null)
}

function invalid(signal: OtlpSignal, err: OtlpDecodeError, encoding: OtlpEncoding): AppError {
  const what = SIGNAL_REQUEST[signal].message
  return new AppError(
    400,
    'invalid_otlp_payload',
    `The body is not a valid ${what} in ${encoding === 'json' ? 'OTLP JSON' : 'protobuf'}: ${err.message} at ${err.path}. Nothing was forwarded.`,
    { param: err.path },
  )
}

/** gRPC message compression (grpc-encoding); the framing's flag says whether it applies. */
function grpcEncodingOf(header: string | null): ContentEncoding {
  const value = (header ?? 'identity').trim().toLowerCase()
  if (value === 'gzip' || value === 'deflate' || value === 'identity') return value
  throw new AppError(
    415,
    'unsupported_grpc_encoding',
    `grpc-encoding "${header}" is not supported; use gzip or identity.`,
    {
      param: 'grpc-encoding',
    },
  )
}

async function decodeExport(
  c: TelemetryContext,
  signal: OtlpSignal,
  facts: ExportFacts,
  limit: number,
): Promise<{ payload: Uint8Array; payloadEncoding: ContentEncoding }> {
  const raw = await readRawBody(c.req.raw.body, limit, c.req.header('content-length') ?? null)
  facts.receivedBytes = raw.byteLength
  let payload = raw
  let payloadEncoding = facts.contentEncoding
  if (facts.encoding === 'grpc') {
    const framed = unframe(raw)
    payload = framed.message
    payloadEncoding = framed.compressed ? grpcEncodingOf(c.req.header('grpc-encoding') ?? null) : 'identity'
    if (framed.compressed && payloadEncoding === 'identity') {
      throw new AppError(
        400,
        'invalid_grpc_framing',
        'The gRPC message is flagged compressed but grpc-encoding names none.',
      )
    }
  }
  const decoded = decompress(payload, payloadEncoding, limit)
  facts.decodedBytes = decoded.byteLength
  const message = SIGNAL_REQUEST[signal].message
  try {
    if (facts.encoding === 'json') {
      let parsed: unknown
      try {
        parsed = JSON.parse(utf8.decode(decoded))
      } catch (err) {
        throw new AppError(
          400,
          'invalid_otlp_payload',
          `The body is not valid UTF-8 JSON (${err instanceof Error ? err.message : String(err)}); OTLP JSON is one ${message} object. Nothing was forwarded.`,
        )
      }
      facts.items = countJsonItems(parsed, message)
      facts.sample = sampleOfJson(signal, parsed)
    } else {
      facts.items = countProtobufItems(decoded, message)
      facts.sample = sampleOfProtobuf(signal, decoded, message)
    }
  } catch (err) {
    if (err instanceof OtlpDecodeError) throw invalid(signal, err, facts.encoding)
    throw err
  }
  return { payload, payloadEncoding }
}

/**
 * A refusal as an OTLP exporter should read it: OTLP clients act on the status and Retry-After,
 * not on the x-ratelimit-* headers of the model API (which describe the model requests' windows,
 * not ingestion's), so those are dropped. A 429 always says when to retry (OTLP/HTTP: retryable
 * with Retry-After): a used-up monthly byte allowance says when the month resets.
 */
function asOtlpRefusal(error: AppError): AppError {
  for (const name of Object.keys(error.headers)) {
    if (name.toLowerCase().startsWith('x-ratelimit-')) delete error.headers[name]
  }
  if (error.status === 429 && error.headers['retry-after'] === undefined) {
    const resetsAt = (
      error.extraBody?.svc_upgrade as { binding_limit?: { resets_at?: string | null } } | undefined
    )?.binding_limit?.resets_at
    const seconds = resetsAt ? Math.ceil((Date.parse(resetsAt) - Date.now()) / 1000) : Number.NaN
    error.headers['retry-after'] = String(Number.isFinite(seconds) && seconds > 0 ? seconds : 60)
  }
  return error
}

async function exportSignal(c: TelemetryContext, signal: OtlpSignal): Promise<Response> {
  const started = Date.now()
  const identity = identityOf(c)
  const request = c.get('request')
  const settings = telemetrySettings(c.env)
  const facts: ExportFacts = {
    encoding: responseEncodingOf(c),
    contentEncoding: 'identity',
    items: 0,
    rejectedItems: 0,
    receivedBytes: 0,
    decodedBytes: 0,
    collectorStatus: null,
    sample: null,
  }
  const record = (outcome: IngestionOutcome, status: number, errorCode: string | null) =>
    withRequestDatabase(c, 'telemetry', (db) =>
      recordIngestion(
        db,
        {
          tenantId: identity.tenantId,
          requestId: request.requestId,
          signal,
          encoding: facts.encoding,
          contentEncoding: facts.contentEncoding,
          items: facts.items,
          rejectedItems: facts.rejectedItems,
          receivedBytes: facts.receivedBytes,
          decodedBytes: facts.decodedBytes,
          outcome,
          status,
          errorCode,
          collectorStatus: facts.collectorStatus,
          principal: principalId(identity),
          durationMs: Date.now() - started,
          // Kept only for what the collector took: the workspace's view of what it received.
          sample: outcome === 'forwarded' || outcome === 'partially_rejected' ? facts.sample : null,
        },
        settings.OTLP_RESULTS_RETAINED,
      ),
    )

  let answer: Awaited<ReturnType<typeof sendToCollector>>
  try {
    facts.encoding = encodingOf(c)
    facts.contentEncoding = contentEncodingOf(c.req.header('content-encoding') ?? null)
    // The body is read and checked first, so a refusal for what was sent (400, 413) does not
    // depend on the deployment's configuration; reading it costs at most the limit (request-body.ts).
    const { payload, payloadEncoding } = await decodeExport(c, signal, facts, request.maxBodyBytes)
    collectorUrl(settings, signal) // 503 before the export is metered or forwarded
    // Admitted by the tenant's RateLimiter (exports and bytes per minute, the monthly byte
    // allowance) before anything is forwarded; the bytes are recorded in the usage ledger once
    // the collector took them, released when it did not.
    const { catalog } = resolvePlan(c.env, identity.planId)
    const meter = openMeter(meteringOf(c.env), identity, 'telemetry.otlp')
    const metered = await meterToolCall(
      meter,
      catalog,
      { requestId: request.requestId, tool: 'telemetry_ingest', estimatedQuantity: facts.decodedBytes },
      async () => {
        const sent = await sendToCollector(settings, {
          signal,
          body: payload,
          contentType: facts.encoding === 'json' ? 'application/json' : 'application/x-protobuf',
          contentEncoding: payloadEncoding,
          tenantId: identity.tenantId,
          requestId: request.requestId,
        })
        facts.collectorStatus = sent.status
        if (sent.status < 200 || sent.status > 299) throw collectorFailure(sent)
        return { result: sent, quantity: facts.decodedBytes, estimated: false, provider: 'otlp-collector' }
      },
    )
    answer = metered.result
  } catch (err) {
    const error = asOtlpRefusal(toAppError(err))
    const outcome: IngestionOutcome =
      facts.collectorStatus !== null || error.code.startsWith('collector_') ? 'collector_failed' : 'refused'
    // The refusal stands even when it cannot be recorded.
    await record(outcome, error.status, error.code).catch(() => {})
    throw error
  }

  const partial =
    facts.encoding === 'json'
      ? rejectedInJsonResponse(new TextDecoder().decode(answer.body))
      : rejectedInProtobufResponse(answer.body)
  facts.rejectedItems = partial.rejected
  await record(partial.rejected > 0 ? 'partially_rejected' : 'forwarded', 200, null)
  return successResponse(
    facts.encoding,
    otlpResponseMediaType(c.req.header('content-type') ?? null),
    answer,
    {
      'x-request-id': request.requestId,
    },
  )
}

const ExportRequestBody = z.string().openapi({
  type: 'string',
  format: 'binary',
  description:
    'An OTLP Export request (ExportTraceServiceRequest, ExportMetricsServiceRequest or ExportLogsServiceRequest of opentelemetry-proto v1) in protobuf, OTLP JSON, or one gRPC length-prefixed message; optionally gzip or deflate (Content-Encoding). At most 8 MiB after decompression.',
})

export function otlpExportRoutes(app: OpenAPIHono<FamilyEnv<TelemetryEnv>>): void {
  for (const signal of SIGNALS) {
    const path = `/otlp/v1/${signal}`
    const binary = { schema: ExportRequestBody }
    app.openAPIRegistry.registerPath(
      createRoute({
        method: 'post',
        path,
        tags: ['Telemetry'],
        summary: `Export OTLP ${signal} (forwarded byte for byte to the configured collector)`,
        description: `Needs an observability token or an access token with audience internal-service. A 200 means the collector accepted the export (its partial_success passed through; counted in ${SIGNAL_REQUEST[signal].items}) and the ingestion result is retained; it does not mean the collector indexed it. Metered per tenant in bytes after decompression (exports and bytes per minute, a monthly byte allowance). Errors, the gateway's included, are google.rpc.Status in the request's encoding (gRPC: grpc-status headers); 429, 502, 503 and 504 are retryable after Retry-After.`,
        request: {
          body: {
            required: true,
            // Every media type the receiver takes (shared/telemetry/otlp-content-types.ts).
            content: Object.fromEntries(Object.keys(OTLP_MEDIA_TYPES).map((type) => [type, binary])),
          },
        },
        responses: {
          200: {
            description: `Export${signal[0]!.toUpperCase()}${signal.slice(1)}ServiceResponse in the request's encoding`,
          },
          400: { description: 'Malformed payload, framing or compression (nothing forwarded)' },
          401: { description: 'No credential, or an unknown or revoked observability token' },
          403: {
            description:
              'An access token of another audience, an API key, another tenant named, or a crypto-policy block',
          },
          413: { description: 'Over 8 MiB, counted after decompression' },
          415: { description: `Content-Type other than ${OTLP_ACCEPTED_TYPES_TEXT}` },
          429: {
            description:
              "The plan's exports or bytes per minute (rate_limited), the month's byte allowance (tier_allowance_exhausted), or the collector throttles; retry after Retry-After",
          },
          503: {
            description:
              'No collector configured, it is unreachable or unavailable, or usage limits cannot be checked; retry after Retry-After',
          },
        },
      }),
    )
    // Refusals are rendered by the worker's one onError, in the request's encoding (telemetry.app.ts).
    app.post(path, (c) => exportSignal(c, signal))
  }
}
