import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'

export const telemetryApp = createFamilyApp<object>()

answerUnreleasedRoutes(telemetryApp, 'telemetry')
