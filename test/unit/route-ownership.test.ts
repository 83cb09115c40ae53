/**
 * The gateway routes every path in shared/routing/route-table.ts to one family over its service
 * binding; this holds each family to the routes the table gives it. Every route is sent to its
 * family worker's `handle()` exactly as the gateway would send it (the owner of a fresh tenant on
 * credential routes, an empty JSON object as the body) and must not get the answer that family
 * gives a path it has no route for. Any other answer counts: a validation error, a refusal, a 501
 * for a feature not in this release, a 503 because these workers run here without a database or
 * Durable Objects. Run with no bindings at all, so no route does real work.
 */
import { createExecutionContext, env } from 'cloudflare:test'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import AuthWorker from '../../functions/auth/src/index'
import ChatWorker from '../../functions/chat/src/index'
import CodeWorker from '../../functions/code/src/index'
import ConsoleWorker from '../../functions/console/src/index'
import KnowledgeWorker from '../../functions/knowledge/src/index'
import McpWorker from '../../functions/mcp/src/index'
import ModelsWorker from '../../functions/models/src/index'
import PlatformWorker from '../../functions/platform/src/index'
import ReasoningWorker from '../../functions/reasoning/src/index'
import TelemetryWorker from '../../functions/telemetry/src/index'
import { FAMILIES, type Family, ROUTES, type RouteSpec } from '../../shared/routing/route-table'
import { apiKeyIdentity, callFamily, type FamilyCall, type FamilyWorkerClass } from './family-call'

const WORKERS: Record<Family, FamilyWorkerClass<never>> = {
  models: ModelsWorker,
  chat: ChatWorker,
  code: CodeWorker,
  knowledge: KnowledgeWorker,
  reasoning: ReasoningWorker,
  mcp: McpWorker,
  auth: AuthWorker,
  telemetry: TelemetryWorker,
  platform: PlatformWorker,
  console: ConsoleWorker,
}

const noBindings = env as never

/** A concrete path for the route's pattern: each `:param` becomes a fresh UUID. */
const concrete = (route: RouteSpec) => route.path.replace(/:[A-Za-z]+/g, () => crypto.randomUUID())

function callFor(route: RouteSpec): FamilyCall {
  const body = route.body ? (route.body.kind === 'json' ? {} : '') : undefined
  const contentType =
    route.body?.kind === 'multipart'
      ? 'multipart/form-data; boundary=x'
      : route.body?.kind === 'otlp'
        ? 'application/x-protobuf'
        : undefined
  return {
    method: route.method,
    ...(body === undefined ? {} : { body }),
    ...(contentType ? { headers: { 'content-type': contentType } } : {}),
    identity: route.access === 'credential' ? apiKeyIdentity() : null,
    ...(route.body ? { maxBodyBytes: route.body.maxBytes } : {}),
  }
}

interface Answer {
  status: number
  code: string | null
}

async function answerOf(response: Response): Promise<Answer> {
  const text = await response.text()
  let code: string | null = null
  try {
    code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null
  } catch {
    // not JSON: a catalog, a stream, a document
  }
  return { status: response.status, code }
}

/** What the family answers for a path no route of it matches, for each method the table uses. */
async function noSuchRoute(family: Family, method: string): Promise<Answer> {
  const path = `/no-such-route-${crypto.randomUUID()}`
  const call: FamilyCall = { method, identity: apiKeyIdentity() }
  if (method !== 'GET' && method !== 'DELETE') call.body = {}
  return answerOf(await callFamily(WORKERS[family], noBindings, path, call))
}

describe('every family answers every route the route table gives it', () => {
  // Families log every 5xx they answer; here the 503s of missing bindings are expected.
  beforeAll(() => void vi.spyOn(console, 'error').mockImplementation(() => {}))
  afterAll(() => vi.restoreAllMocks())

  it('knows what "no such route" looks like for each family (the baseline below is not vacuous)', async () => {
    for (const family of FAMILIES) {
      const missing = await noSuchRoute(family, 'GET')
      expect(missing.status, family).toBe(404)
    }
  })

  for (const route of ROUTES) {
    it(`${route.family}: ${route.method} ${route.path}`, async () => {
      const missing = await noSuchRoute(route.family, route.method)
      const answer = await answerOf(
        await callFamily(WORKERS[route.family], noBindings, concrete(route), callFor(route)),
      )
      expect(answer, `${route.method} ${route.path} answered as an unknown path`).not.toEqual(missing)
    })
  }
})

describe('nothing a family documents answers 501', () => {
  beforeAll(() => void vi.spyOn(console, 'error').mockImplementation(() => {}))
  afterAll(() => vi.restoreAllMocks())

  // A route in /openapi.json is advertised to clients: none may answer 501 (not implemented).
  for (const family of FAMILIES) {
    it(family, async () => {
      const worker = new WORKERS[family](createExecutionContext(), noBindings)
      const document = (await worker.openapi()) as { paths?: Record<string, Record<string, unknown>> }
      for (const [documented, operations] of Object.entries(document.paths ?? {})) {
        const path = documented.replace(/\{[^}]+\}/g, () => crypto.randomUUID())
        for (const method of Object.keys(operations)) {
          const route = ROUTES.find((r) => r.family === family && r.method === method.toUpperCase())
          const call: FamilyCall = { method: method.toUpperCase(), identity: apiKeyIdentity() }
          if (method !== 'get' && method !== 'delete') call.body = route?.body?.kind === 'json' ? {} : ''
          const answer = await answerOf(await callFamily(WORKERS[family], noBindings, path, call))
          expect(answer.status, `${method.toUpperCase()} ${documented}`).not.toBe(501)
        }
      }
    })
  }
})
