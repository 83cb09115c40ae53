/**
 * Forwarding to the configured OTLP/HTTP collector (OTLP_COLLECTOR_URL + /v1/<signal>), and what
 * its answer means for the client (the OTLP/HTTP spec's status mapping).
 *
 * The body goes out exactly as it came in (still compressed when it came compressed, with the
 * same Content-Encoding): any transformation belongs in the collector. The only headers are the
 * receiver's own; nothing the client sent is copied, so a client-sent X-Scope-OrgID or x-svc-*
 * header never reaches the collector. The tenant, region and environment travel in headers the
 * receiver sets from the authenticated request (TENANT_HEADERS), which the collector's
 * configuration (deploy/otel-collector.yaml) turns into resource attributes.
 */
import { readAnswerWithin } from '../../../../shared/http/bounded-answer'
import { AppError } from '../../../../shared/http/errors'
import type { TelemetrySettings } from '../telemetry.context'
import type { OtlpSignal } from './otlp-schema'
import type { ContentEncoding } from './request-body'

/** Most the collector's answer may decode to. */
const MAX_COLLECTOR_ANSWER_BYTES = 1024 * 1024

/** Headers the receiver sets for the collector (and strips from nothing: it copies none). */
export const TENANT_HEADERS = {
  /** Grafana Mimir / Loki / Tempo's tenant header, set by the gateway, never by the client. */
  orgId: 'X-Scope-OrgID',
  tenant: 'x-svc-tenant-id',
  environment: 'x-svc-deployment-environment',
  region: 'x-svc-cloud-region',
  requestId: 'x-svc-request-id',
} as const

export interface ForwardedExport {
  signal: OtlpSignal
  /** The payload as received (for gRPC: the framed message's bytes). */
  body: Uint8Array
  /** application/x-protobuf or application/json: the collector's two OTLP/HTTP types. */
  contentType: 'application/x-protobuf' | 'application/json'
  contentEncoding: ContentEncoding
  tenantId: string
  requestId: string
}

export interface CollectorAnswer {
  status: number
  body: Uint8Array
  contentType: string | null
  retryAfter: string | null
}

/** Retry-After for a retryable answer: the collector's when it gave one, else one second. */
function retryAfterOf(header: string | null): string {
  return header && /^\d+$/.test(header.trim()) ? header.trim() : '1'
}

function notConfigured(): AppError {
  return new AppError(
    503,
    'collector_not_configured',
    'No OTLP collector is configured for this deployment (OTLP_COLLECTOR_URL), so telemetry cannot be forwarded; nothing was accepted.',
  )
}

export function collectorUrl(settings: TelemetrySettings, signal: OtlpSignal): string {
  if (!settings.OTLP_COLLECTOR_URL) throw notConfigured()
  return `${settings.OTLP_COLLECTOR_URL.replace(/\/+$/, '')}/v1/${signal}`
}

/** The headers of a forwarded export: all the receiver's own, none of the client's. */
export function collectorHeaders(
  settings: TelemetrySettings,
  exported: ForwardedExport,
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': exported.contentType,
    [TENANT_HEADERS.orgId]: exported.tenantId,
    [TENANT_HEADERS.tenant]: exported.tenantId,
    [TENANT_HEADERS.environment]: settings.OTLP_DEPLOYMENT_ENVIRONMENT ?? 'development',
    [TENANT_HEADERS.region]: settings.OTLP_CLOUD_REGION ?? 'local',
    [TENANT_HEADERS.requestId]: exported.requestId,
  }
  if (exported.contentEncoding !== 'identity') headers['content-encoding'] = exported.contentEncoding
  if (settings.OTLP_COLLECTOR_AUTHORIZATION) headers.authorization = settings.OTLP_COLLECTOR_AUTHORIZATION
  return headers
}

/** Sends the export; resolves with any HTTP answer, throws 503/504 when there was none. */
export async function sendToCollector(
  settings: TelemetrySettings,
  exported: ForwardedExport,
): Promise<CollectorAnswer> {
  const url = collectorUrl(settings, exported.signal)
  const headers = collectorHeaders(settings, exported)
  const timeoutMs = settings.OTLP_COLLECTOR_TIMEOUT_MS
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), timeoutMs)
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: exported.body,
      signal: controller.signal,
    })
    // An Export…ServiceResponse is a few bytes; the answer is read within a cap, decoded, so a
    // collector's compressed answer never inflates past it (shared/http/bounded-answer.ts).
    const body = await readAnswerWithin(response, MAX_COLLECTOR_ANSWER_BYTES)
    if (body === null) {
      throw new AppError(
        502,
        'collector_failed',
        'The OTLP collector answered with more than 1 MiB, which no OTLP export response is; retry later.',
        { headers: { 'retry-after': '5' } },
      )
    }
    return {
      status: response.status,
      body,
      contentType: response.headers.get('content-type'),
      retryAfter: response.headers.get('retry-after'),
    }
  } catch (err) {
    if (err instanceof AppError) throw err
    if (controller.signal.aborted) {
      throw new AppError(
        504,
        'collector_timeout',
        `The OTLP collector did not answer within ${timeoutMs} ms; the export was not acknowledged. Retry later.`,
        { headers: { 'retry-after': '1' }, internalMessage: `collector ${url}: ${String(err)}` },
      )
    }
    throw new AppError(
      503,
      'collector_unreachable',
      'The OTLP collector cannot be reached right now; the export was not acknowledged. Retry later.',
      { headers: { 'retry-after': '1' }, internalMessage: `collector ${url}: ${String(err)}` },
    )
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The client's answer for a collector's non-2xx answer (OTLP/HTTP spec): 429, 502, 503 and 504
 * stay retryable with Retry-After; a refusal of the data itself (400, 413) is passed on as
 * not retryable; a collector refusing the receiver's own credential, or failing otherwise, is
 * the operator's problem: 502.
 */
export function collectorFailure(answer: CollectorAnswer): AppError {
  const { status } = answer
  const detail = `collector answered ${status}: ${new TextDecoder().decode(answer.body.subarray(0, 300))}`
  if (status === 429) {
    return new AppError(
      429,
      'collector_throttled',
      'The OTLP collector is throttling exports; retry after the Retry-After delay.',
      { headers: { 'retry-after': retryAfterOf(answer.retryAfter) }, internalMessage: detail },
    )
  }
  if (status === 503 || status === 502 || status === 504) {
    return new AppError(
      status === 504 ? 504 : 503,
      'collector_unavailable',
      `The OTLP collector is unavailable (it answered ${status}); the export was not acknowledged. Retry after the Retry-After delay.`,
      { headers: { 'retry-after': retryAfterOf(answer.retryAfter) }, internalMessage: detail },
    )
  }
  if (status === 400 || status === 413) {
    return new AppError(
      status,
      'collector_rejected_export',
      `The OTLP collector refused this export as ${status === 413 ? 'too large' : 'invalid'} (${status}); do not retry it unchanged.`,
      { internalMessage: detail },
    )
  }
  return new AppError(
    502,
    'collector_failed',
    `The OTLP collector answered ${status}; the export was not acknowledged. Retry later; if it persists, the operator must check the collector.`,
    { headers: { 'retry-after': '5' }, internalMessage: detail },
  )
}
