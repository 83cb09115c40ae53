import { z } from '@hono/zod-openapi'
import { MCP_RESOURCE_SCOPES } from '../../../shared/auth/oauth-resources'

/** RFC 9728 protected-resource metadata. */
export const ProtectedResourceMetadataSchema = z
  .object({
    resource: z.string().url(),
    authorization_servers: z.array(z.string().url()),
    scopes_supported: z.array(z.string()),
    bearer_methods_supported: z.array(z.literal('header')),
    resource_name: z.string(),
    resource_documentation: z.string().url(),
  })
  .openapi('ProtectedResourceMetadata')

export type ProtectedResourceMetadata = z.infer<typeof ProtectedResourceMetadataSchema>

/** Scopes an access token or API key may carry for MCP and the model API (the API root's metadata). */
export const API_SCOPES = [...MCP_RESOURCE_SCOPES, 'models:read', 'chat:write', 'agents:write'] as const
