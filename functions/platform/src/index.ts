import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { platformApp } from './platform.app'
import type { PlatformEnv } from './platform.context'

export { AuditLog } from '../../../durable-objects/audit-log/audit-log.do'

export default class PlatformWorker extends FamilyEntrypoint<PlatformEnv> {
  protected readonly app = platformApp
}
