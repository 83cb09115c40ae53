/**
 * The front gateway: the only routable worker. For every request: request id, CORS, route
 * lookup, credential and tenant checks, body rules, then the family worker over its service
 * binding with a typed request context. Errors are rendered by one handler: the JSON error body,
 * or on /otlp/* paths the OTLP encoding of the request (shared/telemetry/otlp-errors.ts).
 */
import { Hono } from 'hono'
import { mcpResource } from '../../../shared/auth/oauth-resources'
import { scopesAllow, scopesFor } from '../../../shared/auth/scopes'
import { serviceAccountSubject } from '../../../shared/auth/subjects'
import { formatBytes, isJsonContentType, readJsonText } from '../../../shared/http/body'
import { AppError, toAppError } from '../../../shared/http/errors'
import {
  FAMILY_BINDING,
  GATEWAY_CACHE_PARAM,
  type GatewayCache,
  pathEncodingProblem,
  type RouteSpec,
  RouteTable,
  tokenAudiencesOf,
} from '../../../shared/routing/route-table'
import { OTLP_ACCEPTED_TYPES_TEXT, otlpEncodingOf } from '../../../shared/telemetry/otlp-content-types'
import { isOtlpPath, otlpErrorResponse } from '../../../shared/telemetry/otlp-errors'
import { type ForwardedBody, fromFamilyResponse, headerMap } from '../../../shared/worker/family-rpc'
import { logServerError } from '../../../shared/worker/log'
import type { Identity, RequestContext } from '../../../shared/worker/request-context'
import { invalidatePrincipal } from './access-token-auth'
import { invalidateApiKey } from './api-key-auth'
import { authenticate } from './authenticate'
import { allowedOrigin, applyCors, corsHeaders, preflight } from './cors'
import { enforceCryptoPolicy } from './crypto-enforcement'
import { type GatewayApp, type GatewayEnv, gatewaySettings } from './gateway.context'
import { healthRoutes } from './health'
import { invalidateObservabilityToken } from './observability-token-auth'
import { openApiRoutes } from './openapi'
import { publicOrigin } from './public-origin'
import { requestIdFor } from './request-id'
import { invalidateTenantPolicy } from './tenant-policies'

const routes = new RouteTable()

/**
 * Every way a request can name its tenant: the spec's `x-svc-tenant` header and `tenantId` query
 * parameter, and the `x-tenant-id` header (the spec's storage-service name) with its query form
 * `tenant_id`. Any of them, and every value of a repeated query parameter, must be the
 * credential's tenant.
 */
const TENANT_HEADERS = ['x-svc-tenant', 'x-tenant-id'] as const
const TENANT_QUERY_PARAMETERS = ['tenantId', 'tenant_id'] as const

function checkTenant(identity: Identity, request: Request, url: URL): void {
  for (const name of TENANT_HEADERS) {
    const claimed = request.headers.get(name)
    if (claimed !== null && claimed !== identity.tenantId) throw tenantMismatch(claimed, name, identity)
  }
  if (url.search === '') return
  for (const name of TENANT_QUERY_PARAMETERS) {
    for (const claimed of url.searchParams.getAll(name)) {
      if (claimed !== identity.tenantId) throw tenantMismatch(claimed, name, identity)
    }
  }
}

function tenantMismatch(claimed: string, name: string, identity: Identity): AppError {
  return new AppError(
    403,
    'tenant_mismatch',
    `This request names tenant "${claimed}" (${name}), but the credential belongs to tenant "${identity.tenantId}". Remove it or use a credential of that tenant.`,
    { param: name },
  )
}

/**
 * `x-svc-mode: test|live` chooses the mode of a person's request (a user's access token, from a
 * login or an OAuth grant): the console sends its test/live switch with every call. Any other
 * credential's mode is fixed (an API key's own, live for service accounts and observability
 * tokens): naming it is allowed, naming the other is 403 `mode_mismatch`, like a tenant that is
 * not the credential's. Without the header a person acts live.
 */
export const MODE_HEADER = 'x-svc-mode'

