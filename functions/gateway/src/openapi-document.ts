/**
 * The OpenAPI 3.1 document: the families' own zod-generated parts (each family describes the
 * routes it validates and the refusals it gives), the gateway's part, and what the gateway adds
 * to every operation — the refusals it gives itself in front of the family (path encoding,
 * credentials, scopes and tenancy, crypto policy, body size and type), read from the route table
 * so that the document says what each route really answers.
 */
import { createRoute, OpenAPIHono } from '@hono/zod-openapi'
import { errorResponse } from '../../../shared/http/error-body'
import { FAMILIES, FAMILY_BINDING, ROUTES, type RouteSpec } from '../../../shared/routing/route-table'
import type { GatewayEnv } from './gateway.context'

export const API_VERSION = '2026-08-04'

interface OpenApiPart {
  paths?: Record<string, Record<string, unknown>>
  components?: Record<string, Record<string, unknown>>
}

/** The gateway's own routes, described with the same route definitions the families use. */
function gatewayPart(): OpenApiPart {
  const described = new OpenAPIHono()
  const operations = [
    {
      path: '/healthz',
      operationId: 'getHealth',
      summary: 'Liveness (public)',
      ok: 'The gateway is running',
    },
    {
      path: '/readyz',
      operationId: 'getReadiness',
      summary: 'Readiness: touches the database (public)',
      ok: 'Ready',
      unavailable: 'A dependency is unavailable',
    },
    {
      path: '/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'This document (public)',
      ok: 'OpenAPI 3.1',
    },
  ]
  for (const op of operations) {
    described.openAPIRegistry.registerPath(
      createRoute({
        method: 'get',
        path: op.path,
        operationId: op.operationId,
        tags: ['Operations'],
        summary: op.summary,
        security: [],
        responses: {
          200: { description: op.ok },
          ...(op.unavailable ? { 503: errorResponse(op.unavailable) } : {}),
        },
      }),
    )
  }
  return described.getOpenAPI31Document({
    openapi: '3.1.0',
    info: { title: 'gateway', version: API_VERSION },
  }) as OpenApiPart
}

type Schema = { $ref?: string; anyOf?: Schema[] } & Record<string, unknown>

interface DocumentedResponse {
  description: string
  content?: Record<string, { schema?: Schema }>
}

interface Operation {
  operationId?: string
  security?: unknown[]
  parameters?: unknown[]
  responses: Record<string, DocumentedResponse>
}

const ERROR_REF: Schema = { $ref: '#/components/schemas/Error' }

/** `x-svc-mode` (gateway.app.ts, withRequestedMode): on every credential route. */
const MODE_PARAMETER = {
  name: 'x-svc-mode',
  in: 'header',
  required: false,
  description:
    'The mode the request acts in, test or live (README, "Test and live"): a person\'s token chooses with it (live without it); an API key or service account acts in its own mode and may name only that one (403 mode_mismatch otherwise). Another mode\'s resources answer as if they did not exist.',
  schema: { type: 'string', enum: ['test', 'live'] },
}

/** `post /svc/agents/runs/{runId}` → `postSvcAgentsRunsByRunId`: stable, unique per method and path. */
function derivedOperationId(path: string, method: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .map((part) => (part.startsWith('{') ? `by-${part.slice(1, -1)}` : part))
    .flatMap((part) => part.split(/[^A-Za-z0-9]+/))
    .filter(Boolean)
  return [method, ...words].map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('')
}

function refersToError(schema: Schema): boolean {
  return schema.$ref === ERROR_REF.$ref || (schema.anyOf ?? []).some(refersToError)
}

/**
 * Documents a refusal the gateway gives on this route. A status the family did not document gets
 * the `Error` body; one it did keeps the family's description and gains the gateway's, and when
 * the family's body there is another shape (the action-required body of a plan refusal) the
 * schema becomes "either". A family response without a JSON body (the OTLP routes answer in the
 * request's own encoding, the gateway's refusals included) is left as the family wrote it.
 */
