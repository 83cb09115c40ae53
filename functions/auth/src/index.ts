import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { authApp } from './auth.app'

export default class AuthWorker extends FamilyEntrypoint {
  protected readonly app = authApp
}
