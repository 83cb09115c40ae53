import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'

export const platformApp = createFamilyApp<object>()

answerUnreleasedRoutes(platformApp, 'platform')
