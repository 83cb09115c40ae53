import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'
import { documentRoutes } from './documents'
import { feedbackRoutes } from './feedback'
import type { KnowledgeEnv } from './knowledge.context'
import { memoryRoutes } from './memories'

export const knowledgeApp = createFamilyApp<KnowledgeEnv>()

feedbackRoutes(knowledgeApp)
memoryRoutes(knowledgeApp)
documentRoutes(knowledgeApp)
answerUnreleasedRoutes(knowledgeApp, 'knowledge', [
  'POST /svc/feedback',
  'GET /svc/memories',
  'POST /svc/memories',
  'POST /svc/memories/search',
  'GET /svc/documents',
  'POST /svc/documents/upload',
  'POST /svc/documents/retrieve',
  'GET /svc/documents/:id',
  'DELETE /svc/documents/:id',
])
