/**
 * Observability tokens (owners and admins): create (the token is in that answer only), list,
 * rotate (a new value, the old one refused at once), revoke. They authenticate OTLP ingestion
 * only (the gateway refuses them elsewhere and refuses API keys on /otlp). Every change is
 * appended to the workspace's audit log before the answer. Only a credential that could ingest
 * itself (telemetry:write or unscoped, and live) mints one (shared/auth/credential-ceiling.ts).
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { appendAuditEvent } from '../../../durable-objects/audit-log/audit-client'
import { assertWithinCeiling } from '../../../shared/auth/credential-ceiling'
import {
  createObservabilityToken,
  listObservabilityTokens,
  OBSERVABILITY_TOKEN_POWERS,
  revokeObservabilityToken,
  rotateObservabilityToken,
} from '../../../shared/auth/observability-tokens'
import { errorResponse } from '../../../shared/http/error-body'
import { type FamilyEnv, requireAdmin } from '../../../shared/worker/family-app'
import { actorOf, type Identity } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import type { TelemetryEnv } from './telemetry.context'
import {
  ObservabilityTokenCreateSchema,
  ObservabilityTokenListSchema,
  ObservabilityTokenParamsSchema,
  ObservabilityTokenSchema,
  ObservabilityTokenWithSecretSchema,
} from './telemetry.schemas'

type TelemetryContext = Context<FamilyEnv<TelemetryEnv>>

const TAGS = ['Telemetry']
const BASE = '/platform/v1/observability-tokens'

function record(
  c: TelemetryContext,
  identity: Identity,
  action: 'created' | 'rotated' | 'revoked',
  id: string,
  name?: string,
) {
  return appendAuditEvent(c.env.AUDIT_LOG, identity.tenantId, {
    kind: 'observability_token.changed',
    action,
    token_id: id,
    ...(name ? { name } : {}),
    actor: actorOf(identity),
    request_id: c.get('request').requestId,
  })
}

const json = <T>(schema: T) => ({ 'application/json': { schema } })
const forbidden = errorResponse(
  'insufficient_role: only owners and admins manage observability tokens. credential_ceiling_exceeded: a token (telemetry:write, member, live) would exceed the calling credential, i.e. it is scoped without telemetry:write or is a test key; the message names each part',
)
const notFound = errorResponse('observability_token_not_found (or already revoked)')

export function observabilityTokenRoutes(app: OpenAPIHono<FamilyEnv<TelemetryEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: BASE,
      tags: TAGS,
      summary: "The workspace's observability tokens, newest first (values are never shown again)",
      responses: {
        200: { description: 'Tokens', content: json(ObservabilityTokenListSchema) },
        403: forbidden,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'list observability tokens')
      const data = await withRequestDatabase(c, 'telemetry', (db) =>
        listObservabilityTokens(db, identity.tenantId),
      )
      return c.json({ object: 'list' as const, data }, 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: BASE,
      tags: TAGS,
      summary: 'Create an observability token for OTLP ingestion; the answer holds it, shown only once',
      description:
        'Send it as `Authorization: Bearer svc_ot_…` on POST /otlp/v1/traces, /metrics and /logs; it opens nothing else. Stored only as its SHA-256. The calling credential must be able to ingest itself (unscoped or holding telemetry:write) and live; otherwise 403 `credential_ceiling_exceeded`.',
      request: { body: { required: true, content: json(ObservabilityTokenCreateSchema) } },
      responses: {
        201: { description: 'Created', content: json(ObservabilityTokenWithSecretSchema) },
        403: forbidden,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'create observability tokens')
      const { name } = c.req.valid('json')
      assertWithinCeiling(identity, OBSERVABILITY_TOKEN_POWERS, 'an observability token')
      const { view, token } = await withRequestDatabase(c, 'telemetry', (db) =>
        createObservabilityToken(db, { tenantId: identity.tenantId, name, createdBy: actorOf(identity) }),
      )
      await record(c, identity, 'created', view.id, view.name)
      return c.json({ ...view, token }, 201, { 'cache-control': 'no-store' })
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: `${BASE}/{tokenId}/rotate`,
      tags: TAGS,
      summary: 'Replace the token value; the old value stops working at once',
      request: { params: ObservabilityTokenParamsSchema },
      responses: {
        200: { description: 'Rotated', content: json(ObservabilityTokenWithSecretSchema) },
        403: forbidden,
        404: notFound,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'rotate observability tokens')
      const { tokenId } = c.req.valid('param')
      assertWithinCeiling(
        identity,
        OBSERVABILITY_TOKEN_POWERS,
        `a new value of observability token ${tokenId}`,
      )
      const { view, token } = await withRequestDatabase(c, 'telemetry', (db) =>
        rotateObservabilityToken(db, identity.tenantId, tokenId),
      )
      await record(c, identity, 'rotated', view.id)
      return c.json({ ...view, token }, 200, { 'cache-control': 'no-store' })
    },
  )

  app.openapi(
    createRoute({
      method: 'delete',
      path: `${BASE}/{tokenId}`,
      tags: TAGS,
      summary: 'Revoke an observability token',
      description:
        'Refused at once by the gateway isolate that served this call, everywhere within API_KEY_CACHE_TTL_SECONDS (401 revoked_observability_token).',
      request: { params: ObservabilityTokenParamsSchema },
      responses: {
        200: { description: 'Revoked', content: json(ObservabilityTokenSchema) },
        403: forbidden,
        404: notFound,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'revoke observability tokens')
      const { tokenId } = c.req.valid('param')
      const view = await withRequestDatabase(c, 'telemetry', (db) =>
        revokeObservabilityToken(db, identity.tenantId, tokenId),
      )
      await record(c, identity, 'revoked', view.id)
      return c.json(view, 200)
    },
  )
}
