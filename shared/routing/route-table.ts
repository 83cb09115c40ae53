/**
 * Every public path of the product, the family worker that serves it, whether it needs a
 * credential, which access-token audiences it accepts, and its body rules. The gateway routes
 * with this table (404/405 with Allow, 413/415, 403 token_wrong_audience), and
 * test/unit/route-ownership.test.ts checks that every family answers every route it owns.
 */
import type { Audience } from '../worker/request-context'

export const FAMILIES = [
  'models',
  'chat',
  'code',
  'knowledge',
  'reasoning',
  'mcp',
  'auth',
  'telemetry',
  'platform',
  'console',
] as const
export type Family = (typeof FAMILIES)[number]

/** Service-binding name of each family in the gateway's wrangler.toml. */
export const FAMILY_BINDING = {
  models: 'MODELS',
  chat: 'CHAT',
  code: 'CODE',
  knowledge: 'KNOWLEDGE',
  reasoning: 'REASONING',
  mcp: 'MCP',
  auth: 'AUTH',
  telemetry: 'TELEMETRY',
  platform: 'PLATFORM',
  console: 'CONSOLE',
} as const satisfies Record<Family, string>

/**
 * Access-token audiences accepted per family (a token for another audience gets 403
 * `token_wrong_audience`). API keys are accepted on every credential route but /otlp: the spec
 * requires them on all /svc routes and /mcp; on /platform they carry the key's role (owner/admin
 * keys may change the crypto policy). /otlp takes the spec's "configured observability token" (a
 * per-workspace `svc_ot_…` token, `credentials: 'ingestion'`) instead of API keys.
 * - /svc/** and /mcp: `external-api` (service accounts calling the API) and `platform` (users).
 * - /platform/v1/**: `platform` (users) and `internal-service` (service accounts).
 * - /otlp/**: `internal-service` only (spec: "a service JWT whose audience is internal-service"),
 *   set on those routes (`audiences`); the telemetry family's /platform/v1/telemetry reads take
 *   the platform audiences.
 * Families with public routes only (models, auth, console) accept no token: the console has
 * sessions of its own, and calls the API through the gateway with the session's token.
 */
export const FAMILY_TOKEN_AUDIENCES: Readonly<Record<Family, readonly Audience[]>> = {
  models: [],
  chat: ['external-api', 'platform'],
  code: ['external-api', 'platform'],
  knowledge: ['external-api', 'platform'],
  reasoning: ['external-api', 'platform'],
  mcp: ['external-api', 'platform'],
  auth: [],
  telemetry: ['platform', 'internal-service'],
  platform: ['platform', 'internal-service'],
  console: [],
}

