import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'
import { feedbackRoutes } from './feedback'
import type { KnowledgeEnv } from './knowledge.context'
import { memoryRoutes } from './memories'

export const knowledgeApp = createFamilyApp<KnowledgeEnv>()

feedbackRoutes(knowledgeApp)
memoryRoutes(knowledgeApp)
answerUnreleasedRoutes(knowledgeApp, 'knowledge', [
  'POST /svc/feedback',
  'GET /svc/memories',
  'POST /svc/memories',
  'POST /svc/memories/search',
])
