/**
 * The OAuth 2.1 authorization server MCP clients complete unattended (docs/mcp.md):
 *
 *   GET  /.well-known/oauth-authorization-server   RFC 8414 metadata (issuer = the public base URL)
 *   POST /oauth/register                           RFC 7591 dynamic registration (public clients),
 *                                                  throttled per address; unused clients expire
 *   GET  /oauth/authorize                          the login and consent page
 *   POST /oauth/authorize                          the person's answer → 302 to the client with a code
 *   POST /oauth/token                              authorization_code (PKCE S256) and refresh_token
 *
 * Tokens are the product's access tokens (signed with its post-quantum keys by token-issuer.ts and
 * verified by the gateway like every other), with `aud` = the resource (RFC 8707: the MCP endpoint),
 * `scope` and `client_id`; refresh tokens are the identity plane's, rotated with reuse detection,
 * in a family bound to the client and the resource.
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi'
import { and, eq, inArray } from 'drizzle-orm'
import type { Context } from 'hono'
import { appendAuditEvent } from '../../../../durable-objects/audit-log/audit-client'
import { MCP_RESOURCE_SCOPES } from '../../../../shared/auth/oauth-resources'
import { userSubject } from '../../../../shared/auth/subjects'
import { members, tenants } from '../../../../shared/db/schema'
import { errorResponse } from '../../../../shared/http/error-body'
import { AppError } from '../../../../shared/http/errors'
import type { FamilyEnv } from '../../../../shared/worker/family-app'
import { log } from '../../../../shared/worker/log'
import { withRequestDatabase } from '../../../../shared/worker/request-database'
import { type AuthEnv, authSettings } from '../auth.context'
import { clientAddress } from '../login-throttle'
import { revokeFamily, rotateRefreshToken, startRefreshFamily } from '../refresh-tokens'
import { issueAccessToken } from '../token-issuer'
import { authenticateUser, chooseTenant } from '../user-authentication'
import { issueAuthorizationCode, linkCodeToFamily, spendAuthorizationCode } from './authorization-codes'
import { type AuthorizationRequest, checkAuthorizationRequest, redirectWith } from './authorization-request'
import { markClientAuthorized, registerClient } from './clients'
import { consentPage, errorPage, PAGE_HEADERS } from './consent-page'
import {
  AuthorizationParamsSchema,
  AuthorizationServerMetadataSchema,
  ClientRegistrationRequestSchema,
  ClientRegistrationResponseSchema,
  ConsentFormSchema,
  oauthErrorResponse,
  TokenRequestSchema,
  TokenResponseSchema,
} from './oauth.schemas'
import { OAuthError, oauthError } from './oauth-error'
import { countRegistration } from './registration-throttle'

type AuthContext = Context<FamilyEnv<AuthEnv>>

/** The database behind clients, codes and refresh families (or the token signer) is unreachable. */
const identityStoreDown = errorResponse(
  'identity_store_unavailable, or no signing key can issue the token; retry shortly',
)
export function authorizationServerMetadata(
  baseUrl: string,
): z.infer<typeof AuthorizationServerMetadataSchema> {
  return {
    issuer: baseUrl,
    authorization_endpoint: `${baseUrl}/oauth/authorize`,
    token_endpoint: `${baseUrl}/oauth/token`,
    registration_endpoint: `${baseUrl}/oauth/register`,
    jwks_uri: `${baseUrl}/.well-known/jwks.json`,
    scopes_supported: [...MCP_RESOURCE_SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${baseUrl}/docs`,
  }
}

/** A form body as strings (files, which no OAuth endpoint takes, are dropped). */
async function formOf(c: AuthContext): Promise<Record<string, string>> {
  const type = c.req.header('content-type') ?? ''
  if (!type.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    throw oauthError('invalid_request', 'Send the parameters as application/x-www-form-urlencoded.')
  }
  const body = await c.req.parseBody()
  const form: Record<string, string> = {}
  for (const [name, value] of Object.entries(body)) if (typeof value === 'string') form[name] = value
  return form
}

function parsed<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const result = schema.safeParse(input)
  if (!result.success) {
    const issue = result.error.issues[0]!
    throw oauthError('invalid_request', `${issue.path.join('.') || 'request'}: ${issue.message}`)
  }
  return result.data
}

const redirect = (location: string) =>
  new Response(null, { status: 302, headers: { location, 'cache-control': 'no-store' } })

const html = (body: string, status: number) => new Response(body, { status, headers: PAGE_HEADERS })

async function workspacesOf(c: AuthContext, tenantIds: string[]) {
  return withRequestDatabase(c, 'identity', (db) =>
    db.select({ id: tenants.id, name: tenants.name }).from(tenants).where(inArray(tenants.id, tenantIds)),
  )
}

async function answerConsent(
  c: AuthContext,
  request: AuthorizationRequest,
  form: z.infer<typeof ConsentFormSchema>,
) {
  const { baseUrl, requestId } = c.get('request')
  const params = AuthorizationParamsSchema.parse(form)
  if (form.decision !== 'allow') {
    return redirect(
      redirectWith(request.redirectUri, baseUrl, request.state, {
        error: 'access_denied',
        error_description: 'The user denied the request.',
      }),
    )
  }
  const settings = authSettings(c.env)
  try {
    const code = await withRequestDatabase(c, 'identity', async (db) => {
      const user = await authenticateUser(db, c.req.raw, settings, {
        email: form.email ?? '',
        password: form.password ?? '',
      })
      const tenantId = chooseTenant(user.tenantIds, form.tenant_id || undefined)
      return issueAuthorizationCode(db, request, { userId: user.userId, tenantId })
    })
    return redirect(redirectWith(request.redirectUri, baseUrl, request.state, { code }))
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err
    // Wrong password, lockout, or a choice of workspace to make: the person answers the page again.
    let workspaces: { id: string; name: string }[] | undefined
    if (err.code === 'tenant_required') {
      const tenantIds = /one of (.+)\.$/.exec(err.message)?.[1]?.split(', ') ?? []
      workspaces = await workspacesOf(c, tenantIds)
    }
    log('info', 'oauth_consent_refused', { request_id: requestId, code: err.code })
    return html(
      consentPage(request, {
        params,
        error: err.code === 'tenant_required' ? 'Choose the workspace to allow access to.' : err.message,
        ...(form.email ? { email: form.email } : {}),
        ...(workspaces ? { workspaces } : {}),
      }),
      err.code === 'tenant_required' ? 200 : err.status,
    )
  }
}

export function oauthRoutes(app: OpenAPIHono<FamilyEnv<AuthEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/.well-known/oauth-authorization-server',
      tags: ['OAuth'],
      summary: 'RFC 8414 authorization server metadata (public)',
      responses: {
        200: {
          description: 'Metadata',
          content: { 'application/json': { schema: AuthorizationServerMetadataSchema } },
        },
      },
    }),
    (c) =>
      c.json(authorizationServerMetadata(c.get('request').baseUrl), 200, {
        'cache-control': 'public, max-age=3600',
      }),
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: '/oauth/register',
      tags: ['OAuth'],
      summary: 'RFC 7591 dynamic client registration (public clients with PKCE)',
      description:
        'Redirect URIs: https, http on a loopback host (any port at use, RFC 8252 §7.3), or a reverse-domain private-use scheme. Every client is registered with token_endpoint_auth_method "none". At most OAUTH_REGISTRATIONS_PER_ADDRESS registrations (default 10) per client address per OAUTH_REGISTRATION_WINDOW_SECONDS (default 3600), then 429 registration_throttled with Retry-After. A client that has not exchanged an authorization code for tokens within OAUTH_UNUSED_CLIENT_TTL_SECONDS (default 24 h) of registering expires: the authorization page refuses it, and it is deleted.',
      request: { body: { required: true, content: { 'application/json': { schema: z.unknown() } } } },
      responses: {
        201: {
          description: 'Registered',
          content: { 'application/json': { schema: ClientRegistrationResponseSchema } },
        },
        400: oauthErrorResponse('invalid_redirect_uri or invalid_client_metadata'),
        429: oauthErrorResponse(
          'registration_throttled: too many registrations from this address; see Retry-After',
        ),
        503: identityStoreDown,
      },
    }),
    async (c) => {
      const settings = authSettings(c.env)
      await withRequestDatabase(c, 'identity', (db) =>
        countRegistration(db, clientAddress(c.req.raw), settings),
      )
      const input = await c.req.json().catch(() => undefined)
      const result = ClientRegistrationRequestSchema.safeParse(input)
      if (!result.success) {
        const issue = result.error.issues[0]!
        throw new OAuthError(
          400,
          'invalid_client_metadata',
          `${issue.path.join('.') || 'body'}: ${issue.message}`,
        )
      }
      const registered = await withRequestDatabase(c, 'identity', (db) =>
        registerClient(db, result.data, settings.unusedClientTtlSeconds),
      )
      return c.json(registered, 201, { 'cache-control': 'no-store' })
    },
  )

  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'get',
      path: '/oauth/authorize',
      tags: ['OAuth'],
      summary: 'Authorization endpoint: the login and consent page (HTML)',
      description:
        'Parameters of RFC 6749 §4.1.1 with PKCE (code_challenge, code_challenge_method=S256 required) and resource (RFC 8707; default and only value: <base>/mcp). An unknown client or unregistered redirect_uri is shown on the page (400); other errors are redirected to the client.',
      request: { query: AuthorizationParamsSchema },
      responses: {
        200: { description: 'The page', content: { 'text/html': { schema: z.string() } } },
        302: { description: 'An error sent back to the client' },
        400: {
          description: 'Unknown client or redirect URI',
          content: { 'text/html': { schema: z.string() } },
        },
        503: identityStoreDown,
      },
    }),
  )
  app.get('/oauth/authorize', async (c) => {
    const params = parsed(AuthorizationParamsSchema, c.req.query())
    const { baseUrl } = c.get('request')
    const checked = await withRequestDatabase(c, 'identity', (db) =>
      checkAuthorizationRequest(db, params, baseUrl, authSettings(c.env).unusedClientTtlSeconds),
    )
    if (checked.kind === 'invalid_page') return html(errorPage(checked.message), 400)
    if (checked.kind === 'redirect_error') {
      return redirect(
        redirectWith(checked.redirectUri, baseUrl, checked.state, {
          error: checked.error,
          error_description: checked.description,
        }),
      )
    }
    return html(consentPage(checked.request, { params }), 200)
  })

  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'post',
      path: '/oauth/authorize',
      tags: ['OAuth'],
      summary: "The consent form's answer: allow (email, password, workspace) or deny",
      request: {
        body: {
          required: true,
          content: { 'application/x-www-form-urlencoded': { schema: ConsentFormSchema } },
        },
      },
      responses: {
        302: { description: 'To the client: code, state and iss, or error=access_denied' },
        401: {
          description: 'The page again: wrong email or password',
          content: { 'text/html': { schema: z.string() } },
        },
        429: {
          description: 'The page again: too many failures',
          content: { 'text/html': { schema: z.string() } },
        },
        503: identityStoreDown,
      },
    }),
  )
  app.post('/oauth/authorize', async (c) => {
    const form = parsed(ConsentFormSchema, await formOf(c))
    const { baseUrl } = c.get('request')
    const checked = await withRequestDatabase(c, 'identity', (db) =>
      checkAuthorizationRequest(
        db,
        AuthorizationParamsSchema.parse(form),
        baseUrl,
        authSettings(c.env).unusedClientTtlSeconds,
      ),
    )
    if (checked.kind === 'invalid_page') return html(errorPage(checked.message), 400)
    if (checked.kind === 'redirect_error') {
      return redirect(
        redirectWith(checked.redirectUri, baseUrl, checked.state, {
          error: checked.error,
          error_description: checked.description,
        }),
      )
    }
    return answerConsent(c, checked.request, form)
  })

  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'post',
      path: '/oauth/token',
      tags: ['OAuth'],
      summary: 'Token endpoint: authorization_code (with PKCE) and refresh_token grants',
      description:
        'Refresh tokens rotate on every use; presenting a spent one revokes every token of that authorization (RFC 9700 §4.14.2), as does presenting a spent authorization code: its refresh tokens at once, its access tokens (which name it in `sid`) everywhere within API_KEY_CACHE_TTL_SECONDS (401 token_revoked).',
      request: {
        body: {
          required: true,
          content: { 'application/x-www-form-urlencoded': { schema: TokenRequestSchema } },
        },
      },
      responses: {
        200: { description: 'Tokens', content: { 'application/json': { schema: TokenResponseSchema } } },
        400: oauthErrorResponse(
          'invalid_request, invalid_grant, invalid_target, invalid_scope, unsupported_grant_type',
        ),
        401: oauthErrorResponse('invalid_client'),
        503: identityStoreDown,
      },
    }),
  )
  app.post('/oauth/token', async (c) => {
    const form = parsed(TokenRequestSchema, await formOf(c))
    if (!form.client_id)
      throw oauthError(
        'invalid_client',
        'client_id is required (public clients authenticate with it and PKCE).',
      )
    const clientId = form.client_id
    const settings = authSettings(c.env)
    const { requestId } = c.get('request')
    const recordRevocation = (
      family: { tenantId: string; userId: string; familyId: string },
      reason: 'reuse_detected' | 'membership_ended' | 'authorization_code_reused',
    ) =>
      appendAuditEvent(c.env.AUDIT_LOG, family.tenantId, {
        kind: 'refresh_token.family_revoked',
        subject: userSubject(family.userId),
        family_id: family.familyId,
        reason,
        request_id: requestId,
      })
    const result = await withRequestDatabase(c, 'identity', async (db) => {
      const isMember = async (tenantId: string, userId: string) =>
        (
          await db
            .select({ role: members.role })
            .from(members)
            .where(and(eq(members.tenantId, tenantId), eq(members.userId, userId)))
            .limit(1)
        ).length > 0
      const issue = (
        owner: { tenantId: string; userId: string },
        familyId: string,
        grant: 'authorization_code' | 'refresh_token',
        resource: string,
        scope: string,
      ) =>
        issueAccessToken(db, c.env, c.executionCtx, {
          tenantId: owner.tenantId,
          sub: userSubject(owner.userId),
          aud: 'platform',
          sessionId: familyId,
          oauth: { resource, scope, clientId, grant },
          requestId,
          method: 'POST',
          path: '/oauth/token',
        })

      if (form.grant_type === 'authorization_code') {
        const spent = await spendAuthorizationCode(
          db,
          {
            ...(form.code ? { code: form.code } : {}),
            clientId,
            ...(form.redirect_uri ? { redirectUri: form.redirect_uri } : {}),
            ...(form.code_verifier ? { codeVerifier: form.code_verifier } : {}),
            ...(form.resource ? { resource: form.resource } : {}),
          },
          new Date(),
          (family) => recordRevocation(family, 'authorization_code_reused'),
        )
        if (!(await isMember(spent.tenantId, spent.userId))) {
          throw oauthError('invalid_grant', 'The user is no longer a member of the workspace.')
        }
        const { familyId, refreshToken } = await startRefreshFamily(db, {
          tenantId: spent.tenantId,
          userId: spent.userId,
          ttlSeconds: settings.refreshTokenTtlSeconds,
          oauth: { clientId, resource: spent.resource, scope: spent.scope },
        })
        await linkCodeToFamily(db, spent.codeHash, familyId)
        await markClientAuthorized(db, clientId)
        const token = await issue(spent, familyId, 'authorization_code', spent.resource, spent.scope)
        return { token, refreshToken, scope: spent.scope }
      }

      if (form.grant_type === 'refresh_token') {
        if (!form.refresh_token)
          throw oauthError('invalid_request', 'refresh_token is required for grant_type=refresh_token.')
        const wanted = form.scope?.split(' ').filter(Boolean)
        let rotated: Awaited<ReturnType<typeof rotateRefreshToken>>
        try {
          rotated = await rotateRefreshToken(
            db,
            form.refresh_token,
            settings.refreshTokenTtlSeconds,
            new Date(),
            (family) => recordRevocation(family, 'reuse_detected'),
            clientId,
            (family) => {
              if (form.resource !== undefined && form.resource !== family.resource) {
                throw oauthError(
                  'invalid_target',
                  `This refresh token is for ${family.resource}, not ${form.resource}.`,
                )
              }
              const granted = (family.scope ?? '').split(' ')
              const extra = wanted?.find((s) => !granted.includes(s))
              if (extra)
                throw oauthError(
                  'invalid_scope',
                  `The scope "${extra}" was not granted by this authorization.`,
                )
            },
          )
        } catch (err) {
          // The identity plane's refusals (401 refresh_token_*) in the token endpoint's terms.
          if (err instanceof AppError && !(err instanceof OAuthError) && err.status === 401) {
            throw oauthError('invalid_grant', err.message)
          }
          throw err
        }
        const grant = rotated.oauth!
        if (!(await isMember(rotated.tenantId, rotated.userId))) {
          await revokeFamily(db, rotated.familyId, 'membership_ended')
          await recordRevocation(rotated, 'membership_ended')
          throw oauthError(
            'invalid_grant',
            'The user is no longer a member of the workspace; the authorization is revoked.',
          )
        }
        const scope = wanted?.length ? wanted.join(' ') : grant.scope
        const token = await issue(rotated, rotated.familyId, 'refresh_token', grant.resource, scope)
        return { token, refreshToken: rotated.refreshToken, scope }
      }

      throw new OAuthError(
        400,
        form.grant_type ? 'unsupported_grant_type' : 'invalid_request',
        form.grant_type
          ? `grant_type ${form.grant_type} is not supported; use authorization_code or refresh_token.`
          : 'grant_type is required.',
      )
    })
    return c.json(
      {
        access_token: result.token.access_token,
        token_type: 'Bearer' as const,
        expires_in: result.token.expires_in,
        refresh_token: result.refreshToken,
        scope: result.scope,
      },
      200,
      { 'cache-control': 'no-store', pragma: 'no-cache' },
    )
  })
}
