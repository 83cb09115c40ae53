import { isOtlpPath, OTLP_PATH_PREFIX, otlpErrorResponse } from '../../../shared/telemetry/otlp-errors'
import { createFamilyApp } from '../../../shared/worker/family-app'
import { ingestionStatusRoutes } from './ingestion-status'
import { observabilityTokenRoutes } from './observability-tokens'
import { otlpExportRoutes } from './otlp-export'
import type { TelemetryEnv } from './telemetry.context'

/** OTLP routes answer refusals in the request's encoding (as the gateway does on /otlp/*). */
export const telemetryApp = createFamilyApp<TelemetryEnv>({
  rawBodyPrefixes: [OTLP_PATH_PREFIX],
  renderError: (c, error, requestId) =>
    isOtlpPath(c.req.path)
      ? otlpErrorResponse(c.req.header('content-type') ?? null, error, requestId)
      : error.toResponse(requestId),
})

otlpExportRoutes(telemetryApp)
ingestionStatusRoutes(telemetryApp)
observabilityTokenRoutes(telemetryApp)
