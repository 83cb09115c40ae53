import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { platformApp, platformDirectRoutes } from './platform.app'
import type { PlatformEnv } from './platform.context'

export default class PlatformWorker extends FamilyEntrypoint<PlatformEnv> {
  protected readonly app = platformApp
  protected override readonly directRoutes = platformDirectRoutes
}
