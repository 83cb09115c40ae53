import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { reasoningApp } from './reasoning.app'

export default class ReasoningWorker extends FamilyEntrypoint {
  protected readonly app = reasoningApp
}
