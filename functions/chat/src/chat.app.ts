import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'

export const chatApp = createFamilyApp<object>()

answerUnreleasedRoutes(chatApp, 'chat')
