import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { codeApp } from './code.app'

export default class CodeWorker extends FamilyEntrypoint {
  protected readonly app = codeApp
}
