import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { modelsApp, modelsDirectRoutes } from './models.app'

export default class ModelsWorker extends FamilyEntrypoint {
  protected readonly app = modelsApp
  protected override readonly directRoutes = modelsDirectRoutes
}
