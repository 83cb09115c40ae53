/**
 * A tool's `outputSchema` is the JSON Schema of the success body of the route it wraps, taken
 * from that family's own OpenAPI document: the one the family generates from the zod schema its
 * route answers with. So the MCP surface cannot drift from the REST one (one definition per wire
 * shape). Component references become `$defs` of a self-contained JSON Schema 2020-12 document
 * (MCP's default dialect); OpenAPI-only keywords are dropped.
 *
 * The documents are fetched once per isolate over the families' `openapi()` RPC; a family that
 * cannot answer leaves its tools without an output schema (their results still carry the JSON).
 */
import { FAMILY_BINDING, type Family } from '../../../shared/routing/route-table'
import { errorFields, log } from '../../../shared/worker/log'
import type { McpEnv } from './mcp.context'

type Json = Record<string, unknown>

interface OpenApiDocument {
  paths?: Record<
    string,
    Record<string, { responses?: Record<string, { content?: Record<string, { schema?: Json }> }> }>
  >
  components?: { schemas?: Record<string, Json> }
}

const COMPONENT_PREFIX = '#/components/schemas/'
const OPENAPI_ONLY = new Set(['example', 'discriminator', 'xml', 'externalDocs', 'nullable'])

const documents = new Map<Family, Promise<OpenApiDocument | null>>()

export function clearRouteSchemas(): void {
  documents.clear()
}

function documentOf(env: McpEnv, family: Family): Promise<OpenApiDocument | null> {
  let doc = documents.get(family)
  if (!doc) {
    const binding = env[FAMILY_BINDING[family] as keyof McpEnv] as McpEnv['CHAT']
    doc = binding
      ? (binding.openapi() as Promise<OpenApiDocument>).catch((err: unknown) => {
          log('warn', 'route_schemas_unavailable', { family, ...errorFields(err) })
          documents.delete(family)
          return null
        })
      : Promise.resolve(null)
    documents.set(family, doc)
  }
  return doc
}

/** Rewrites refs to `$defs`, drops OpenAPI-only keywords, and collects the components it refers to. */
function rewrite(node: unknown, used: Set<string>): unknown {
  if (Array.isArray(node)) return node.map((n) => rewrite(n, used))
  if (node === null || typeof node !== 'object') return node
  const out: Json = {}
  for (const [key, value] of Object.entries(node as Json)) {
    if (OPENAPI_ONLY.has(key)) continue
    if (key === '$ref' && typeof value === 'string' && value.startsWith(COMPONENT_PREFIX)) {
      const name = value.slice(COMPONENT_PREFIX.length)
      used.add(name)
      out.$ref = `#/$defs/${name}`
    } else {
      out[key] = rewrite(value, used)
    }
  }
  return out
}

/** `/svc/jobs/:jobId` → `/svc/jobs/{jobId}` (how OpenAPI names the path). */
export function openApiPath(routePath: string): string {
  return routePath.replace(/:([A-Za-z]+)/g, '{$1}')
}

/** A reference followed to its component. */
function dereferenced(node: Json, components: Record<string, Json>, used: Set<string>): Json {
  let out = node
  while (typeof out.$ref === 'string' && Object.keys(out).length === 1) {
    out = rewrite(components[out.$ref.slice('#/$defs/'.length)] ?? {}, used) as Json
  }
  return out
}

/**
 * The root as one object schema: a reference is followed, and an `allOf` of objects (how a zod
 * schema that extends a named one is documented) is merged into one, its properties and required
 * names together.
 */
function objectRoot(node: Json, components: Record<string, Json>, used: Set<string>): Json {
  const root = dereferenced(node, components, used)
  if (!Array.isArray(root.allOf)) return root
  const parts = (root.allOf as Json[]).map((part) => objectRoot(part, components, used))
  if (!parts.every((part) => part.type === 'object')) return root
  const { allOf: _allOf, ...rest } = root
  return {
    ...rest,
    type: 'object',
    properties: Object.assign({}, ...parts.map((part) => part.properties ?? {})),
    required: [...new Set(parts.flatMap((part) => (part.required as string[] | undefined) ?? []))],
  }
}

/**
 * The JSON Schema of the JSON success answer of `method path` in `family`'s OpenAPI document, or
 * null when the family documents none that is an object (MCP output schemas describe objects).
 */
export async function routeOutputSchema(
  env: McpEnv,
  family: Family,
  method: string,
  routePath: string,
): Promise<Json | null> {
  const doc = await documentOf(env, family)
  const operation = doc?.paths?.[openApiPath(routePath)]?.[method.toLowerCase()]
  const responses = operation?.responses ?? {}
  const success = ['200', '201', '202'].map((s) => responses[s]).find(Boolean)
  const schema = success?.content?.['application/json']?.schema
  if (!schema) return null
  const components = doc?.components?.schemas ?? {}
  const used = new Set<string>()
  let root = rewrite(schema, used) as Json
  // The root must be the object itself, not a reference to it.
  root = objectRoot(root, components, used)
  if (root.type !== 'object') return null
  const defs: Json = {}
  const pending = [...used]
  while (pending.length > 0) {
    const name = pending.pop()!
    if (name in defs) continue
    const before = new Set(used)
    defs[name] = rewrite(components[name] ?? {}, used)
    for (const added of used) if (!before.has(added)) pending.push(added)
  }
  return Object.keys(defs).length > 0 ? { ...root, $defs: defs } : root
}
