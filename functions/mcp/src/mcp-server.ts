/**
 * The MCP server: one `McpServer` per HTTP request (the SDK's `createMcpHandler` serves the
 * stateless 2026-07-28 revision and, for 2025-era clients, the stateless legacy fallback from the
 * same factory), so nothing pins a client to an isolate. The caller's identity comes from the
 * gateway through `authInfo.extra`; every tool call runs the wrapped route with it.
 */
import {
  type AuthInfo,
  createMcpHandler,
  fromJsonSchema,
  McpServer,
  requireScopes,
} from '@modelcontextprotocol/server'
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/server/validators/cf-worker'
import { MCP_RESOURCE_SCOPES } from '../../../shared/auth/oauth-resources'
import { RouteTable } from '../../../shared/routing/route-table'
import { errorFields, log } from '../../../shared/worker/log'
import type { RequestContext } from '../../../shared/worker/request-context'
import type { McpEnv } from './mcp.context'
import { resourcesFor } from './resources'
import { callRoute } from './route-call'
import { routeOutputSchema } from './route-schemas'
import { TOOLS, toolOutcome } from './tools'

export const SERVER_INFO = { name: 'svc', title: 'svc hosted MCP server', version: '2026-08-04' } as const

const INSTRUCTIONS =
  "Tools of the svc developer API for this workspace: web search, personal memories, the workspace documents (upload, list, search), one-shot chat completions with the workspace models, durable reasoning jobs, and the crypto policy and algorithm registry. Every call is made as the authenticated user or API key, within its workspace and plan: calls are metered and rate limited like the REST API, and a refusal (plan, allowance, bad argument) comes back as a tool error that says what to do. Resources: each document (svc://documents/{id}) and the caller's memories (svc://memories)."

const validator = new CfWorkerJsonSchemaValidator()
const routeTable = new RouteTable()

/** What the endpoint hands the server factory about the caller (never read from client headers). */
export interface McpCaller {
  context: RequestContext
  env: McpEnv
}

/**
 * The caller the endpoint put into `authInfo.extra`. The endpoint is the handler's only user and
 * resolves the identity first (its 401 is the family app's), so a missing caller is a fault here.
 */
function callerOf(authInfo: AuthInfo | undefined): McpCaller {
  const caller = authInfo?.extra?.caller as McpCaller | undefined
  if (!caller) throw new Error('mcpHandler was called without the caller in authInfo.extra')
  return caller
}

type OutputSchema = ReturnType<typeof fromJsonSchema>

/**
 * Output schemas per tool, resolved once per isolate from the families' OpenAPI documents and
 * compiled once (compiling them for every request's server cost more than the tool call).
 */
let outputSchemas: Promise<Map<string, OutputSchema>> | null = null

function toolOutputSchemas(env: McpEnv): Promise<Map<string, OutputSchema>> {
  outputSchemas ??= Promise.all(
    TOOLS.map(async (spec) => {
      const lookup = routeTable.lookup(spec.route.method, spec.route.path.replace(/:[A-Za-z]+/g, 'x'))
      if (lookup.kind !== 'match') return [spec.name, null] as const
      return [
        spec.name,
        await routeOutputSchema(env, lookup.match.route.family, spec.route.method, spec.route.path),
      ] as const
    }),
  ).then((pairs) => {
    const map = new Map<string, OutputSchema>()
    for (const [name, schema] of pairs) if (schema) map.set(name, fromJsonSchema(schema, validator))
    // A family that could not answer is asked again by the next request.
    if (map.size < pairs.filter(([, s]) => s !== null).length) outputSchemas = null
    return map
  })
  return outputSchemas
}

async function buildServer(caller: McpCaller): Promise<McpServer> {
  const schemas = await toolOutputSchemas(caller.env)
  const server = new McpServer(SERVER_INFO, {
    instructions: INSTRUCTIONS,
    // The tool and resource lists never change while a server lives (one request): say so, or
    // 2026-07-28 clients would wait on listen streams for list-changed notifications.
    capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
    jsonSchemaValidator: validator,
  })
  for (const spec of TOOLS) {
    const output = schemas.get(spec.name)
    server.registerTool(
      spec.name,
      {
        title: spec.title,
        description: spec.description,
        inputSchema: spec.input,
        ...(output ? { outputSchema: output } : {}),
        annotations: spec.annotations,
        scopeChallenge: requireScopes('mcp:tools'),
      },
      async (args: unknown) =>
        toolOutcome(
          spec,
          args,
          await callRoute(caller.env, caller.context, spec.request(args as never)),
          output !== undefined,
        ),
    )
  }
  for (const spec of resourcesFor(caller)) {
    const config = {
      title: spec.title,
      description: spec.description,
      mimeType: 'application/json',
      scopeChallenge: requireScopes('mcp:resources'),
    }
    if (typeof spec.uri === 'string') {
      server.registerResource(spec.name, spec.uri, config, (uri) => spec.read(caller, uri, {}))
    } else {
      server.registerResource(spec.name, spec.uri, config, (uri, variables) =>
        spec.read(caller, uri, variables),
      )
    }
  }
  return server
}

/** The SDK's web-standard handler, one per isolate (it holds no per-client state). */
export const mcpHandler = createMcpHandler(({ authInfo }) => buildServer(callerOf(authInfo)), {
  legacy: 'stateless',
  responseMode: 'auto',
  onerror: (error) => log('warn', 'mcp_transport_error', errorFields(error)),
})

/** The scopes an identity holds for MCP: a credential without scopes is unrestricted within its role. */
export function mcpScopesOf(scopes: readonly string[]): string[] {
  return scopes.length === 0
    ? [...MCP_RESOURCE_SCOPES]
    : scopes.filter((s) => (MCP_RESOURCE_SCOPES as readonly string[]).includes(s))
}
