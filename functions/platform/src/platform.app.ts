import { createFamilyApp } from '../../../shared/worker/family-app'
import { agentRunRoutes } from './agent-runs'
import { algorithmRoutes } from './algorithms'
import { apiKeyRoutes } from './api-keys'
import { auditLogRoutes } from './audit-log'
import { cryptoPolicyRoutes } from './crypto-policy'
import type { PlatformEnv } from './platform.context'
import { serviceAccountRoutes } from './service-accounts'
import { trustDocumentRoutes } from './trust-documents'
import { trustPageRoutes } from './trust-pages'
import { usageRoutes } from './usage'
import { usageStatementRoutes } from './usage-statement'
import { workspaceRoutes } from './workspace'

export const platformApp = createFamilyApp<PlatformEnv>()

cryptoPolicyRoutes(platformApp)
algorithmRoutes(platformApp)
serviceAccountRoutes(platformApp)
apiKeyRoutes(platformApp)
usageStatementRoutes(platformApp)
workspaceRoutes(platformApp)
usageRoutes(platformApp)
agentRunRoutes(platformApp)
auditLogRoutes(platformApp)
trustDocumentRoutes(platformApp)
trustPageRoutes(platformApp)
