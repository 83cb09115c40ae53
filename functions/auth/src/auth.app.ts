import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'

export const authApp = createFamilyApp<object>()

answerUnreleasedRoutes(authApp, 'auth')
