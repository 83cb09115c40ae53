import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'

export const codeApp = createFamilyApp<object>()

answerUnreleasedRoutes(codeApp, 'code')
