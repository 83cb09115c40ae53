/**
 * OAuth clients: RFC 7591 dynamic registration (open, as MCP clients expect to register
 * themselves unattended) of public clients, and the redirect-URI rules of OAuth 2.1 and RFC 8252:
 *
 * - `https` anywhere; `http` only on a loopback host (a native app's local listener), whose port
 *   may differ between registration and use (RFC 8252 §7.3: ephemeral ports);
 * - a private-use scheme in reverse-domain form (`com.example.app:/callback`, RFC 8252 §7.1);
 * - never a fragment, credentials in the URL, or `javascript:`, `data:`, `file:` and the like.
 *
 * Every client is public (`token_endpoint_auth_method: none`): it proves possession with PKCE.
 * A client asking for a secret-based method is registered as `none` and told so in the answer
 * (RFC 7591 §3.2.1 lets the server replace requested values).
 *
 * Expiry: a client that has not completed an authorization (exchanged a code for tokens,
 * `authorized_at`) within OAUTH_UNUSED_CLIENT_TTL_SECONDS (24 h) of registering is expired: the
 * authorization page refuses it at once, and registrations sweep such clients away (at most
 * SWEEP_BATCH per registration, oldest first), so what open registration stores stays bounded by
 * the registration throttle times the TTL, with no scheduled job.
 */

import type { z } from '@hono/zod-openapi'
import { and, eq, inArray, isNull, lt } from 'drizzle-orm'
import { MCP_RESOURCE_SCOPES } from '../../../../shared/auth/oauth-resources'
import { generateOAuthClientId } from '../../../../shared/auth/opaque-credentials'
import type { Drizzle } from '../../../../shared/db/client'
import { oauthClients } from '../../../../shared/db/schema'
import type { ClientRegistrationRequestSchema } from './oauth.schemas'
import { OAuthError } from './oauth-error'

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]'])
const FORBIDDEN_SCHEMES = new Set([
  'javascript:',
  'data:',
  'file:',
  'blob:',
  'about:',
  'vbscript:',
  'ftp:',
  'ws:',
  'wss:',
])

/** Expired clients deleted by each registration. */
const SWEEP_BATCH = 100

export interface OAuthClient {
  id: string
  clientName: string | null
  redirectUris: string[]
}

/** The registration instant before which a never-authorized client is expired. */
const expiryCutoff = (now: Date, unusedTtlSeconds: number) =>
  new Date(now.getTime() - unusedTtlSeconds * 1000)

/** Why `uri` cannot be a redirect URI, or null when it can. */
export function redirectUriProblem(uri: string): string | null {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return `"${uri}" is not an absolute URI`
  }
  if (url.hash !== '' || uri.includes('#')) return `"${uri}" has a fragment, which redirect URIs may not have`
  if (url.username || url.password) return `"${uri}" carries credentials`
  if (FORBIDDEN_SCHEMES.has(url.protocol)) return `"${uri}" uses the ${url.protocol} scheme`
  if (url.protocol === 'https:') return null
  if (url.protocol === 'http:') {
    return LOOPBACK_HOSTS.has(url.hostname)
      ? null
      : `"${uri}" uses http on a non-loopback host; use https, or http://127.0.0.1 for a local listener`
  }
  // Private-use URI scheme of a native app: reverse domain name (RFC 8252 §7.1).
  return url.protocol.slice(0, -1).includes('.')
    ? null
    : `"${uri}" uses a custom scheme that is not in reverse-domain form (e.g. com.example.app:/callback)`
}

/** Whether `presented` is the registered `registered` (loopback http URIs: any port). */
export function redirectUriMatches(registered: string, presented: string): boolean {
  if (registered === presented) return true
  let a: URL
  let b: URL
  try {
    a = new URL(registered)
    b = new URL(presented)
  } catch {
    return false
  }
  if (a.protocol !== 'http:' || !LOOPBACK_HOSTS.has(a.hostname)) return false
  return (
    b.protocol === 'http:' &&
    a.hostname === b.hostname &&
    a.pathname === b.pathname &&
    a.search === b.search &&
    b.hash === '' &&
    !b.username &&
    !b.password
  )
}