function addGatewayRefusal(
  responses: Record<string, DocumentedResponse>,
  status: number,
  what: string,
): void {
  const key = String(status)
  const existing = responses[key]
  if (!existing) {
    responses[key] = { description: what, content: { 'application/json': { schema: ERROR_REF } } }
    return
  }
  const media = existing.content?.['application/json']
  if (!media?.schema) return
  existing.description = `${existing.description}. From the gateway: ${what}`
  if (!refersToError(media.schema))
    media.schema = { anyOf: [...(media.schema.anyOf ?? [media.schema]), ERROR_REF] }
}

/** The refusals the gateway gives on a route before (or instead of) its family (gateway.app.ts). */
export function gatewayRefusals(route: RouteSpec | undefined): [status: number, what: string][] {
  const refusals: [number, string][] = []
  const input = [
    'malformed_path: the path is not valid percent-encoding',
    ...(route?.body?.kind === 'json'
      ? [
          'a body that is not JSON or breaks the input rules (invalid UTF-8, nesting over 64 levels, NUL or an unpaired surrogate, a number out of range, a reserved field name)',
        ]
      : []),
    ...(route?.access === 'credential'
      ? ['too_many_declared_algorithms', 'invalid_mode: x-svc-mode is neither test nor live']
      : []),
  ]
  refusals.push([400, input.join('; ')])
  if (route?.access === 'credential') {
    refusals.push([401, 'No credential, or one that is invalid, expired or revoked'])
    refusals.push([
      403,
      "insufficient_scope (the credential's scopes do not cover the route), tenant_mismatch, mode_mismatch (x-svc-mode names a mode the credential does not act in), token_wrong_audience, a credential of the wrong kind for the route, or crypto_policy_violation (the workspace's policy in enforce mode)",
    ])
  }
  if (route?.body) {
    refusals.push([
      413,
      `request_too_large: the body is larger than this route takes (${route.body.maxBytes} bytes)`,
    ])
    refusals.push([415, 'unsupported_media_type: the Content-Type is not the one this route takes'])
  }
  if (route?.access === 'credential') {
    refusals.push([
      503,
      'credential_store_unavailable, token_keys_unavailable or crypto_policy_unavailable: the credential or the policy cannot be checked right now; retry shortly',
    ])
  }
  return refusals
}

function routeOf(path: string, method: string): RouteSpec | undefined {
  return ROUTES.find(
    (r) => r.method === method.toUpperCase() && r.path.replace(/:([A-Za-z]+)/g, '{$1}') === path,
  )
}

/** What every operation gets from the gateway in front of it: an operationId, and its refusals. */
function completeOperation(path: string, method: string, operation: Operation): void {
  operation.operationId ??= derivedOperationId(path, method)
  const route = routeOf(path, method)
  for (const [status, what] of gatewayRefusals(route)) {
    addGatewayRefusal(operation.responses, status, what)
  }
  if (route?.access === 'credential') {
    operation.parameters = [...(operation.parameters ?? []), { $ref: '#/components/parameters/Mode' }]
  }
}

export async function composeOpenApi(env: GatewayEnv, baseUrl: string): Promise<Record<string, unknown>> {
  const parts = (await Promise.all(FAMILIES.map((f) => env[FAMILY_BINDING[f]].openapi()))) as OpenApiPart[]
  const paths: Record<string, Record<string, unknown>> = {}
  const components: Record<string, Record<string, unknown>> = {
    schemas: {},
    securitySchemes: {},
    parameters: { Mode: MODE_PARAMETER },
  }
  for (const part of [gatewayPart(), ...parts]) {
    for (const [path, ops] of Object.entries(part.paths ?? {})) paths[path] = { ...paths[path], ...ops }
    for (const [kind, entries] of Object.entries(part.components ?? {})) {
      components[kind] = { ...components[kind], ...entries }
    }
  }
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      completeOperation(path, method, operation as Operation)
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc API',
      version: API_VERSION,
      description:
        'Model and agent API (chat completions, agent turns and runs, search, transcription, knowledge, reasoning jobs, MCP) and platform API (tokens, telemetry, crypto policy). Errors use {"error":{"message","type","param","code"}} (schema Error). A refusal by the plan (402, 403, 429 where the operation says so) is the action-required body (schema ActionRequiredError): the upgrade decision `svc_upgrade` (schema_version 2026-07-31) beside `error`, and a copy inside `error` for clients that keep only `error`.',
    },
    servers: [{ url: baseUrl }],
    security: [{ bearer: [] }],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components,
  }
}
