import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'

export const reasoningApp = createFamilyApp<object>()

answerUnreleasedRoutes(reasoningApp, 'reasoning')
