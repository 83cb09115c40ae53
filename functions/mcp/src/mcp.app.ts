import { createFamilyApp } from '../../../shared/worker/family-app'
import { answerUnreleasedRoutes } from '../../../shared/worker/unreleased-routes'
import { type McpEnv, protectedResourceRoutes } from './protected-resource'

export const mcpApp = createFamilyApp<McpEnv>()

protectedResourceRoutes(mcpApp)
answerUnreleasedRoutes(mcpApp, 'mcp', [
  'GET /oauth/protected-resource',
  'GET /.well-known/oauth-protected-resource',
  'GET /.well-known/oauth-protected-resource/mcp',
])
