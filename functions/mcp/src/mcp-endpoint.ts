/**
 * POST /mcp (and GET/DELETE /mcp, answered 405: the server is stateless, so there is no session
 * to stream on or to end). The gateway has authenticated the caller (API key or access token,
 * 401 with the protected-resource challenge otherwise) and checked tenancy and the crypto policy;
 * here, before the SDK sees the request:
 *
 * 1. DNS-rebinding protection: the Host must be one of MCP_ALLOWED_HOSTS (when set), and a
 *    browser's Origin the API's own host, one of MCP_ALLOWED_ORIGINS, or a loopback origin when
 *    the request itself went to a loopback host (403 otherwise);
 * 2. the plan: the `mcp` feature (403 with the action-required body naming the upgrade);
 * 3. the SDK's handler, with the identity and the caller's MCP scopes as `authInfo` (a tool call
 *    without `mcp:tools` is answered 403 `insufficient_scope` with the challenge).
 */
import type { OpenAPIHono } from '@hono/zod-openapi'
import { createRoute, z } from '@hono/zod-openapi'
import { validateHostHeader, validateOriginHeader } from '@modelcontextprotocol/server'
import { actionRequiredOrErrorResponse } from '../../../shared/http/error-body'
import { AppError } from '../../../shared/http/errors'
import { actionRequiredError, checkFeatureAccess, resolvePlan } from '../../../shared/plans'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import type { RequestContext } from '../../../shared/worker/request-context'
import { type McpEnv, mcpSettings } from './mcp.context'
import { mcpHandler, mcpScopesOf } from './mcp-server'

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]']

function hostnameOf(host: string): string {
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : (host.split(':')[0] ?? host)
}

function checkHostAndOrigin(request: Request, context: RequestContext, env: McpEnv): void {
  const settings = mcpSettings(env)
  const url = new URL(request.url)
  if (settings.MCP_ALLOWED_HOSTS.length > 0) {
    const host = validateHostHeader(url.host, settings.MCP_ALLOWED_HOSTS)
    if (!host.ok) {
      throw new AppError(
        403,
        'host_not_allowed',
        `This MCP server does not answer requests addressed to ${url.host}; use ${settings.MCP_ALLOWED_HOSTS.join(' or ')}.`,
      )
    }
  }
  const origin = request.headers.get('origin')
  if (origin === null) return
  const allowed = [hostnameOf(new URL(context.baseUrl).host), ...settings.MCP_ALLOWED_ORIGINS]
  if (LOOPBACK.includes(hostnameOf(url.host))) allowed.push(...LOOPBACK)
  const check = validateOriginHeader(origin, allowed)
  if (!check.ok) {
    throw new AppError(
      403,
      'origin_not_allowed',
      `Browser pages from ${origin} may not call this MCP server (DNS-rebinding protection); the operator can allow the host in MCP_ALLOWED_ORIGINS.`,
    )
  }
}

function checkPlan(env: McpEnv, planId: string): void {
  const { plan, catalog } = resolvePlan(env, planId)
  const denied = checkFeatureAccess(plan, 'mcp', { catalog })
  if (denied) throw actionRequiredError(denied, { catalog })
}

const JsonRpcMessage = z
  .object({
    jsonrpc: z.literal('2.0'),
    method: z.string().optional(),
    id: z.union([z.string(), z.number()]).optional(),
  })
  .passthrough()
  .openapi('McpJsonRpcMessage', { description: 'A JSON-RPC 2.0 message (MCP request or notification)' })

export function mcpEndpointRoutes(app: OpenAPIHono<FamilyEnv<McpEnv>>): void {
  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'post',
      path: '/mcp',
      tags: ['MCP'],
      summary: 'MCP Streamable HTTP endpoint (protocol revisions 2025-11-25 and 2026-07-28, stateless)',
      description:
        'JSON-RPC over Streamable HTTP. API key or OAuth access token (401 with `WWW-Authenticate: Bearer resource_metadata=".../.well-known/oauth-protected-resource/mcp"` otherwise). 2025-11-25 clients initialize (no session id is issued); 2026-07-28 clients send `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` on every request. Tools: web_search, memory_create, memory_search, document_upload, document_list, document_retrieve, chat_completion, reasoning_job_create, reasoning_job_get, crypto_policy_check, crypto_algorithm_lookup, models_list; resources `svc://documents/{id}` and `svc://memories` (docs/mcp.md).',
      request: { body: { required: true, content: { 'application/json': { schema: JsonRpcMessage } } } },
      responses: {
        200: {
          description: 'The JSON-RPC response, as JSON or as a server-sent event stream',
          content: {
            'application/json': { schema: JsonRpcMessage },
            'text/event-stream': { schema: z.string() },
          },
        },
        202: { description: 'A notification was accepted' },
        400: {
          description: 'The body is not a JSON-RPC message the server takes (a JSON-RPC error, id null)',
          content: { 'application/json': { schema: JsonRpcMessage } },
        },
        403: actionRequiredOrErrorResponse(
          'feature_required: the plan does not include MCP (action-required body); host_not_allowed or origin_not_allowed (DNS-rebinding protection, error body)',
        ),
        406: {
          description: 'Accept does not list both application/json and text/event-stream (a JSON-RPC error)',
          content: { 'application/json': { schema: JsonRpcMessage } },
        },
      },
    }),
  )
  app.on(['POST', 'GET', 'DELETE'], '/mcp', async (c) => {
    const context = c.get('request')
    const identity = identityOf(c)
    checkHostAndOrigin(c.req.raw, context, c.env)
    checkPlan(c.env, identity.planId)
    const parsedBody = c.req.method === 'POST' ? await c.req.json().catch(() => undefined) : undefined
    const principal = identity.principal
    return mcpHandler.fetch(c.req.raw, {
      ...(parsedBody !== undefined ? { parsedBody } : {}),
      authInfo: {
        token: '',
        clientId:
          principal.kind === 'api_key'
            ? `key:${principal.keyId}`
            : principal.kind === 'access_token'
              ? (principal.clientId ?? principal.subject)
              : principal.subject,
        scopes: mcpScopesOf(identity.scopes),
        resource: new URL(`${context.baseUrl}/mcp`),
        resourceMetadataUrl: `${context.baseUrl}/.well-known/oauth-protected-resource/mcp`,
        extra: { caller: { context, env: c.env } },
      },
    })
  })
}
