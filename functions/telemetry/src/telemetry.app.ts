import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'
import { ingestionStatusRoutes } from './ingestion-status'
import { observabilityTokenRoutes } from './observability-tokens'
import { otlpExportRoutes } from './otlp-export'
import type { TelemetryEnv } from './telemetry.context'

export const telemetryApp = createFamilyApp<TelemetryEnv>({ rawBodyPrefixes: ['/otlp/'] })

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
