import { createFamilyApp } from '../../../shared/worker/family-app'
import type { CodeEnv } from './code.context'
import { runRoutes } from './runs'
import { searchRoutes } from './search'
import { transcribeRoutes } from './transcribe'
import { turnRoutes } from './turns'

export const codeApp = createFamilyApp<CodeEnv>()

turnRoutes(codeApp)
runRoutes(codeApp)
searchRoutes(codeApp)
transcribeRoutes(codeApp)
