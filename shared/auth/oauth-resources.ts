/**
 * The OAuth protected resources of this deployment, shared by the gateway (which accepts tokens
 * bound to them), the auth worker's authorization server (which issues them) and the MCP worker
 * (which describes itself in RFC 9728 metadata). Today there is one: the MCP endpoint.
 */

export const MCP_RESOURCE_PATH = '/mcp'

/** Scopes a token for the MCP resource can carry: calling tools, reading resources. */
export const MCP_RESOURCE_SCOPES = ['mcp:tools', 'mcp:resources'] as const

/** The resource identifier (RFC 8707) of the MCP endpoint under this public base URL. */
export function mcpResource(baseUrl: string): string {
  return `${baseUrl}${MCP_RESOURCE_PATH}`
}
