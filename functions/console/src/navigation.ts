/** The console's sections in navigation order: the frame's menu, and the pages the browser test visits. */
export const NAV: readonly { section: string; href: string; label: string }[] = [
  { section: 'overview', href: '/console/overview', label: 'Overview' },
  { section: 'api-keys', href: '/console/api-keys', label: 'API keys' },
  { section: 'usage', href: '/console/usage', label: 'Usage' },
  { section: 'plans', href: '/console/billing/plans', label: 'Plans and billing' },
  { section: 'crypto-policy', href: '/console/crypto-policy', label: 'Crypto policy' },
  { section: 'audit-log', href: '/console/audit-log', label: 'Audit log' },
  { section: 'service-accounts', href: '/console/service-accounts', label: 'Service accounts' },
  { section: 'agent-runs', href: '/console/agent-runs', label: 'Agent runs' },
  { section: 'documents', href: '/console/documents', label: 'Documents' },
  { section: 'reasoning', href: '/console/reasoning', label: 'Reasoning jobs' },
  { section: 'telemetry', href: '/console/telemetry', label: 'Telemetry' },
]
