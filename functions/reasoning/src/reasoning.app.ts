import { createFamilyApp } from '../../../shared/worker/family-app'
import { jobRoutes } from './jobs'
import { providerConnectionRoutes } from './provider-connections'
import type { ReasoningEnv } from './reasoning.context'

export const reasoningApp = createFamilyApp<ReasoningEnv>()

jobRoutes(reasoningApp)
providerConnectionRoutes(reasoningApp)
