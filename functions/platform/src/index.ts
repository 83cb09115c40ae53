import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { platformApp } from './platform.app'

export default class PlatformWorker extends FamilyEntrypoint {
  protected readonly app = platformApp
}
