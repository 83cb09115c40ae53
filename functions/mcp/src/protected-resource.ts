/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728). Clients probe
 * `/.well-known/oauth-protected-resource/mcp` (metadata of the resource `<base>/mcp`), then
 * `/.well-known/oauth-protected-resource` (the whole API, `<base>`). `/oauth/protected-resource`
 * (the spec's path) describes the MCP endpoint, since that is the OAuth-protected resource clients
 * discover. `resource` always matches the URL the metadata was fetched from (RFC 9728 §3.3).
 */

import type { OpenAPIHono } from '@hono/zod-openapi'
import { createRoute } from '@hono/zod-openapi'
import { MCP_RESOURCE_SCOPES } from '../../../shared/auth/oauth-resources'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import { type McpEnv, mcpSettings } from './mcp.context'
import { API_SCOPES, type ProtectedResourceMetadata, ProtectedResourceMetadataSchema } from './mcp.schemas'

export function protectedResourceMetadata(
  baseUrl: string,
  resourcePath: string,
  env: McpEnv,
): ProtectedResourceMetadata {
  const servers = mcpSettings(env).OAUTH_AUTHORIZATION_SERVERS
  return {
    resource: `${baseUrl}${resourcePath}`,
    authorization_servers: servers.length ? servers : [baseUrl],
    // The MCP resource's own scopes there; every scope of the API at the root.
    scopes_supported: resourcePath === '/mcp' ? [...MCP_RESOURCE_SCOPES] : [...API_SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: resourcePath === '/mcp' ? 'svc hosted MCP server' : 'svc API',
    resource_documentation: `${baseUrl}/docs`,
  }
}

const METADATA_PATHS = [
  { path: '/oauth/protected-resource', resource: '/mcp' },
  { path: '/.well-known/oauth-protected-resource/mcp', resource: '/mcp' },
  { path: '/.well-known/oauth-protected-resource', resource: '' },
] as const

export function protectedResourceRoutes(app: OpenAPIHono<FamilyEnv<McpEnv>>): void {
  for (const { path, resource } of METADATA_PATHS) {
    app.openapi(
      createRoute({
        method: 'get',
        path,
        tags: ['MCP'],
        summary: `RFC 9728 protected-resource metadata for ${resource === '' ? 'the API' : 'the MCP endpoint'} (public)`,
        security: [],
        responses: {
          200: {
            description: 'Protected-resource metadata',
            content: { 'application/json': { schema: ProtectedResourceMetadataSchema } },
          },
        },
      }),
      (c) =>
        c.json(protectedResourceMetadata(c.get('request').baseUrl, resource, c.env), 200, {
          'cache-control': 'public, max-age=3600',
        }),
    )
  }
}
