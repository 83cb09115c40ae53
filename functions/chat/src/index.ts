import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { chatApp } from './chat.app'
import type { ChatEnv } from './chat.context'

export default class ChatWorker extends FamilyEntrypoint<ChatEnv> {
  protected readonly app = chatApp
}
