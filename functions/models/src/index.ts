import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { modelsApp } from './models.app'

export default class ModelsWorker extends FamilyEntrypoint {
  protected readonly app = modelsApp
}
