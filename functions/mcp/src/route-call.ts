/**
 * An MCP tool runs the REST route it wraps, in the family worker that owns that route, exactly as
 * the gateway would forward it: the same `handle()` RPC, the caller's verified identity, the
 * route's body limit (shared/routing). So the route's validation, tenancy, plan checks, metering
 * and rate limits apply to the tool call unchanged, and its answer (or refusal) is the route's.
 *
 * The gateway already checked the credential, the tenant and the crypto policy for POST /mcp; what
 * it would check per route beyond that is repeated here: an access token must be for an audience
 * the wrapped route's family accepts (a token bound to the MCP resource by the authorization
 * server is a person's token, accepted like a `platform` one).
 */
import { AppError, toAppError } from '../../../shared/http/errors'
import {
  FAMILY_BINDING,
  type HttpMethod,
  RouteTable,
  tokenAudiencesOf,
} from '../../../shared/routing/route-table'
import type { FamilyResponse } from '../../../shared/worker/family-rpc'
import { logServerError } from '../../../shared/worker/log'
import type { RequestContext } from '../../../shared/worker/request-context'
import type { McpEnv } from './mcp.context'

const routes = new RouteTable()

export interface RouteRequest {
  method: HttpMethod
  /** The path as a client would send it (path parameters already encoded). */
  path: string
  query?: Record<string, string | undefined>
  body?: unknown
  headers?: Record<string, string>
}

export interface RouteAnswer {
  status: number
  headers: Record<string, string>
  /** The JSON body, or the text of a non-JSON body. */
  body: unknown
}

async function bodyText(body: FamilyResponse['body']): Promise<string> {
  if (body === null) return ''
  if (typeof body === 'string') return body
  return new Response(body).text()
}

/**
 * Calls the route through its family's binding with the caller's identity. Never throws: a fault
 * of this worker (a misconfigured tool, an unbound family, a failed call) is answered like a
 * refusal of the route, so tools and resources render every failure one way.
 */
export async function callRoute(
  env: McpEnv,
  context: RequestContext,
  request: RouteRequest,
): Promise<RouteAnswer> {
  try {
    return await callBoundRoute(env, context, request)
  } catch (err) {
    const error = toAppError(err)
    logServerError(error, { request_id: context.requestId })
    return refusal(error)
  }
}

async function callBoundRoute(
  env: McpEnv,
  context: RequestContext,
  request: RouteRequest,
): Promise<RouteAnswer> {
  const lookup = routes.lookup(request.method, request.path)
  if (lookup.kind !== 'match') {
    throw new AppError(500, 'tool_route_missing', 'This tool is misconfigured.', {
      internalMessage: `no route for ${request.method} ${request.path} (${lookup.kind})`,
    })
  }
  const { route } = lookup.match
  const binding = env[FAMILY_BINDING[route.family] as keyof McpEnv] as McpEnv['CHAT']
  if (!binding) {
    throw new AppError(
      503,
      'tool_unavailable',
      `This deployment has not bound the ${route.family} service to the MCP worker.`,
    )
  }
  const principal = context.identity?.principal
  if (route.access === 'credential' && principal?.kind === 'access_token' && !principal.resource) {
    const accepted = tokenAudiencesOf(route)
    if (!accepted.includes(principal.audience)) {
      return refusal(
        new AppError(
          403,
          'token_wrong_audience',
          `This token is for audience "${principal.audience}"; ${request.method} ${route.path} requires ${accepted.map((a) => `"${a}"`).join(' or ')}.`,
        ),
      )
    }
  }
  const url = new URL(request.path, context.baseUrl)
  for (const [name, value] of Object.entries(request.query ?? {})) {
    if (value !== undefined) url.searchParams.set(name, value)
  }
  const body = request.body === undefined ? null : JSON.stringify(request.body)
  const maxBodyBytes = route.body?.maxBytes ?? 0
  if (body !== null && new TextEncoder().encode(body).byteLength > maxBodyBytes) {
    return refusal(
      new AppError(
        413,
        'request_too_large',
        `The arguments are larger than ${request.method} ${route.path} accepts (${maxBodyBytes} bytes).`,
      ),
    )
  }
  const answer = await binding.handle({
    method: request.method,
    url: url.href,
    path: url.pathname,
    headers: {
      ...(body !== null ? { 'content-type': 'application/json' } : {}),
      accept: 'application/json',
      ...request.headers,
    },
    body,
    context: { ...context, maxBodyBytes },
  })
  const text = await bodyText(answer.body)
  const json = (answer.headers['content-type'] ?? '').includes('json')
  let parsed: unknown = text
  if (json && text !== '') {
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = text
    }
  }
  return { status: answer.status, headers: answer.headers, body: parsed }
}

/** A refusal of this worker in the shape of a route's answer, so tools and resources render it as they render the route's. */
export function refusal(error: AppError): RouteAnswer {
  const plain = error.toPlain()
  return { status: plain.status, headers: plain.headers, body: error.toBody() }
}