/** The access-token audiences a route accepts: its own when it names them, else its family's. */
export function tokenAudiencesOf(route: RouteSpec): readonly Audience[] {
  return route.audiences ?? FAMILY_TOKEN_AUDIENCES[route.family]
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

export type BodyKind = 'json' | 'form' | 'multipart' | 'otlp' | 'any'

export interface RouteSpec {
  method: HttpMethod
  /**
   * Hono-style pattern: `/svc/agents/runs/:runId`. A pattern ending in `/*` covers every path below
   * its prefix (the console's pages: the console worker answers each, and its own 404).
   */
  path: string
  family: Family
  /** `public`: no credential; `credential`: API key or access token required. */
  access: 'public' | 'credential'
  body?: { kind: BodyKind; maxBytes: number }
  /** Access-token audiences of this route when they differ from its family's. */
  audiences?: readonly Audience[]
  /**
   * `ingestion`: the OTLP routes, which take observability tokens and access tokens of their
   * audiences but not API keys (a general key must not open ingestion). Every other credential
   * route takes API keys and access tokens, and refuses observability tokens.
   */
  credentials?: 'ingestion'
  /**
   * What a successful answer of this route changes that the gateway caches per isolate (the
   * tenant's crypto policy, a credential's verdict): the isolate that forwarded it forgets that
   * entry at once, other isolates within their cache TTL. The entry is named by the route's
   * parameter of GATEWAY_CACHE_PARAM (a policy by the caller's tenant).
   */
  invalidates?: GatewayCache
  /**
   * How a scoped credential reaches it, when not by its family and method alone
   * (shared/auth/scopes.ts): `read`, a POST that only reads (its query is in the body); `any`,
   * opened by every scope, the route itself deciding what the credential sees.
   */
  scope?: 'read' | 'any'
}

/** The gateway's per-isolate caches that admin routes change. */
export type GatewayCache = 'crypto_policy' | 'service_account' | 'api_key' | 'observability_token'

/** The path parameter that names the cached entry (null: the caller's tenant). */
export const GATEWAY_CACHE_PARAM: Record<GatewayCache, string | null> = {
  crypto_policy: null,
  service_account: 'serviceAccountId',
  api_key: 'keyId',
  observability_token: 'tokenId',
}

const KiB = 1024
const MiB = 1024 * KiB

/** Body limits (documented in README): generous for prompts and transcripts, tight elsewhere. */
export const BODY_LIMITS = {
  chat: 4 * MiB,
  turn: 8 * MiB,
  small: 64 * KiB,
  document: 2 * MiB,
  audio: 26 * MiB,
  otlp: 8 * MiB,
  mcp: 1 * MiB,
  job: 512 * KiB,
  /** A console form: a document upload is up to 1 MiB of text, URL-encoded (the console checks each form's own limit). */
  consoleForm: 4 * MiB,
} as const

const json = (maxBytes: number) => ({ kind: 'json' as const, maxBytes })
const form = (maxBytes: number) => ({ kind: 'form' as const, maxBytes })

/** OTLP ingestion: service JWTs with audience internal-service (spec 001, Authentication 4). */
const OTLP_AUDIENCES: readonly Audience[] = ['internal-service']

export const ROUTES: readonly RouteSpec[] = [
  { method: 'GET', path: '/svc/models', family: 'models', access: 'public' },
  { method: 'GET', path: '/svc/router/models', family: 'models', access: 'public' },

  {
    method: 'POST',
    path: '/svc/chat/completions',
    family: 'chat',
    access: 'credential',
    body: json(BODY_LIMITS.chat),
  },

  {
    method: 'POST',
    path: '/svc/code/v1/turns',
    family: 'code',
    access: 'credential',
    body: json(BODY_LIMITS.turn),
  },
  {
    method: 'POST',
    path: '/svc/code/v1/search',
    family: 'code',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  {
    method: 'POST',
    path: '/svc/code/v1/transcribe',
    family: 'code',
    access: 'credential',
    body: { kind: 'multipart', maxBytes: BODY_LIMITS.audio },
  },
  { method: 'GET', path: '/svc/agents/runs/:runId', family: 'code', access: 'credential' },
  { method: 'DELETE', path: '/svc/agents/runs/:runId', family: 'code', access: 'credential' },

  {
    method: 'POST',
    path: '/svc/feedback',
    family: 'knowledge',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  { method: 'GET', path: '/svc/documents', family: 'knowledge', access: 'credential' },
  {
    method: 'POST',
    path: '/svc/documents/upload',
    family: 'knowledge',
    access: 'credential',
    body: json(BODY_LIMITS.document),
  },
  {
    method: 'POST',
    path: '/svc/documents/retrieve',
    family: 'knowledge',
    access: 'credential',
    body: json(BODY_LIMITS.small),

    scope: 'read',
  },
  // Extensions beyond the spec (documented in docs/retrieval.md): a document's chunks, and deletion.
  { method: 'GET', path: '/svc/documents/:id', family: 'knowledge', access: 'credential' },
  { method: 'DELETE', path: '/svc/documents/:id', family: 'knowledge', access: 'credential' },
  { method: 'GET', path: '/svc/memories', family: 'knowledge', access: 'credential' },
  {
    method: 'POST',
    path: '/svc/memories',
    family: 'knowledge',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  {
    method: 'POST',
    path: '/svc/memories/search',
    family: 'knowledge',
    access: 'credential',
    body: json(BODY_LIMITS.small),

    scope: 'read',
  },

  { method: 'GET', path: '/svc/quantum-reasoning/jobs', family: 'reasoning', access: 'credential' },
  {
    method: 'POST',
    path: '/svc/quantum-reasoning/jobs',
    family: 'reasoning',
    access: 'credential',
    body: json(BODY_LIMITS.job),
  },
  { method: 'GET', path: '/svc/quantum-reasoning/jobs/:jobId', family: 'reasoning', access: 'credential' },
  {
    method: 'GET',
    path: '/svc/quantum-reasoning/jobs/:jobId/receipt',
    family: 'reasoning',
    access: 'credential',
  },
  { method: 'DELETE', path: '/svc/quantum-reasoning/jobs/:jobId', family: 'reasoning', access: 'credential' },
  // QPU provider connections for byopa_managed jobs (functions/reasoning/src/provider-connections.ts).
  {
    method: 'GET',
    path: '/svc/quantum-reasoning/provider-connections',
    family: 'reasoning',
    access: 'credential',
  },
  {
    method: 'POST',
    path: '/svc/quantum-reasoning/provider-connections',
    family: 'reasoning',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  {
    method: 'GET',
    path: '/svc/quantum-reasoning/provider-connections/:connectionId',
    family: 'reasoning',
    access: 'credential',
  },
  {
    method: 'POST',
    path: '/svc/quantum-reasoning/provider-connections/:connectionId/test',
    family: 'reasoning',
    access: 'credential',
  },
  {
    method: 'DELETE',
    path: '/svc/quantum-reasoning/provider-connections/:connectionId',
    family: 'reasoning',
    access: 'credential',
  },

  { method: 'POST', path: '/mcp', family: 'mcp', access: 'credential', body: json(BODY_LIMITS.mcp) },
  // Streamable HTTP's session operations: this server is stateless, the MCP worker answers 405.
  { method: 'GET', path: '/mcp', family: 'mcp', access: 'credential' },
  { method: 'DELETE', path: '/mcp', family: 'mcp', access: 'credential' },
  { method: 'GET', path: '/oauth/protected-resource', family: 'mcp', access: 'public' },
  { method: 'GET', path: '/.well-known/oauth-protected-resource', family: 'mcp', access: 'public' },
  { method: 'GET', path: '/.well-known/oauth-protected-resource/mcp', family: 'mcp', access: 'public' },

  {
    method: 'POST',
    path: '/auth/service-token',
    family: 'auth',
    access: 'public',
    body: json(BODY_LIMITS.small),
  },
  { method: 'POST', path: '/auth/login', family: 'auth', access: 'public', body: json(BODY_LIMITS.small) },
  {
    method: 'POST',
    path: '/auth/token/refresh',
    family: 'auth',
    access: 'public',
    body: json(BODY_LIMITS.small),
  },
  { method: 'GET', path: '/.well-known/jwks.json', family: 'auth', access: 'public' },
  // The OAuth 2.1 authorization server for MCP clients (functions/auth/src/oauth).
  { method: 'GET', path: '/.well-known/oauth-authorization-server', family: 'auth', access: 'public' },
  {
    method: 'POST',
    path: '/oauth/register',
    family: 'auth',
    access: 'public',
    body: json(BODY_LIMITS.small),
  },
  { method: 'GET', path: '/oauth/authorize', family: 'auth', access: 'public' },
  {
    method: 'POST',
    path: '/oauth/authorize',
    family: 'auth',
    access: 'public',
    body: form(BODY_LIMITS.small),
  },
  { method: 'POST', path: '/oauth/token', family: 'auth', access: 'public', body: form(BODY_LIMITS.small) },

  {
    method: 'POST',
    path: '/otlp/v1/traces',
    family: 'telemetry',
    access: 'credential',
    body: { kind: 'otlp', maxBytes: BODY_LIMITS.otlp },
    audiences: OTLP_AUDIENCES,
    credentials: 'ingestion',
  },
  {
    method: 'POST',
    path: '/otlp/v1/metrics',
    family: 'telemetry',
    access: 'credential',
    body: { kind: 'otlp', maxBytes: BODY_LIMITS.otlp },
    audiences: OTLP_AUDIENCES,
    credentials: 'ingestion',
  },
  {
    method: 'POST',
    path: '/otlp/v1/logs',
    family: 'telemetry',
    access: 'credential',
    body: { kind: 'otlp', maxBytes: BODY_LIMITS.otlp },
    audiences: OTLP_AUDIENCES,
    credentials: 'ingestion',
  },

  // Telemetry: the tenant's retained ingestion results and the receiver's operational status.
  { method: 'GET', path: '/platform/v1/telemetry/ingestions', family: 'telemetry', access: 'credential' },
  { method: 'GET', path: '/platform/v1/telemetry/recent', family: 'telemetry', access: 'credential' },
  { method: 'GET', path: '/platform/v1/telemetry/status', family: 'telemetry', access: 'credential' },
  // Observability tokens (OTLP ingestion credentials): owners and admins manage them.
  { method: 'GET', path: '/platform/v1/observability-tokens', family: 'telemetry', access: 'credential' },
  {
    method: 'POST',
    path: '/platform/v1/observability-tokens',
    family: 'telemetry',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  {
    method: 'POST',
    path: '/platform/v1/observability-tokens/:tokenId/rotate',
    family: 'telemetry',
    access: 'credential',
    body: json(BODY_LIMITS.small),
    invalidates: 'observability_token',
  },
  {
    method: 'DELETE',
    path: '/platform/v1/observability-tokens/:tokenId',
    family: 'telemetry',
    access: 'credential',
    invalidates: 'observability_token',
  },

  { method: 'GET', path: '/platform/v1/crypto/policy', family: 'platform', access: 'credential' },
  {
    method: 'PUT',
    path: '/platform/v1/crypto/policy',
    family: 'platform',
    access: 'credential',
    body: json(BODY_LIMITS.small),
    invalidates: 'crypto_policy',
  },
  {
    method: 'PATCH',
    path: '/platform/v1/crypto/policy',
    family: 'platform',
    access: 'credential',
    body: json(BODY_LIMITS.small),
    invalidates: 'crypto_policy',
  },
  { method: 'GET', path: '/platform/v1/crypto/policy/check', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/crypto/algorithms', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/crypto/cbom', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/crypto/compliance', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/crypto/attestation', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/crypto/violations', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/crypto/decisions', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/audit-log/checkpoint', family: 'platform', access: 'credential' },
  {
    method: 'POST',
    path: '/platform/v1/audit-log/checkpoint',
    family: 'platform',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  { method: 'GET', path: '/platform/v1/audit-log/entries', family: 'platform', access: 'credential' },
  {
    method: 'GET',
    path: '/platform/v1/audit-log/proofs/inclusion',
    family: 'platform',
    access: 'credential',
  },
  {
    method: 'GET',
    path: '/platform/v1/audit-log/proofs/consistency',
    family: 'platform',
    access: 'credential',
  },
  { method: 'GET', path: '/platform/v1/audit-log/keys', family: 'platform', access: 'public' },
  // Public trust pages: HTML for people, JSON for machines (Accept: application/json).
  { method: 'GET', path: '/trust/conformance', family: 'platform', access: 'public' },
  { method: 'GET', path: '/trust/entropy', family: 'platform', access: 'public' },
  { method: 'GET', path: '/platform/v1/service-accounts', family: 'platform', access: 'credential' },
  {
    method: 'POST',
    path: '/platform/v1/service-accounts',
    family: 'platform',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  {
    method: 'POST',
    path: '/platform/v1/service-accounts/:serviceAccountId/rotate',
    family: 'platform',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  {
    method: 'DELETE',
    path: '/platform/v1/service-accounts/:serviceAccountId',
    family: 'platform',
    access: 'credential',
    invalidates: 'service_account',
  },
  // API-key management (functions/platform/src/api-keys.ts).
  { method: 'GET', path: '/platform/v1/api-keys', family: 'platform', access: 'credential' },
  {
    method: 'POST',
    path: '/platform/v1/api-keys',
    family: 'platform',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  { method: 'GET', path: '/platform/v1/api-keys/:keyId', family: 'platform', access: 'credential' },
  {
    method: 'PATCH',
    path: '/platform/v1/api-keys/:keyId',
    family: 'platform',
    access: 'credential',
    body: json(BODY_LIMITS.small),
    invalidates: 'api_key',
  },
  {
    method: 'POST',
    path: '/platform/v1/api-keys/:keyId/rotate',
    family: 'platform',
    access: 'credential',
    body: json(BODY_LIMITS.small),
    invalidates: 'api_key',
  },
  {
    method: 'DELETE',
    path: '/platform/v1/api-keys/:keyId',
    family: 'platform',
    access: 'credential',
    invalidates: 'api_key',
  },
  // A key's signed usage statement (functions/platform/src/usage-statement.ts); any scope opens it:
  // a key scoped away from the platform API still reads its own (shared/auth/scopes.ts).
  {
    method: 'GET',
    path: '/platform/v1/api-keys/:keyId/usage-statement',
    family: 'platform',
    access: 'credential',
    scope: 'any',
  },
  // Workspace, plans, billing and usage (functions/platform/src/workspace.ts, usage.ts).
  { method: 'GET', path: '/platform/v1/workspace', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/plans', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/billing', family: 'platform', access: 'credential' },
  {
    method: 'PATCH',
    path: '/platform/v1/billing',
    family: 'platform',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  {
    method: 'POST',
    path: '/platform/v1/billing/plan',
    family: 'platform',
    access: 'credential',
    body: json(BODY_LIMITS.small),
  },
  { method: 'GET', path: '/platform/v1/usage', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/usage/requests', family: 'platform', access: 'credential' },
  // The workspace's agent runs (functions/platform/src/agent-runs.ts).
  { method: 'GET', path: '/platform/v1/agent-runs', family: 'platform', access: 'credential' },
  { method: 'GET', path: '/platform/v1/agent-runs/:runId', family: 'platform', access: 'credential' },
  { method: 'POST', path: '/platform/v1/agent-runs/:runId/cancel', family: 'platform', access: 'credential' },

  // The workspace console (sessions of its own, functions/console) and the API reference page. Its
  // forms are read by the console itself, which answers a wrong type or size with an error page.
  { method: 'GET', path: '/console', family: 'console', access: 'public' },
  { method: 'GET', path: '/console/*', family: 'console', access: 'public' },
  {
    method: 'POST',
    path: '/console/*',
    family: 'console',
    access: 'public',
    body: { kind: 'any', maxBytes: BODY_LIMITS.consoleForm },
  },
  { method: 'GET', path: '/docs', family: 'console', access: 'public' },
  { method: 'GET', path: '/docs/scalar.js', family: 'console', access: 'public' },
]

export interface RouteMatch {
  route: RouteSpec
  params: Record<string, string>
}

interface CompiledPath {
  regex: RegExp
  names: string[]
  routes: Map<HttpMethod, RouteSpec>
  /** A `/*` pattern: matched after every other pattern. */
  below: boolean
}

function compile(routes: readonly RouteSpec[]): {
  exact: Map<string, CompiledPath>
  patterns: CompiledPath[]
} {
  const byPath = new Map<string, CompiledPath>()
  for (const route of routes) {
    let entry = byPath.get(route.path)
    if (!entry) {
      const names: string[] = []
      const below = route.path.endsWith('/*')
      const source = (below ? route.path.slice(0, -2) : route.path)
        .replace(/[.]/g, '\\.')
        .replace(/:([A-Za-z]+)/g, (_, name: string) => {
          names.push(name)
          return '([^/]+)'
        })
      entry = { regex: new RegExp(`^${source}${below ? '/.+' : ''}$`), names, routes: new Map(), below }
      byPath.set(route.path, entry)
    }
    if (entry.routes.has(route.method)) throw new Error(`duplicate route ${route.method} ${route.path}`)
    entry.routes.set(route.method, route)
  }
  const exact = new Map<string, CompiledPath>()
  const patterns: CompiledPath[] = []
  for (const [path, entry] of byPath) {
    if (entry.names.length === 0 && !entry.below) exact.set(path, entry)
    else patterns.push(entry)
  }
  patterns.sort((a, b) => Number(a.below) - Number(b.below))
  return { exact, patterns }
}

function decodeSegment(segment: string): string | null {
  if (!segment.includes('%')) return segment
  try {
    return decodeURIComponent(segment)
  } catch {
    return null
  }
}

export interface PathEncodingProblem {
  kind: 'malformed' | 'nul'
  /** The offending escape(s) as sent, e.g. `%ZZ` or `%C3%28`. */
  escape: string
}

/**
 * Whether a request path is valid percent-encoding of UTF-8 without NUL: `%` followed by two hex
 * digits, escapes forming whole UTF-8 characters, and no `%00`. Paths without `%` cost one scan.
 */
export function pathEncodingProblem(pathname: string): PathEncodingProblem | null {
  if (!pathname.includes('%')) return null
  for (const run of pathname.matchAll(/(?:%[0-9A-Fa-f]{2})+|%.{0,2}/gs)) {
    const escapes = run[0]
    if (!/^(?:%[0-9A-Fa-f]{2})+$/.test(escapes)) return { kind: 'malformed', escape: escapes }
    let decoded: string
    try {
      decoded = decodeURIComponent(escapes)
    } catch {
      return { kind: 'malformed', escape: escapes }
    }
    if (decoded.includes('\0')) return { kind: 'nul', escape: escapes }
  }
  return null
}

export type RouteLookup =
  | { kind: 'match'; match: RouteMatch }
  | { kind: 'method_not_allowed'; allow: HttpMethod[]; public: boolean }
  | { kind: 'not_found' }

export class RouteTable {
  private readonly exact: Map<string, CompiledPath>
  private readonly patterns: CompiledPath[]

  constructor(routes: readonly RouteSpec[] = ROUTES) {
    const compiled = compile(routes)
    this.exact = compiled.exact
    this.patterns = compiled.patterns
  }

  lookup(method: string, pathname: string): RouteLookup {
    const path = pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname
    let entry = this.exact.get(path)
    let params: Record<string, string> = {}
    if (!entry) {
      for (const candidate of this.patterns) {
        const m = candidate.regex.exec(path)
        if (m) {
          const values = candidate.names.map((_, i) => decodeSegment(m[i + 1]!))
          // A parameter that is not valid percent-encoding names nothing (the gateway refuses such
          // paths with 400 before looking them up; this keeps the table itself total).
          if (values.includes(null)) return { kind: 'not_found' }
          entry = candidate
          params = Object.fromEntries(candidate.names.map((n, i) => [n, values[i]!]))
          break
        }
      }
    }
    if (!entry) return { kind: 'not_found' }
    const wanted = (method === 'HEAD' ? 'GET' : method) as HttpMethod
    const route = entry.routes.get(wanted)
    if (route) return { kind: 'match', match: { route, params } }
    const allow = [...entry.routes.keys()]
    return {
      kind: 'method_not_allowed',
      allow,
      public: [...entry.routes.values()].every((r) => r.access === 'public'),
    }
  }
}
