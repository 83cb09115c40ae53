import { describe, expect, it } from 'vitest'
import {
  FAMILIES,
  FAMILY_TOKEN_AUDIENCES,
  GATEWAY_CACHE_PARAM,
  pathEncodingProblem,
  ROUTES,
  RouteTable,
  tokenAudiencesOf,
} from './route-table'

const table = new RouteTable()

describe('RouteTable', () => {
  it('matches exact and parameterised paths to their family', () => {
    const exact = table.lookup('POST', '/svc/chat/completions')
    expect(exact.kind === 'match' && exact.match.route.family).toBe('chat')
    const param = table.lookup('DELETE', '/svc/agents/runs/5b0c6b8e-3f2a-4c1d-9e7f-0a1b2c3d4e5f')
    expect(param).toMatchObject({
      kind: 'match',
      match: { params: { runId: '5b0c6b8e-3f2a-4c1d-9e7f-0a1b2c3d4e5f' } },
    })
  })

  it('treats a trailing slash as the same path and HEAD as GET', () => {
    expect(table.lookup('GET', '/svc/models/').kind).toBe('match')
    expect(table.lookup('HEAD', '/svc/models').kind).toBe('match')
  })

  it('reports the allowed methods for a known path with another method', () => {
    expect(table.lookup('PUT', '/svc/memories')).toEqual({
      kind: 'method_not_allowed',
      allow: ['GET', 'POST'],
      public: false,
    })
    expect(table.lookup('POST', '/svc/models')).toMatchObject({ kind: 'method_not_allowed', public: true })
  })

  it('never throws on malformed percent-encoding in a parameter: the path names nothing', () => {
    for (const bad of ['%ZZ', '%', '%E0%A4', '%C3%28']) {
      expect(table.lookup('GET', `/svc/agents/runs/${bad}`)).toEqual({ kind: 'not_found' })
    }
    expect(table.lookup('GET', '/svc/agents/runs/run%2D1')).toMatchObject({
      kind: 'match',
      match: { params: { runId: 'run-1' } },
    })
  })

  it('finds the first malformed escape or NUL in a path, and passes well-formed ones', () => {
    expect(pathEncodingProblem('/svc/agents/runs/%ZZ')).toEqual({ kind: 'malformed', escape: '%ZZ' })
    expect(pathEncodingProblem('/a/%')).toEqual({ kind: 'malformed', escape: '%' })
    expect(pathEncodingProblem('/a/%E0%A4/b')).toEqual({ kind: 'malformed', escape: '%E0%A4' })
    expect(pathEncodingProblem('/a/%C3%28')).toEqual({ kind: 'malformed', escape: '%C3%28' })
    expect(pathEncodingProblem('/a/%ED%A0%80')).toEqual({ kind: 'malformed', escape: '%ED%A0%80' })
    expect(pathEncodingProblem('/a/x%00y')).toEqual({ kind: 'nul', escape: '%00' })
    for (const good of ['/svc/models', '/a/caf%C3%A9/%E2%82%AC%20x', '/a/%2F%25']) {
      expect(pathEncodingProblem(good)).toBeNull()
    }
  })

  it('does not let a parameter swallow extra segments', () => {
    expect(table.lookup('GET', '/svc/agents/runs/a/b').kind).toBe('not_found')
    expect(table.lookup('GET', '/svc/modelsX').kind).toBe('not_found')
  })

  it('routes every family, and only the spec public paths and the public trust evidence are public', () => {
    expect(new Set(ROUTES.map((r) => r.family))).toEqual(new Set(FAMILIES))
    const publicPaths = ROUTES.filter((r) => r.access === 'public').map((r) => `${r.method} ${r.path}`)
    expect(publicPaths).toEqual([
      'GET /svc/models',
      'GET /svc/router/models',
      'GET /oauth/protected-resource',
      'GET /.well-known/oauth-protected-resource',
      'GET /.well-known/oauth-protected-resource/mcp',
      'POST /auth/service-token',
      'POST /auth/login',
      'POST /auth/token/refresh',
      'GET /.well-known/jwks.json',
      // The OAuth authorization server for MCP clients (metadata, registration, authorization, token).
      'GET /.well-known/oauth-authorization-server',
      'POST /oauth/register',
      'GET /oauth/authorize',
      'POST /oauth/authorize',
      'POST /oauth/token',
      // The audit logs' verification keys and the spec's "public pages" (conformance, entropy).
      'GET /platform/v1/audit-log/keys',
      'GET /trust/conformance',
      'GET /trust/entropy',
      // The console (sessions of its own) and the API reference page.
      'GET /console',
      'GET /console/*',
      'POST /console/*',
      'GET /docs',
      'GET /docs/scalar.js',
    ])
  })

  it('gives the console every path below /console, and nothing beside it', () => {
    for (const path of ['/console', '/console/overview', '/console/agent-runs/x/cancel', '/console/']) {
      expect(table.lookup('GET', path)).toMatchObject({
        kind: 'match',
        match: { route: { family: 'console' } },
      })
    }
    expect(table.lookup('POST', '/console/api-keys')).toMatchObject({
      kind: 'match',
      match: { route: { family: 'console', body: { kind: 'any' } } },
    })
    expect(table.lookup('DELETE', '/console/api-keys')).toMatchObject({
      kind: 'method_not_allowed',
      public: true,
    })
    expect(table.lookup('GET', '/consoles').kind).toBe('not_found')
    expect(table.lookup('GET', '/docs/other.js').kind).toBe('not_found')
    // A parameter pattern still wins over nothing, and an exact path over a prefix.
    expect(table.lookup('GET', '/svc/agents/runs/r1')).toMatchObject({ match: { route: { family: 'code' } } })
  })

  it('gives every credential route the token audiences of its family', () => {
    const audiencesOf = (method: string, path: string) => {
      const found = table.lookup(method, path)
      if (found.kind !== 'match') throw new Error(`${method} ${path} did not match`)
      return tokenAudiencesOf(found.match.route)
    }
    expect(audiencesOf('POST', '/svc/chat/completions')).toEqual(['external-api', 'platform'])
    expect(audiencesOf('POST', '/mcp')).toEqual(['external-api', 'platform'])
    expect(audiencesOf('GET', '/platform/v1/crypto/policy')).toEqual(['platform', 'internal-service'])
    expect(audiencesOf('POST', '/otlp/v1/traces')).toEqual(['internal-service'])
    expect(audiencesOf('GET', '/platform/v1/telemetry/ingestions')).toEqual(['platform', 'internal-service'])
    for (const route of ROUTES.filter((r) => r.access === 'credential')) {
      expect(FAMILY_TOKEN_AUDIENCES[route.family].length, `${route.method} ${route.path}`).toBeGreaterThan(0)
    }
  })

  it('routes the admin API of the platform family', () => {
    for (const [method, path] of [
      ['PUT', '/platform/v1/crypto/policy'],
      ['PATCH', '/platform/v1/crypto/policy'],
      ['GET', '/platform/v1/crypto/violations'],
      ['POST', '/platform/v1/service-accounts'],
      ['POST', '/platform/v1/service-accounts/5b0c6b8e-3f2a-4c1d-9e7f-0a1b2c3d4e5f/rotate'],
      ['DELETE', '/platform/v1/service-accounts/5b0c6b8e-3f2a-4c1d-9e7f-0a1b2c3d4e5f'],
    ] as const) {
      expect(table.lookup(method, path)).toMatchObject({
        kind: 'match',
        match: { route: { family: 'platform', access: 'credential' } },
      })
    }
  })

  it('refuses a table with a duplicate route', () => {
    expect(() => new RouteTable([ROUTES[0]!, ROUTES[0]!])).toThrow(/duplicate route/)
  })

  it('routes that change what the gateway caches say so on their declaration, naming the entry by a parameter they have', () => {
    for (const route of ROUTES.filter((r) => r.invalidates)) {
      expect(route.method, route.path).not.toBe('GET')
      const param = GATEWAY_CACHE_PARAM[route.invalidates!]
      if (param) expect(route.path).toContain(`:${param}`)
    }
    // Every change to one key, service account or observability token, and to the crypto policy.
    const changes = ROUTES.filter(
      (r) =>
        r.method !== 'GET' &&
        /\/(api-keys|observability-tokens|service-accounts)\/:[a-zA-Z]+(\/rotate)?$|\/crypto\/policy$/.test(
          r.path,
        ),
    )
    expect(changes.length).toBeGreaterThanOrEqual(8)
    // Changes that leave every cached entry true, and why.
    const unchanged: Record<string, string> = {
      'POST /platform/v1/service-accounts/:serviceAccountId/rotate':
        'a new secret; access tokens already issued stay valid until they expire, the principal is unchanged',
    }
    expect(changes.filter((r) => !r.invalidates).map((r) => `${r.method} ${r.path}`)).toEqual(
      Object.keys(unchanged),
    )
  })
})