function withRequestedMode(identity: Identity, request: Request): Identity {
  const requested = request.headers.get(MODE_HEADER)
  if (requested === null || requested === '') return identity
  if (requested !== 'test' && requested !== 'live') {
    throw new AppError(
      400,
      'invalid_mode',
      `${MODE_HEADER} must be "test" or "live" (got ${JSON.stringify(requested.slice(0, 40))}).`,
      { param: MODE_HEADER },
    )
  }
  if (requested === identity.mode) return identity
  if (choosesMode(identity)) return { ...identity, mode: requested }
  throw new AppError(
    403,
    'mode_mismatch',
    `This request asks for ${requested} mode (${MODE_HEADER}), but the credential acts in ${identity.mode} mode. Remove the header or use a ${requested} credential.`,
    { param: MODE_HEADER },
  )
}

/** A person chooses the mode of each request; keys, service accounts and tokens have theirs. */
function choosesMode(identity: Identity): boolean {
  return identity.principal.kind === 'access_token' && identity.principal.subject.startsWith('user:')
}

/** 403 for a credential limited to scopes of which none covers the route (shared/auth/scopes.ts). */
function checkScopes(route: RouteSpec, identity: Identity): void {
  const needed = scopesFor(route)
  if (scopesAllow(identity.scopes, needed)) return
  throw new AppError(
    403,
    'insufficient_scope',
    `This credential is limited to the scopes ${identity.scopes.join(', ')}; ${route.method} ${route.path} needs ${needed.join(' or ')}. Use a credential with that scope.`,
    // RFC 6750 §3.1: an OAuth client learns which scope to ask for.
    { headers: { 'www-authenticate': `Bearer error="insufficient_scope", scope="${needed.join(' ')}"` } },
  )
}

/** 400 for a path that is not valid percent-encoding (or encodes NUL), before anything else. */
function checkPathEncoding(pathname: string): void {
  const problem = pathEncodingProblem(pathname)
  if (!problem) return
  throw new AppError(
    400,
    'malformed_path',
    problem.kind === 'nul'
      ? `The path contains an encoded NUL character (${problem.escape}), which no resource name contains; remove it.`
      : `The path is not valid percent-encoding (at "${problem.escape}"): write each reserved byte as % followed by two hex digits, and encode characters as whole UTF-8 sequences.`,
  )
}

function checkBody(route: RouteSpec, request: Request): void {
  const rule = route.body
  if (!rule) return
  const length = request.headers.get('content-length')
  if (length !== null && Number(length) > rule.maxBytes) {
    throw new AppError(
      413,
      'request_too_large',
      `The request body is ${formatBytes(Number(length))}; ${route.method} ${route.path} accepts at most ${formatBytes(rule.maxBytes)}.`,
    )
  }
  if (!hasBody(request)) return
  const type = request.headers.get('content-type')
  const base = (type ?? '').split(';', 1)[0]!.trim().toLowerCase()
  const ok =
    rule.kind === 'json'
      ? isJsonContentType(type)
      : rule.kind === 'form'
        ? base === 'application/x-www-form-urlencoded'
        : rule.kind === 'multipart'
          ? base === 'multipart/form-data'
          : rule.kind === 'otlp'
            ? otlpEncodingOf(type) !== null
            : true
  if (!ok) {
    const expected =
      rule.kind === 'json'
        ? 'application/json'
        : rule.kind === 'form'
          ? 'application/x-www-form-urlencoded'
          : rule.kind === 'multipart'
            ? 'multipart/form-data'
            : `one of ${OTLP_ACCEPTED_TYPES_TEXT}`
    throw new AppError(
      415,
      'unsupported_media_type',
      `${route.method} ${route.path} takes ${expected}; got ${type ?? 'no Content-Type'}.`,
    )
  }
}

/**
 * Every response leaves with the request id (and CORS headers for an allowed browser origin).
 * Family responses arrive with both (forward() builds them so), and pass through untouched.
 */
function decorate(response: Response, requestId: string, origin: string | null): Response {
  const needsId = response.headers.get('x-request-id') !== requestId
  const needsCors = origin !== null && !response.headers.has('access-control-allow-origin')
  if (!needsId && !needsCors) return response
  let res = response
  try {
    if (needsId) res.headers.set('x-request-id', requestId)
  } catch {
    res = new Response(response.body, response)
    res.headers.set('x-request-id', requestId)
  }
  if (needsCors) {
    try {
      applyCors(res.headers, origin)
    } catch {
      res = new Response(res.body, res)
      applyCors(res.headers, origin)
    }
  }
  return res
}

