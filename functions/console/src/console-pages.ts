/** Every console page, in navigation order (the frame's NAV in navigation.ts lists them). */
import type { Hono } from 'hono'
import type { ConsoleApp } from './console.context'
import { agentRunPages } from './pages/agent-runs'
import { apiKeyDetailPages } from './pages/api-key'
import { apiKeyPages } from './pages/api-keys'
import { auditLogPages } from './pages/audit-log'
import { cryptoPolicyPages } from './pages/crypto-policy'
import { documentPages } from './pages/documents'
import { overviewPages } from './pages/overview'
import { planPages } from './pages/plans'
import { reasoningPages } from './pages/reasoning'
import { serviceAccountPages } from './pages/service-accounts'
import { signInPages } from './pages/sign-in'
import { telemetryPages } from './pages/telemetry'
import { usagePages } from './pages/usage'

export function registerConsolePages(app: Hono<ConsoleApp>): void {
  signInPages(app)
  overviewPages(app)
  apiKeyPages(app)
  apiKeyDetailPages(app)
  usagePages(app)
  planPages(app)
  cryptoPolicyPages(app)
  auditLogPages(app)
  serviceAccountPages(app)
  agentRunPages(app)
  documentPages(app)
  reasoningPages(app)
  telemetryPages(app)
}
