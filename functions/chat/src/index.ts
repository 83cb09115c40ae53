import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { chatApp } from './chat.app'

export default class ChatWorker extends FamilyEntrypoint {
  protected readonly app = chatApp
}
