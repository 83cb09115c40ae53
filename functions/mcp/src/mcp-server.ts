/**
 * The MCP server: one `McpServer` per HTTP request (the SDK's `createMcpHandler` serves the
 * stateless 2026-07-28 revision and, for 2025-era clients, the stateless legacy fallback from the
 * same factory), so nothing pins a client to an isolate. The caller's identity comes from the
 * gateway through `authInfo.extra`; every tool call runs the wrapped route with it.
 */
import {
  type AuthInfo,
  type CallToolResult,
  createMcpHandler,
  fromJsonSchema,
  McpServer,
  requireScopes,
} from '@modelcontextprotocol/server'
import { CfWorkerJsonSchemaValidator } from '@modelcontextprotocol/server/validators/cf-worker'
import { MCP_RESOURCE_SCOPES } from '../../../shared/auth/oauth-resources'
import { AppError, toAppError } from '../../../shared/http/errors'
import { RouteTable } from '../../../shared/routing/route-table'
import { logError } from '../../../shared/worker/family-app'
import type { RequestContext } from '../../../shared/worker/request-context'
import type { McpEnv } from './mcp.context'
import { callRoute } from './route-call'
import { routeOutputSchema } from './route-schemas'
import { TOOLS, type ToolSpec, toolOutcome } from './tools'

export const SERVER_INFO = { name: 'svc', title: 'svc hosted MCP server', version: '2026-08-04' } as const

const INSTRUCTIONS =
  'Tools of the svc developer API for this workspace: web search, personal memories, one-shot chat completions with the workspace models, durable reasoning jobs, and the crypto policy and algorithm registry. Every call is made as the authenticated user or API key, within its workspace and plan: calls are metered and rate limited like the REST API, and a refusal (plan, allowance, bad argument) comes back as a tool error that says what to do.'

const validator = new CfWorkerJsonSchemaValidator()
const routeTable = new RouteTable()

/** What the endpoint hands the server factory about the caller (never read from client headers). */
export interface McpCaller {
  context: RequestContext
  env: McpEnv
}

export function callerOf(authInfo: AuthInfo | undefined): McpCaller {
  const caller = authInfo?.extra?.caller as McpCaller | undefined
  if (!caller) throw new AppError(401, 'missing_credential', 'POST /mcp requires a bearer credential.')
  return caller
}

/** Output schemas per tool, resolved once per isolate from the families' OpenAPI documents. */
let outputSchemas: Promise<Map<string, Record<string, unknown>>> | null = null

function toolOutputSchemas(env: McpEnv): Promise<Map<string, Record<string, unknown>>> {
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
    const map = new Map<string, Record<string, unknown>>()
    for (const [name, schema] of pairs) if (schema) map.set(name, schema)
    // A family that could not answer is asked again by the next request.
    if (map.size < pairs.filter(([, s]) => s !== null).length) outputSchemas = null
    return map
  })
  return outputSchemas
}

export function clearToolOutputSchemas(): void {
  outputSchemas = null
}

async function runTool(
  spec: ToolSpec,
  args: unknown,
  authInfo: AuthInfo | undefined,
  structured: boolean,
): Promise<CallToolResult> {
  const { env, context } = callerOf(authInfo)
  try {
    const answer = await callRoute(env, context, spec.request(args as never))
    return toolOutcome(spec, args, answer, structured)
  } catch (err) {
    const error = toAppError(err)
    logError(context.requestId, error)
    return { isError: true, content: [{ type: 'text', text: `${error.message} (${error.code})` }] }
  }
}

async function buildServer(authInfo: AuthInfo | undefined): Promise<McpServer> {
  const { env } = callerOf(authInfo)
  const schemas = await toolOutputSchemas(env)
  const server = new McpServer(SERVER_INFO, {
    instructions: INSTRUCTIONS,
    capabilities: { tools: {} },
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
        ...(output ? { outputSchema: fromJsonSchema(output, validator) } : {}),
        annotations: spec.annotations,
        scopeChallenge: requireScopes('mcp:tools'),
      },
      (args: unknown) => runTool(spec, args, authInfo, output !== undefined),
    )
  }
  return server
}

/** The SDK's web-standard handler, one per isolate (it holds no per-client state). */
export const mcpHandler = createMcpHandler(({ authInfo }) => buildServer(authInfo), {
  legacy: 'stateless',
  responseMode: 'auto',
  onerror: (error) => console.error(JSON.stringify({ level: 'warn', msg: 'mcp', detail: error.message })),
})

/** The scopes an identity holds for MCP: a credential without scopes is unrestricted within its role. */
export function mcpScopesOf(scopes: readonly string[]): string[] {
  return scopes.length === 0
    ? [...MCP_RESOURCE_SCOPES]
    : scopes.filter((s) => (MCP_RESOURCE_SCOPES as readonly string[]).includes(s))
}
