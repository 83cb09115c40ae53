/**
 * The OpenAPI 3.1 document, composed from the families' own zod-generated documents (each
 * family describes the routes it validates) plus the gateway's, cached per isolate; and the
 * interactive reference page rendered from the same document.
 */
import { createRoute, OpenAPIHono } from '@hono/zod-openapi'
import SCALAR_SCRIPT from '@scalar/api-reference/browser/standalone.js?raw'
import { Scalar } from '@scalar/hono-api-reference'
import { Hono } from 'hono'
import { errorResponse } from '../../../shared/http/error-body'
import { FAMILIES, FAMILY_BINDING, ROUTES } from '../../../shared/routing/route-table'
import type { GatewayApp, GatewayEnv } from './gateway.context'

export const API_VERSION = '2026-08-04'

interface OpenApiPart {
  paths?: Record<string, Record<string, unknown>>
  components?: Record<string, Record<string, unknown>>
}

/**
 * The gateway's own routes, described with the same route definitions the families use, so that
 * their error bodies refer to the one `Error` schema (shared/http/error-body.ts).
 */
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
    {
      path: '/docs',
      operationId: 'getApiReference',
      summary: 'Human-readable API reference (public)',
      ok: 'HTML',
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

interface Operation {
  operationId?: string
  security?: unknown[]
  parameters?: unknown[]
  responses: Record<string, unknown>
}

const ERROR_REF = { $ref: '#/components/schemas/Error' }

/** `x-svc-mode` (gateway.app.ts, withRequestedMode): on every credential route. */
const MODE_PARAMETER = {
  name: 'x-svc-mode',
  in: 'header',
  required: false,
  description:
    'The mode the request acts in, test or live (README, "Test and live"): a person\'s token chooses with it (live without it); an API key or service account acts in its own mode and may name only that one (403 mode_mismatch otherwise). Another mode\'s resources answer as if they did not exist.',
  schema: { type: 'string', enum: ['test', 'live'] },
}
const errorBody = (description: string) => ({
  description,
  content: { 'application/json': { schema: ERROR_REF } },
})

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

/**
 * What every operation gets from the gateway in front of it, when its family did not say it
 * already: an operationId derived from method and path, and the 4xx answers the gateway itself
 * gives on that route (400 for input its rules refuse, 401 without a valid credential on
 * credential routes, 413 for a body over the route's limit).
 */
function completeOperation(path: string, method: string, operation: Operation): void {
  operation.operationId ??= derivedOperationId(path, method)
  const route = ROUTES.find(
    (r) => r.method === method.toUpperCase() && r.path.replace(/:([A-Za-z]+)/g, '{$1}') === path,
  )
  const responses = operation.responses
  responses['400'] ??= errorBody(
    'The request was refused by the input rules (the message names what and why)',
  )
  if (route?.access === 'credential') {
    responses['401'] ??= errorBody('No credential, or one that is invalid, expired or revoked')
    operation.parameters = [...(operation.parameters ?? []), { $ref: '#/components/parameters/Mode' }]
  }
  if (route?.body)
    responses['413'] ??= errorBody(`The body is larger than this route takes (${route.body.maxBytes} bytes)`)
}

let cached: Promise<Record<string, unknown>> | null = null

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
        'Model and agent API (chat completions, agent turns and runs, search, transcription, knowledge, reasoning jobs, MCP) and platform API (tokens, telemetry, crypto policy). Errors use {"error":{"message","type","param","code"}}.',
    },
    servers: [{ url: baseUrl }],
    security: [{ bearer: [] }],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components,
  }
}

/**
 * The interactive reference (Scalar's Hono middleware), rendered in the browser from /openapi.json.
 * Its script is bundled into this worker and served from /docs/scalar.js; the page's CSP allows
 * nothing but this origin, so reading the reference makes no request anywhere else.
 */
const REFERENCE_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
].join('; ')

const referencePage = Scalar<GatewayApp>({
  url: '/openapi.json',
  cdn: '/docs/scalar.js',
  pageTitle: 'svc API reference',
  withDefaultFonts: false,
  hideClientButton: true,
})

export const docsRoutes = new Hono<GatewayApp>()

function documentFor(env: GatewayEnv, baseUrl: string): Promise<Record<string, unknown>> {
  if (!cached) {
    cached = composeOpenApi(env, baseUrl).catch((err) => {
      cached = null
      throw err
    })
  }
  return cached.then((doc) => ({ ...doc, servers: [{ url: baseUrl }] }))
}

docsRoutes.get('/openapi.json', async (c) => c.json(await documentFor(c.env, c.get('baseUrl'))))
docsRoutes.get('/docs', async (c, next) => {
  c.header('content-security-policy', REFERENCE_CSP)
  return referencePage(c, next)
})
docsRoutes.get('/docs/scalar.js', (c) =>
  c.body(SCALAR_SCRIPT, 200, {
    'content-type': 'text/javascript; charset=utf-8',
    'cache-control': 'public, max-age=86400',
  }),
)
