import { createFamilyApp } from '../../../shared/worker/family-app'
import type { McpEnv } from './mcp.context'
import { mcpEndpointRoutes } from './mcp-endpoint'
import { protectedResourceRoutes } from './protected-resource'

export const mcpApp = createFamilyApp<McpEnv>()

protectedResourceRoutes(mcpApp)
mcpEndpointRoutes(mcpApp)
