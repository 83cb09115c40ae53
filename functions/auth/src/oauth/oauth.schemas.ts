/**
 * Wire shapes of the OAuth 2.1 authorization server (functions/auth/src/oauth): RFC 8414 metadata,
 * RFC 7591 registration, the token endpoint's form and answer (RFC 6749 §4.1.3, §5.1, §6), the
 * authorization request (RFC 6749 §4.1.1 with PKCE, RFC 7636, and RFC 8707 resource).
 */
import { z } from '@hono/zod-openapi'

export const AuthorizationServerMetadataSchema = z
  .object({
    issuer: z.string().url(),
    authorization_endpoint: z.string().url(),
    token_endpoint: z.string().url(),
    registration_endpoint: z.string().url(),
    jwks_uri: z.string().url(),
    scopes_supported: z.array(z.string()),
    response_types_supported: z.array(z.literal('code')),
    response_modes_supported: z.array(z.literal('query')),
    grant_types_supported: z.array(z.enum(['authorization_code', 'refresh_token'])),
    token_endpoint_auth_methods_supported: z.array(z.literal('none')),
    code_challenge_methods_supported: z.array(z.literal('S256')),
    authorization_response_iss_parameter_supported: z.boolean(),
    service_documentation: z.string().url(),
  })
  .openapi('AuthorizationServerMetadata')

export const ClientRegistrationRequestSchema = z
  .object({
    redirect_uris: z.array(z.string().min(1).max(2000)).min(1).max(20),
    client_name: z.string().min(1).max(200).optional(),
    client_uri: z.string().max(2000).optional(),
    logo_uri: z.string().max(2000).optional(),
    scope: z.string().max(1000).optional(),
    grant_types: z.array(z.string().max(100)).max(10).optional(),
    response_types: z.array(z.string().max(100)).max(10).optional(),
    token_endpoint_auth_method: z.string().max(100).optional(),
    software_id: z.string().max(200).optional(),
    software_version: z.string().max(100).optional(),
  })
  .openapi('ClientRegistrationRequest', {
    description: 'RFC 7591 client metadata; fields this server does not use are ignored (§2).',
  })

export const ClientRegistrationResponseSchema = z
  .object({
    client_id: z.string(),
    client_id_issued_at: z.number().int(),
    redirect_uris: z.array(z.string()),
    client_name: z.string().optional(),
    client_uri: z.string().optional(),
    logo_uri: z.string().optional(),
    scope: z.string(),
    grant_types: z.array(z.enum(['authorization_code', 'refresh_token'])),
    response_types: z.array(z.literal('code')),
    token_endpoint_auth_method: z.literal('none'),
  })
  .openapi('ClientRegistrationResponse')

export const TokenResponseSchema = z
  .object({
    access_token: z.string(),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int(),
    refresh_token: z.string(),
    scope: z.string(),
  })
  .openapi('OAuthTokenResponse')

export const OAuthErrorSchema = z
  .object({ error: z.string(), error_description: z.string() })
  .openapi('OAuthError')

export const oauthErrorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: OAuthErrorSchema } },
})

const param = z.string().max(2000).optional()

/** The authorization request's parameters (query of GET, form of POST /oauth/authorize). */
export const AuthorizationParamsSchema = z.object({
  response_type: param,
  client_id: param,
  redirect_uri: param,
  scope: param,
  state: param,
  code_challenge: param,
  code_challenge_method: param,
  resource: param,
})
export type AuthorizationParams = z.infer<typeof AuthorizationParamsSchema>

/** What the login and consent form posts besides the authorization parameters. */
export const ConsentFormSchema = AuthorizationParamsSchema.extend({
  decision: z.enum(['allow', 'deny']).optional(),
  email: z.string().max(320).optional(),
  password: z.string().max(1024).optional(),
  tenant_id: z.string().max(64).optional(),
})

export const TokenRequestSchema = z
  .object({
    grant_type: z.string().max(100).optional(),
    code: param,
    redirect_uri: param,
    client_id: param,
    code_verifier: param,
    refresh_token: param,
    resource: param,
    scope: param,
  })
  .openapi('OAuthTokenRequest')
