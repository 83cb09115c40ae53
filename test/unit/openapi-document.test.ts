/**
 * The OpenAPI document as /openapi.json serves it, composed here from the real family workers:
 * it states spec 000's error contract operation by operation (every status of the spec's Errors
 * table, with a body schema), the action-required body wherever a refusal by the plan is the
 * answer (closed enums, as in the spec), and no status a route really answers goes undocumented.
 */

import { createExecutionContext, env } from 'cloudflare:test'
import { Validator } from '@cfworker/json-schema'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import AuthWorker from '../../functions/auth/src/index'
import ChatWorker from '../../functions/chat/src/index'
import CodeWorker from '../../functions/code/src/index'
import ConsoleWorker from '../../functions/console/src/index'
import { composeOpenApi } from '../../functions/gateway/src/openapi-document'
import KnowledgeWorker from '../../functions/knowledge/src/index'
import McpWorker from '../../functions/mcp/src/index'
import ModelsWorker from '../../functions/models/src/index'
import PlatformWorker from '../../functions/platform/src/index'
import ReasoningWorker from '../../functions/reasoning/src/index'
import TelemetryWorker from '../../functions/telemetry/src/index'
import { checkFeatureAccess, checkTokenAllowance, rateLimitedDecision } from '../../shared/plans/entitlements'
import { getPlan, PLAN_CATALOG } from '../../shared/plans/plan-catalog'
import {
  actionRequiredError,
  BINDING_LIMIT_KINDS,
  BINDING_LIMIT_UNITS,
  UPGRADE_ACTION_KINDS,
  UPGRADE_REASONS,
  type UpgradeDecision,
} from '../../shared/plans/upgrade-decision'
import { FAMILY_BINDING, type Family, ROUTES, type RouteSpec } from '../../shared/routing/route-table'
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

type Schema = Record<string, unknown> & { $ref?: string; anyOf?: Schema[] }
interface Documented {
  description: string
  content?: Record<string, { schema?: Schema }>
}
interface OpenApiDocument {
  paths: Record<string, Record<string, { responses: Record<string, Documented> }>>
  components: { schemas: Record<string, Schema> }
}

const noBindings = env as never

/** The document the gateway serves, with each family's part read from its worker's RPC. */
async function servedDocument(): Promise<OpenApiDocument> {
  const bindings = Object.fromEntries(
    (Object.keys(WORKERS) as Family[]).map((family) => [
      FAMILY_BINDING[family],
      { openapi: () => new WORKERS[family](createExecutionContext(), noBindings).openapi() },
    ]),
  )
  return (await composeOpenApi(bindings as never, 'https://svc.test')) as unknown as OpenApiDocument
}

/** Spec 000, "Errors": the statuses each endpoint answers. */
const SPEC_ERRORS: Record<string, number[]> = {
  'POST /svc/chat/completions': [401, 402, 403, 429],
  'POST /svc/code/v1/turns': [400, 401, 402, 403, 429, 503],
  'GET /svc/agents/runs/{runId}': [401, 404],
  'DELETE /svc/agents/runs/{runId}': [401, 404, 409],
  'POST /svc/code/v1/search': [400, 401, 502, 503],
  'POST /svc/code/v1/transcribe': [400, 401, 503],
  'POST /svc/feedback': [401],
  'GET /svc/documents': [401, 403],
  'POST /svc/documents/retrieve': [401],
  'POST /svc/documents/upload': [429],
  'GET /svc/memories': [401],
  'POST /svc/memories': [401],
  'POST /svc/memories/search': [401],
  'POST /svc/quantum-reasoning/jobs': [403, 409, 429, 503],
  'GET /svc/quantum-reasoning/jobs': [401],
  'GET /svc/quantum-reasoning/jobs/{jobId}': [404],
  'DELETE /svc/quantum-reasoning/jobs/{jobId}': [409],
  'POST /mcp': [401],
}

/** Where a refusal by the plan is the answer: the action-required body (spec: 402/403/429 of chat). */
const ACTION_REQUIRED: Record<string, number[]> = {
  'POST /svc/chat/completions': [402, 403, 429],
  'POST /svc/code/v1/turns': [402, 403, 429],
  'POST /svc/code/v1/search': [402, 403, 429],
  'POST /svc/code/v1/transcribe': [402, 403, 429],
  'GET /svc/documents': [403],
  'GET /svc/documents/{id}': [403],
  'POST /svc/documents/retrieve': [403],
  'POST /svc/documents/upload': [429],
  'POST /svc/quantum-reasoning/jobs': [402, 403, 429],
  'POST /mcp': [403],
}

