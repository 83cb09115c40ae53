/**
 * Scopes narrow what a credential (API key or service account) may call. A credential without
 * scopes may call everything its role allows; one with scopes only the routes one of them names.
 * The gateway applies this to every credential route (403 `insufficient_scope`), so a key made for
 * a chat backend cannot administer the workspace. The spec leaves scope names open ("Scope
 * names ... not shown"); these are the product's, one read and one write scope per area, and the
 * MCP names the protected-resource metadata advertises.
 */
import type { RouteSpec } from '../routing/route-table'

export const SCOPES = {
  'models:read': 'the model catalog (public anyway; named by MCP clients)',
  'chat:write': 'chat completions',
  'agents:write': 'agent turns and runs, web search, transcription',
  'knowledge:read': 'list documents and memories, retrieve, search',
  'knowledge:write': 'everything knowledge:read does, plus upload documents, write memories, feedback',
  'reasoning:read': 'list and read quantum-reasoning jobs',
  'reasoning:write': 'everything reasoning:read does, plus create and cancel jobs',
  'mcp:tools': 'the MCP endpoint (tools)',
  'mcp:resources': 'the MCP endpoint (resources)',
  'telemetry:write': 'OTLP ingestion',
  'platform:read': 'read the crypto policy, registry, audit log, keys and accounts',
  'platform:write': 'everything platform:read does, plus change them (still subject to the role)',
} as const satisfies Record<string, string>

export type Scope = keyof typeof SCOPES
export const SCOPE_NAMES = Object.keys(SCOPES) as [Scope, ...Scope[]]

/**
 * The scopes any one of which lets a scoped credential call `route` (empty: no scope needed), from
 * its declaration: its family and method, and `scope` where the route says more (a POST that only
 * reads, a route any scope opens). Nothing here matches paths.
 */
export function scopesFor(
  route: Pick<RouteSpec, 'family' | 'method' | 'scope' | 'credentials'>,
): readonly Scope[] {
  if (route.scope === 'any') return SCOPE_NAMES
  const reads = route.method === 'GET' || route.scope === 'read'
  switch (route.family) {
    case 'chat':
      return ['chat:write']
    case 'code':
      return ['agents:write']
    case 'knowledge':
      return reads ? ['knowledge:read', 'knowledge:write'] : ['knowledge:write']
    case 'reasoning':
      return reads ? ['reasoning:read', 'reasoning:write'] : ['reasoning:write']
    case 'mcp':
      return ['mcp:tools', 'mcp:resources']
    case 'telemetry':
      // OTLP ingestion; the family's /platform/v1 routes (results, status, observability tokens)
      // are workspace administration like the platform family's.
      if (route.credentials === 'ingestion') return ['telemetry:write']
      return reads ? ['platform:read', 'platform:write'] : ['platform:write']
    case 'platform':
      return reads ? ['platform:read', 'platform:write'] : ['platform:write']
    case 'models':
    case 'auth':
    case 'console':
      return []
  }
}

/** Whether a credential holding `held` (empty = unrestricted) may call a route needing one of `needed`. */
export function scopesAllow(held: readonly string[], needed: readonly string[]): boolean {
  return held.length === 0 || needed.length === 0 || needed.some((s) => held.includes(s))
}
