/**
 * The authorization request (RFC 6749 §4.1.1, OAuth 2.1): checked the same way when the page is
 * shown (GET) and when the person answers it (POST). The order matters (RFC 6749 §4.1.2.1): an
 * unknown client or a redirect URI that is not registered is shown on the page and never
 * redirected to (an open redirector otherwise); every other problem is sent back to the client at
 * its redirect URI with `error`, `state` and `iss` (RFC 9207).
 *
 * Required beyond RFC 6749: PKCE with S256 (plain is refused), and the resource (RFC 8707): the
 * MCP endpoint of this deployment, the default when the client names none.
 */
import { MCP_RESOURCE_SCOPES, mcpResource } from '../../../../shared/auth/oauth-resources'
import type { Drizzle } from '../../../../shared/db/client'
import { findClient, type OAuthClient, redirectUriMatches } from './clients'
import type { AuthorizationParams } from './oauth.schemas'
import type { OAuthErrorCode } from './oauth-error'

export interface AuthorizationRequest {
  client: OAuthClient
  redirectUri: string
  state: string | undefined
  codeChallenge: string
  resource: string
  /** Granted scopes, space-separated. */
  scope: string
}

export type CheckedAuthorization =
  | { kind: 'invalid_page'; message: string }
  | {
      kind: 'redirect_error'
      redirectUri: string
      error: OAuthErrorCode
      description: string
      state: string | undefined
    }
  | { kind: 'ok'; request: AuthorizationRequest }

/** PKCE code challenge: BASE64URL(SHA-256(verifier)), 43 characters (RFC 7636 §4.2). */
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/

export async function checkAuthorizationRequest(
  db: Drizzle,
  params: AuthorizationParams,
  baseUrl: string,
  /** OAUTH_UNUSED_CLIENT_TTL_SECONDS: clients that never completed an authorization expire. */
  unusedClientTtlSeconds: number,
): Promise<CheckedAuthorization> {
  const client = await findClient(db, params.client_id, unusedClientTtlSeconds)
  if (client === 'expired') {
    return {
      kind: 'invalid_page',
      message: `The application asking for access registered more than ${unusedClientTtlSeconds % 3600 === 0 ? `${unusedClientTtlSeconds / 3600} hours` : `${unusedClientTtlSeconds} seconds`} ago and never completed an authorization, so its registration expired (client_id ${params.client_id}). Start again from the application: it has to register again.`,
    }
  }
  if (!client) {
    return {
      kind: 'invalid_page',
      message: params.client_id
        ? `The application asking for access is not registered here (client_id ${params.client_id}).`
        : 'The request names no application (client_id is missing).',
    }
  }
  let redirectUri: string
  if (params.redirect_uri === undefined) {
    if (client.redirectUris.length !== 1) {
      return {
        kind: 'invalid_page',
        message: 'The request has no redirect_uri, and the application registered several.',
      }
    }
    redirectUri = client.redirectUris[0]!
  } else {
    if (!client.redirectUris.some((r) => redirectUriMatches(r, params.redirect_uri!))) {
      return {
        kind: 'invalid_page',
        message: `The redirect_uri ${params.redirect_uri} is not one the application registered, so this request is not sent back to it.`,
      }
    }
    redirectUri = params.redirect_uri
  }
  const fail = (error: OAuthErrorCode, description: string): CheckedAuthorization => ({
    kind: 'redirect_error',
    redirectUri,
    error,
    description,
    state: params.state,
  })
  if (params.response_type !== 'code') {
    return fail(
      'unsupported_response_type',
      `response_type must be "code" (got ${JSON.stringify(params.response_type ?? null)}).`,
    )
  }
  if (!params.code_challenge)
    return fail('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256.')
  if (params.code_challenge_method !== 'S256') {
    return fail(
      'invalid_request',
      `code_challenge_method must be S256 (got ${JSON.stringify(params.code_challenge_method ?? null)}); plain is not accepted.`,
    )
  }
  if (!CODE_CHALLENGE.test(params.code_challenge)) {
    return fail(
      'invalid_request',
      'code_challenge must be the base64url SHA-256 of the code verifier (43 characters).',
    )
  }
  const resource = mcpResource(baseUrl)
  if (params.resource !== undefined && params.resource !== resource) {
    return fail(
      'invalid_target',
      `This server issues tokens for ${resource} only (resource was ${params.resource}).`,
    )
  }
  const requested = (params.scope ?? '').split(' ').filter(Boolean)
  const granted =
    requested.length === 0
      ? [...MCP_RESOURCE_SCOPES]
      : requested.filter((s) => (MCP_RESOURCE_SCOPES as readonly string[]).includes(s))
  if (granted.length === 0) {
    return fail(
      'invalid_scope',
      `None of the scopes asked for is offered; scopes: ${MCP_RESOURCE_SCOPES.join(' ')}.`,
    )
  }
  return {
    kind: 'ok',
    request: {
      client,
      redirectUri,
      state: params.state,
      codeChallenge: params.code_challenge,
      resource,
      scope: granted.join(' '),
    },
  }
}

/** The client's redirect URI with the answer's parameters, `state` and `iss` added (RFC 9207). */
export function redirectWith(
  redirectUri: string,
  issuer: string,
  state: string | undefined,
  params: Record<string, string>,
): string {
  const url = new URL(redirectUri)
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
  if (state !== undefined) url.searchParams.set('state', state)
  url.searchParams.set('iss', issuer)
  return url.href
}
