/**
 * The caller's documents and memories as MCP resources, for clients that let a person attach
 * context (the tools search; resources are read whole). Like the tools, each resource read runs a
 * REST route with the caller's identity (route-call.ts), so tenancy and plan apply unchanged; its
 * contents are the route's JSON body. A route's 404 is the protocol's resource-not-found; any other
 * refusal is a protocol error carrying the route's message (resources have no `isError` result).
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  type ReadResourceResult,
  ResourceNotFoundError,
  ResourceTemplate,
} from '@modelcontextprotocol/server'
import type { McpCaller } from './mcp-server'
import { callRoute, type RouteAnswer, type RouteRequest } from './route-call'
import { refusalText } from './tools'

export const DOCUMENT_URI = 'svc://documents/{id}'
export const MEMORIES_URI = 'svc://memories'

/** The route's JSON body, or the route's refusal as a protocol error. */
async function routeJson(caller: McpCaller, uri: string, call: RouteRequest | RouteAnswer): Promise<unknown> {
  const answer = 'status' in call ? call : await callRoute(caller.env, caller.context, call)
  if (answer.status >= 200 && answer.status < 300) return answer.body
  if (answer.status === 404) throw new ResourceNotFoundError(uri, refusalText(answer))
  const code =
    answer.status === 400
      ? ProtocolErrorCode.InvalidParams
      : answer.status >= 500
        ? ProtocolErrorCode.InternalError
        : ProtocolErrorCode.InvalidRequest
  throw new ProtocolError(code, refusalText(answer))
}

function jsonContents(uri: string, body: unknown): ReadResourceResult {
  return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(body) }] }
}

interface DocumentList {
  data: { id: string; source: string; size_bytes: number; chunk_count: number; updated_at: string }[]
}

export interface ResourceSpec {
  name: string
  uri: string | ResourceTemplate
  title: string
  description: string
  read(caller: McpCaller, uri: URL, variables: Record<string, string | string[]>): Promise<ReadResourceResult>
}

/** Resources whose list or read needs the caller: built per request with it. */
export function resourcesFor(caller: McpCaller): ResourceSpec[] {
  return [
    {
      name: 'document',
      uri: new ResourceTemplate(DOCUMENT_URI, {
        // The 100 newest documents (GET /svc/documents); document_list pages through all of them.
        list: async () => {
          const answer = await callRoute(caller.env, caller.context, {
            method: 'GET',
            path: '/svc/documents',
            query: { limit: '100' },
          })
          // A plan without retrieval has no document resources to offer; reading one says why.
          if (answer.status === 403) return { resources: [] }
          const page = (await routeJson(caller, 'svc://documents', answer)) as DocumentList
          return {
            resources: page.data.map((d) => ({
              uri: `svc://documents/${d.id}`,
              name: d.source,
              title: d.source,
              mimeType: 'application/json',
              description: `${d.size_bytes} bytes in ${d.chunk_count} chunks, updated ${d.updated_at}`,
            })),
          }
        },
      }),
      title: 'Workspace document',
      description:
        'A document of the workspace with its chunks and their character offsets (GET /svc/documents/{id}).',
      read: async (c, uri, variables) => {
        const id = String(variables.id ?? '')
        return jsonContents(
          uri.href,
          await routeJson(c, uri.href, { method: 'GET', path: `/svc/documents/${encodeURIComponent(id)}` }),
        )
      },
    },
    {
      name: 'memories',
      uri: MEMORIES_URI,
      title: 'My memories',
      description:
        "The caller's 100 newest personal memory records (GET /svc/memories); memory_search finds older ones.",
      read: async (c, uri) =>
        jsonContents(
          uri.href,
          await routeJson(c, uri.href, { method: 'GET', path: '/svc/memories', query: { limit: '100' } }),
        ),
    },
  ]
}