export async function registerClient(
  db: Drizzle,
  request: z.infer<typeof ClientRegistrationRequestSchema>,
  unusedTtlSeconds: number,
  now = new Date(),
) {
  for (const uri of request.redirect_uris) {
    const problem = redirectUriProblem(uri)
    if (problem) throw new OAuthError(400, 'invalid_redirect_uri', problem)
  }
  const grantTypes = request.grant_types ?? ['authorization_code', 'refresh_token']
  const unsupportedGrant = grantTypes.find((g) => g !== 'authorization_code' && g !== 'refresh_token')
  if (unsupportedGrant) {
    throw new OAuthError(
      400,
      'invalid_client_metadata',
      `grant_types may contain authorization_code and refresh_token only (got "${unsupportedGrant}").`,
    )
  }
  if (!grantTypes.includes('authorization_code')) {
    throw new OAuthError(400, 'invalid_client_metadata', 'grant_types must include authorization_code.')
  }
  const responseTypes = request.response_types ?? ['code']
  if (responseTypes.some((t) => t !== 'code')) {
    throw new OAuthError(400, 'invalid_client_metadata', 'response_types may only be ["code"].')
  }
  const scopes = (request.scope ?? MCP_RESOURCE_SCOPES.join(' ')).split(' ').filter(Boolean)
  const scope = scopes.filter((s) => (MCP_RESOURCE_SCOPES as readonly string[]).includes(s)).join(' ')
  const registered = {
    client_id: generateOAuthClientId(),
    client_id_issued_at: Math.floor(now.getTime() / 1000),
    redirect_uris: request.redirect_uris,
    ...(request.client_name ? { client_name: request.client_name } : {}),
    ...(request.client_uri ? { client_uri: request.client_uri } : {}),
    ...(request.logo_uri ? { logo_uri: request.logo_uri } : {}),
    scope: scope || MCP_RESOURCE_SCOPES.join(' '),
    grant_types: grantTypes as ('authorization_code' | 'refresh_token')[],
    response_types: ['code' as const],
    token_endpoint_auth_method: 'none' as const,
  }
  await sweepExpiredClients(db, unusedTtlSeconds, now)
  await db.insert(oauthClients).values({
    id: registered.client_id,
    clientName: request.client_name ?? null,
    redirectUris: request.redirect_uris,
    metadata: registered,
    createdAt: now,
  })
  return registered
}

/** Deletes up to SWEEP_BATCH expired clients, oldest first (their unspent codes go with them). */
export async function sweepExpiredClients(db: Drizzle, unusedTtlSeconds: number, now = new Date()) {
  const expired = db
    .select({ id: oauthClients.id })
    .from(oauthClients)
    .where(
      and(isNull(oauthClients.authorizedAt), lt(oauthClients.createdAt, expiryCutoff(now, unusedTtlSeconds))),
    )
    .orderBy(oauthClients.createdAt)
    .limit(SWEEP_BATCH)
  await db.delete(oauthClients).where(inArray(oauthClients.id, expired))
}

/**
 * The client, `'expired'` when it never completed an authorization within the TTL (whether or not
 * a sweep deleted it yet), or null when it is not registered.
 */
export async function findClient(
  db: Drizzle,
  clientId: string | undefined,
  unusedTtlSeconds: number,
  now = new Date(),
): Promise<OAuthClient | 'expired' | null> {
  if (!clientId || clientId.length > 100) return null
  const [row] = await db
    .select({
      id: oauthClients.id,
      clientName: oauthClients.clientName,
      redirectUris: oauthClients.redirectUris,
      createdAt: oauthClients.createdAt,
      authorizedAt: oauthClients.authorizedAt,
    })
    .from(oauthClients)
    .where(eq(oauthClients.id, clientId))
    .limit(1)
  if (!row) return null
  if (!row.authorizedAt && row.createdAt < expiryCutoff(now, unusedTtlSeconds)) return 'expired'
  return { id: row.id, clientName: row.clientName, redirectUris: row.redirectUris }
}

/** Records the client's first completed authorization (a code exchanged for tokens): it no longer expires. */
export async function markClientAuthorized(db: Drizzle, clientId: string, now = new Date()): Promise<void> {
  await db
    .update(oauthClients)
    .set({ authorizedAt: now })
    .where(and(eq(oauthClients.id, clientId), isNull(oauthClients.authorizedAt)))
}
