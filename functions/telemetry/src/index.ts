import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { telemetryApp } from './telemetry.app'

export default class TelemetryWorker extends FamilyEntrypoint {
  protected readonly app = telemetryApp
}
