import { createFamilyApp } from '../../../shared/worker/family-app'
import type { AuthEnv } from './auth.context'
import { jwksRoutes } from './jwks'
import { loginRoutes } from './login'
import { oauthRoutes } from './oauth/oauth-routes'
import { refreshRoutes } from './refresh'
import { serviceTokenRoutes } from './service-token'

export const authApp = createFamilyApp<AuthEnv>()

serviceTokenRoutes(authApp)
loginRoutes(authApp)
refreshRoutes(authApp)
jwksRoutes(authApp)
oauthRoutes(authApp)