const ACTION_REQUIRED_REF = '#/components/schemas/ActionRequiredError'
const ERROR_REF = '#/components/schemas/Error'

function operation(doc: OpenApiDocument, key: string) {
  const [method, path] = key.split(' ') as [string, string]
  const op = doc.paths[path]?.[method.toLowerCase()]
  if (!op) throw new Error(`${key} is not in the document`)
  return op
}

function jsonSchemaOf(response: Documented | undefined): Schema | undefined {
  return response?.content?.['application/json']?.schema
}

function refs(schema: Schema | undefined): string[] {
  if (!schema) return []
  return schema.anyOf ? schema.anyOf.flatMap(refs) : schema.$ref ? [schema.$ref] : ['(inline)']
}

/** A component as a standalone JSON Schema (its $refs resolved against the document's components). */
function componentValidator(doc: OpenApiDocument, name: string): Validator {
  const schema = JSON.parse(
    JSON.stringify({ $ref: `#/$defs/${name}`, $defs: doc.components.schemas }).replaceAll(
      '#/components/schemas/',
      '#/$defs/',
    ),
  ) as object
  return new Validator(schema, '2020-12', false)
}

let doc: OpenApiDocument
beforeAll(async () => {
  doc = await servedDocument()
})

describe("the OpenAPI document states spec 000's error contract", () => {
  it.each(Object.entries(SPEC_ERRORS))('%s documents %j, each with a body schema', (key, statuses) => {
    const { responses } = operation(doc, key)
    for (const status of statuses) {
      const schema = jsonSchemaOf(responses[String(status)])
      expect(schema, `${key} ${status}`).toBeDefined()
      expect(refs(schema).length, `${key} ${status}`).toBeGreaterThan(0)
    }
  })

  it.each(Object.entries(ACTION_REQUIRED))('%s: %j carry the action-required body', (key, statuses) => {
    const { responses } = operation(doc, key)
    for (const status of statuses) {
      expect(refs(jsonSchemaOf(responses[String(status)])), `${key} ${status}`).toContain(ACTION_REQUIRED_REF)
    }
  })

  it('402 and 429 of chat completions are only the action-required body; its 403 also the error body of the gateway (scope, tenant, policy)', () => {
    const { responses } = operation(doc, 'POST /svc/chat/completions')
    expect(refs(jsonSchemaOf(responses['402']))).toEqual([ACTION_REQUIRED_REF])
    expect(refs(jsonSchemaOf(responses['429']))).toEqual([ACTION_REQUIRED_REF])
    expect(refs(jsonSchemaOf(responses['403'])).sort()).toEqual([ACTION_REQUIRED_REF, ERROR_REF].sort())
  })

  it('the upgrade decision has the closed enums and required fields of the spec', () => {
    const { schemas } = doc.components
    const decision = schemas.UpgradeDecision as {
      properties: Record<string, Schema>
      required: string[]
      additionalProperties: unknown
    }
    expect(decision.additionalProperties).toBe(false)
    expect(decision.required.sort()).toEqual(
      ['actions', 'current_plan', 'reason', 'required_plan', 'schema_version'].sort(),
    )
    expect(decision.properties.schema_version).toMatchObject({ enum: ['2026-07-31'] })
    expect(decision.properties.reason).toMatchObject({ enum: [...UPGRADE_REASONS] })
    const limit = schemas.BindingLimit as { properties: Record<string, Schema>; required: string[] }
    expect(limit).toMatchObject({ additionalProperties: false })
    expect(limit.required.sort()).toEqual(['kind', 'unit'])
    expect(limit.properties.kind).toMatchObject({ enum: [...BINDING_LIMIT_KINDS] })
    expect(limit.properties.unit).toMatchObject({ enum: [...BINDING_LIMIT_UNITS] })
    expect(limit.properties.resets_at).toMatchObject({ type: ['string', 'null'], format: 'date-time' })
    const action = schemas.UpgradeAction as { properties: Record<string, Schema>; required: string[] }
    expect(action).toMatchObject({ additionalProperties: false })
    expect(action.required.sort()).toEqual(['available', 'kind', 'label', 'url'])
    expect(action.properties.kind).toMatchObject({ enum: [...UPGRADE_ACTION_KINDS] })
    const body = schemas.ActionRequiredError as { required: string[]; properties: Record<string, Schema> }
    expect(body.required.sort()).toEqual(['error', 'svc_upgrade'])
    expect(body.properties.svc_upgrade).toEqual({ $ref: '#/components/schemas/UpgradeDecision' })
  })

  it('validates the bodies the product sends, and refuses what the spec does not allow', () => {
    const validator = componentValidator(doc, 'ActionRequiredError')
    const plan = (id: string) => getPlan(id, PLAN_CATALOG)!
    const o = { catalog: PLAN_CATALOG }
    const resetsAt = '2027-01-01T00:00:00.000Z'
    const decisions = [
      checkFeatureAccess(plan('free'), 'thinking', o),
      checkTokenAllowance(
        plan('pro'),
        {
          usedTokens: 5_000_000,
          resetsAt,
          creditBalanceCents: 0,
          overageSpentCents: 0,
          usageCreditsEnabled: true,
        },
        o,
      ),
      rateLimitedDecision(
        plan('free'),
        { unit: 'requests', used: 21, retryAfterSeconds: 2, resetsAt: null },
        o,
      ),
    ] as UpgradeDecision[]
    for (const decision of decisions) {
      const body = JSON.parse(JSON.stringify(actionRequiredError(decision, o).toBody())) as {
        error: Record<string, unknown>
        svc_upgrade: UpgradeDecision
      }
      expect(validator.validate(body).errors, decision.reason).toEqual([])
      const tampered = [
        { ...body, svc_upgrade: { ...decision, extra: 1 } },
        { ...body, svc_upgrade: { ...decision, reason: 'because' } },
        { ...body, svc_upgrade: { ...decision, schema_version: '2026-01-01' } },
        { ...body, svc_upgrade: { ...decision, actions: [{ ...decision.actions[0], kind: 'pay_more' }] } },
        { ...body, svc_upgrade: { ...decision, binding_limit: { kind: 'tokens', unit: 'words' } } },
        { ...body, error: { ...body.error, svc_upgrade: { ...decision, reason: 'because' } } },
        { error: body.error },
      ]
      for (const wrong of tampered) expect(validator.validate(wrong).valid, JSON.stringify(wrong)).toBe(false)
    }
  })

  it('every refusal of every operation names its body (OTLP answers in the request encoding)', () => {
    for (const [path, operations] of Object.entries(doc.paths)) {
      if (path.startsWith('/otlp/')) continue
      for (const [method, op] of Object.entries(operations)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue
          const schemas = Object.values(response.content ?? {}).map((m) => m.schema)
          expect(schemas.length, `${method.toUpperCase()} ${path} ${status}`).toBeGreaterThan(0)
        }
      }
    }
  })
})

