import { createFamilyApp } from '../../../shared/worker/family-app'
import { documentRoutes } from './documents'
import { feedbackRoutes } from './feedback'
import type { KnowledgeEnv } from './knowledge.context'
import { memoryRoutes } from './memories'

export const knowledgeApp = createFamilyApp<KnowledgeEnv>()

feedbackRoutes(knowledgeApp)
memoryRoutes(knowledgeApp)
documentRoutes(knowledgeApp)
