import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import { knowledgeApp } from './knowledge.app'
import type { KnowledgeEnv } from './knowledge.context'

export default class KnowledgeWorker extends FamilyEntrypoint<KnowledgeEnv> {
  protected readonly app = knowledgeApp
}