/** A concrete path for the route's pattern: each `:param` becomes a fresh UUID. */
const concrete = (route: RouteSpec) => route.path.replace(/:[A-Za-z]+/g, () => crypto.randomUUID())
const documentedPath = (route: RouteSpec) => route.path.replace(/:([A-Za-z]+)/g, '{$1}')

function callFor(route: RouteSpec, identity: FamilyCall['identity']): FamilyCall {
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
    identity: route.access === 'credential' ? identity : null,
    ...(route.body ? { maxBodyBytes: route.body.maxBytes } : {}),
  }
}

describe('no status a route answers is missing from its operation', () => {
  // Families log every 5xx they answer; here the 503s of missing bindings are expected.
  beforeAll(() => void vi.spyOn(console, 'error').mockImplementation(() => {}))
  afterAll(() => vi.restoreAllMocks())

  // The families run without bindings (no database, objects or providers), called as the
  // gateway calls them by callers on three plans and in two roles: validation errors, plan
  // refusals, role refusals and unavailable stores are all answers a client can get.
  const callers = {
    'pro owner': apiKeyIdentity(),
    'free member': apiKeyIdentity({ planId: 'free', role: 'member' }),
    'enterprise owner with a test key': apiKeyIdentity({
      planId: 'enterprise',
      principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
    }),
    'scoped to platform:read': apiKeyIdentity({ scopes: ['platform:read'] }),
  }
  for (const route of ROUTES) {
    it(`${route.method} ${route.path}`, async () => {
      const op = doc.paths[documentedPath(route)]?.[route.method.toLowerCase()]
      if (!op) return // not advertised (e.g. GET /mcp, answered 405)
      for (const [who, identity] of Object.entries(callers)) {
        const response = await callFamily(
          WORKERS[route.family],
          noBindings,
          concrete(route),
          callFor(route, identity),
        )
        await response.body?.cancel()
        expect(
          Object.keys(op.responses),
          `${who}: ${route.method} ${route.path} answered ${response.status}`,
        ).toContain(String(response.status))
      }
    })
  }
})