/** Whether the request carries a body at all (a declared non-zero length, or chunked). */
function hasBody(request: Request): boolean {
  const length = request.headers.get('content-length')
  return (length !== null && length !== '0') || request.headers.has('transfer-encoding')
}

/**
 * The body as it crosses the binding: JSON bodies as text, read here once within the route's
 * limit (413 beyond it, even when the length was not declared), decoded as strict UTF-8 and held
 * to the JSON input rules (shared/http/json-input.ts); any other body as its stream.
 */
async function forwardedBody(route: RouteSpec, request: Request): Promise<ForwardedBody> {
  if (request.method === 'GET' || request.method === 'HEAD' || !hasBody(request)) return null
  if (route.body?.kind === 'json') return readJsonText(request, route.body.maxBytes)
  return request.body
}

/**
 * Hands the request to its family worker (JS RPC with plain values, shared/worker/family-rpc.ts)
 * and builds the response the client gets. Families get the verified identity in the request
 * context, never the credential itself: a family cannot leak or replay it, and a 5 KB ML-DSA token
 * is not copied over the binding.
 */
async function forward(
  route: RouteSpec,
  request: Request,
  env: GatewayEnv,
  context: RequestContext,
  path: string,
  origin: string | null,
): Promise<Response> {
  const result = await env[FAMILY_BINDING[route.family]].handle({
    method: request.method,
    url: request.url,
    path,
    headers: headerMap(request.headers, 'authorization').headers,
    body: await forwardedBody(route, request),
    context,
  })
  return fromFamilyResponse(result, origin ? corsHeaders(origin) : null)
}

export const gatewayApp = new Hono<GatewayApp>()

gatewayApp.use(async (c, next) => {
  const requestId = requestIdFor(c.req.header('x-request-id') ?? null)
  const url = new URL(c.req.url)
  c.set('requestId', requestId)
  c.set('url', url)
  const settings = gatewaySettings(c.env)
  // PUBLIC_BASE_URL, or a loopback request's own origin; any other Host is 421 (public-origin.ts).
  c.set('baseUrl', publicOrigin(url, settings.PUBLIC_BASE_URL))
  const origin = allowedOrigin(c.req.header('origin') ?? null, settings.CORS_ALLOWED_ORIGINS)
  c.set('origin', origin)
  await next()
  const decorated = decorate(c.res, requestId, origin)
  // Hono's res setter copies the response and its headers: only when something changed.
  if (decorated !== c.res) c.res = decorated
})

gatewayApp.onError((err, c) => {
  const requestId = c.get('requestId') ?? requestIdFor(null)
  const appError = toAppError(err)
  logServerError(appError, { request_id: requestId })
  const path = new URL(c.req.url).pathname
  // OTLP/HTTP: an exporter reads refusals in its own encoding (google.rpc.Status), whoever refused.
  const res = isOtlpPath(path)
    ? otlpErrorResponse(c.req.header('content-type') ?? null, appError, requestId)
    : appError.toResponse(requestId)
  const origin = allowedOrigin(c.req.header('origin') ?? null, c.env.CORS_ALLOWED_ORIGINS)
  if (origin) applyCors(res.headers, origin)
  if (appError.status === 401) {
    const challenge = res.headers.get('www-authenticate')
    if (path === '/mcp') {
      // MCP clients discover the authorization server from this challenge (RFC 9728 §5.1), so
      // every 401 of the MCP endpoint carries it, with the token error when there was one.
      const metadata = `resource_metadata="${c.get('baseUrl')}/.well-known/oauth-protected-resource/mcp"`
      res.headers.set('www-authenticate', challenge ? `${challenge}, ${metadata}` : `Bearer ${metadata}`)
    } else if (!challenge) {
      res.headers.set('www-authenticate', 'Bearer realm="svc"')
    }
  }
  return res
})

gatewayApp.route('/', healthRoutes)
gatewayApp.route('/', openApiRoutes)

