import { createFamilyApp } from '../../../shared/worker/family-app'
import { ingestionStatusRoutes } from './ingestion-status'
import { observabilityTokenRoutes } from './observability-tokens'
import { otlpExportRoutes } from './otlp-export'
import type { TelemetryEnv } from './telemetry.context'

export const telemetryApp = createFamilyApp<TelemetryEnv>({ rawBodyPrefixes: ['/otlp/'] })

otlpExportRoutes(telemetryApp)
ingestionStatusRoutes(telemetryApp)
observabilityTokenRoutes(telemetryApp)
