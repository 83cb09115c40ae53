/**
 * The MCP worker's env: the service bindings of the families whose routes its tools wrap, and its
 * variables, parsed once per isolate by one zod schema (README's configuration table lists them).
 */
import { z } from 'zod'
import { envReader, listVar } from '../../../shared/config/worker-env'
import type { PlanCatalogEnv } from '../../../shared/plans/plan-catalog'
import type { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'

type FamilyBinding = Service<FamilyEntrypoint>

export interface McpEnv extends PlanCatalogEnv {
  /** Families whose routes become MCP tools; a tool is called exactly as the gateway calls its route. */
  CHAT?: FamilyBinding
  CODE?: FamilyBinding
  KNOWLEDGE?: FamilyBinding
  REASONING?: FamilyBinding
  PLATFORM?: FamilyBinding
  MODELS?: FamilyBinding
  /** Authorization servers advertised in the protected-resource metadata (comma-separated). */
  OAUTH_AUTHORIZATION_SERVERS?: string
  /**
   * Host names (no port) POST /mcp may be addressed to: DNS-rebinding protection for a server on a
   * private address. Empty: any (behind Cloudflare only the zone's routes reach the worker).
   * `npm start` on a loopback address sets the loopback names.
   */
  MCP_ALLOWED_HOSTS?: string
  /**
   * Browser origins (host names, no scheme or port) allowed to call POST /mcp besides the API's
   * own host; a request with another Origin is refused with 403. Loopback origins are allowed when
   * the request itself is addressed to a loopback host.
   */
  MCP_ALLOWED_ORIGINS?: string
}

const hostList = listVar().pipe(
  z.array(z.string().regex(/^[A-Za-z0-9.\-[\]:*/]+$/, 'must be host names, comma-separated')),
)

const McpSettingsSchema = z.object({
  OAUTH_AUTHORIZATION_SERVERS: listVar().pipe(z.array(z.url({ protocol: /^https?$/ }))),
  MCP_ALLOWED_HOSTS: hostList,
  MCP_ALLOWED_ORIGINS: hostList,
})

export type McpSettings = z.infer<typeof McpSettingsSchema>

/** The variables as settings (503 `service_misconfigured` naming a bad one). */
export const mcpSettings: (env: McpEnv) => McpSettings = envReader('mcp', McpSettingsSchema)
