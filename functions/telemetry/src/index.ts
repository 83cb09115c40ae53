import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { telemetryApp } from './telemetry.app'
import type { TelemetryEnv } from './telemetry.context'

export default class TelemetryWorker extends FamilyEntrypoint<TelemetryEnv> {
  protected readonly app = telemetryApp
}
