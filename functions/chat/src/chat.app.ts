import { createFamilyApp } from '../../../shared/worker/family-app'
import type { ChatEnv } from './chat.context'
import { completionRoutes } from './completions'

export const chatApp = createFamilyApp<ChatEnv>()

completionRoutes(chatApp)