gatewayApp.all('*', async (c) => {
  const request = c.req.raw
  const requestId = c.get('requestId')
  if (request.method === 'OPTIONS') {
    return preflight(request, c.get('origin'), requestId)
  }
  const url = c.get('url')
  checkPathEncoding(url.pathname)
  const lookup = routes.lookup(request.method, url.pathname)

  if (lookup.kind === 'match' && lookup.match.route.access === 'public') {
    checkBody(lookup.match.route, request)
    const context = {
      requestId,
      identity: null,
      maxBodyBytes: lookup.match.route.body?.maxBytes ?? 0,
      baseUrl: c.get('baseUrl'),
    }
    return forward(lookup.match.route, request, c.env, context, url.pathname, c.get('origin'))
  }
  if (lookup.kind === 'method_not_allowed' && lookup.public)
    throw methodNotAllowed(request.method, url, lookup.allow)

  const audiences = lookup.kind === 'match' ? tokenAudiencesOf(lookup.match.route) : null
  // The MCP endpoint is the protected resource of the OAuth authorization server (functions/auth/src/oauth).
  const resource =
    lookup.kind === 'match' && lookup.match.route.family === 'mcp' ? mcpResource(c.get('baseUrl')) : null
  const identity = withRequestedMode(
    await authenticate(request, audiences, c.env, c.executionCtx, resource),
    request,
  )
  checkTenant(identity, request, url)

  if (lookup.kind === 'not_found') {
    throw new AppError(
      404,
      'not_found',
      `No endpoint at ${url.pathname}. See ${c.get('baseUrl')}/openapi.json for the API.`,
    )
  }
  if (lookup.kind === 'method_not_allowed') throw methodNotAllowed(request.method, url, lookup.allow)

  const route = lookup.match.route
  checkCredentialKind(route, identity)
  checkScopes(route, identity)
  await enforceCryptoPolicy({ request, identity, requestId, path: url.pathname }, c.env, c.executionCtx)
  checkBody(route, request)
  const context = { requestId, identity, maxBodyBytes: route.body?.maxBytes ?? 0, baseUrl: c.get('baseUrl') }
  const response = await forward(route, request, c.env, context, url.pathname, c.get('origin'))
  if (route.invalidates && response.ok) afterAdminChange(route.invalidates, lookup.match.params, identity)
  return response
})

/**
 * Admin changes take effect at once in the isolate that forwarded them (other isolates follow
 * within their cache TTL): a new crypto policy, a revoked service account, a key revoked, rotated
 * or given new limits, an observability token rotated or revoked. Which routes change what is on
 * their declaration (RouteSpec.invalidates), never matched here by path.
 */
function afterAdminChange(cache: GatewayCache, params: Record<string, string>, identity: Identity): void {
  const param = GATEWAY_CACHE_PARAM[cache]
  const id = param ? (params[param] ?? '') : ''
  switch (cache) {
    case 'crypto_policy':
      invalidateTenantPolicy(identity.tenantId)
      break
    case 'service_account':
      invalidatePrincipal(identity.tenantId, serviceAccountSubject(id))
      break
    case 'api_key':
      invalidateApiKey(id)
      break
    case 'observability_token':
      invalidateObservabilityToken(id)
      break
  }
}

/**
 * The OTLP ingestion routes take observability tokens and service JWTs, never API keys (a
 * general key must not open ingestion); an observability token opens nothing else.
 */
function checkCredentialKind(route: RouteSpec, identity: Identity): void {
  const kind = identity.principal.kind
  if (route.credentials === 'ingestion' && kind === 'api_key') {
    throw new AppError(
      403,
      'api_key_not_accepted',
      `${route.method} ${route.path} takes an observability token (svc_ot_…, from /platform/v1/observability-tokens) or an access token with audience internal-service, not an API key.`,
    )
  }
  if (route.credentials !== 'ingestion' && kind === 'observability_token') {
    throw new AppError(
      403,
      'observability_token_not_accepted',
      `An observability token only sends telemetry (POST /otlp/v1/traces, /metrics, /logs); ${route.method} ${route.path} needs an API key or an access token.`,
    )
  }
}

function methodNotAllowed(method: string, url: URL, allow: string[]): AppError {
  const allowed = allow.includes('GET') ? [...allow, 'HEAD'] : allow
  return new AppError(
    405,
    'method_not_allowed',
    `${method} is not allowed on ${url.pathname}; use ${allowed.join(' or ')}.`,
    {
      headers: { allow: [...allowed, 'OPTIONS'].join(', ') },
    },
  )
}
