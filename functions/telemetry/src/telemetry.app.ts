import {
  isOtlpPath,
  OTLP_PATH_PREFIX,
  otlpErrorResponse,
  otlpResponseEncoding,
} from '../../../shared/telemetry/otlp-errors'
import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'
import { ingestionStatusRoutes } from './ingestion-status'
import { observabilityTokenRoutes } from './observability-tokens'
import { otlpExportRoutes } from './otlp-export'
import type { TelemetryEnv } from './telemetry.context'

/** OTLP routes answer refusals in the request's encoding (as the gateway does on /otlp/*). */
export const telemetryApp = createFamilyApp<TelemetryEnv>({
  rawBodyPrefixes: [OTLP_PATH_PREFIX],
  renderError: (c, error, requestId) =>
    isOtlpPath(c.req.path)
      ? otlpErrorResponse(otlpResponseEncoding(c.req.header('content-type') ?? null), error, requestId)
      : error.toResponse(requestId),
})

otlpExportRoutes(telemetryApp)
ingestionStatusRoutes(telemetryApp)
observabilityTokenRoutes(telemetryApp)
// Every telemetry route is served above; a route added to the table before its handler answers 501.
answerUnreleasedRoutes(telemetryApp, 'telemetry', [
  'POST /otlp/v1/traces',
  'POST /otlp/v1/metrics',
  'POST /otlp/v1/logs',
  'GET /platform/v1/telemetry/ingestions',
  'GET /platform/v1/telemetry/status',
  'GET /platform/v1/observability-tokens',
  'POST /platform/v1/observability-tokens',
  'POST /platform/v1/observability-tokens/:tokenId/rotate',
  'DELETE /platform/v1/observability-tokens/:tokenId',
])
