/**
 * API-key management: create (test or live; name, role, scopes, expiry; the secret is in the
 * answer only), list (never a secret), rotate (a new secret; the old one keeps working for a
 * grace period), revoke, and change a key's own limits (allowed models, spend, rates: docs/plans.md,
 * "Per-key limits"). Owners and admins manage the workspace's keys; members list and read
 * the keys they created and the one they call with. Every change is in the tenant's audit log
 * before it is acknowledged. The gateway drops a revoked or rotated key from its cache at once
 * in the isolate that forwarded the change; other isolates follow within API_KEY_CACHE_TTL_SECONDS.
 */

import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { AppError } from '../../../shared/http/errors'
import { resolvePlan } from '../../../shared/plans/plan-catalog'
import { type FamilyEnv, identityOf, requireAdmin } from '../../../shared/worker/family-app'
import { actorOf } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import {
  type ApiKeyView,
  createApiKey,
  getApiKey,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  updateApiKeyLimits,
  withSpend,
} from './api-key-store'
import {
  ApiKeyCreateSchema,
  ApiKeyLimitsPatchSchema,
  ApiKeyListQuerySchema,
  ApiKeyListSchema,
  ApiKeyParamsSchema,
  ApiKeyRotatedSchema,
  ApiKeyRotateSchema,
  ApiKeySchema,
  ApiKeyWithSecretSchema,
  MAX_KEY_LIFETIME_DAYS,
} from './api-keys.schemas'
import { recordAuditEvent } from './database'
import type { PlatformEnv } from './platform.context'
import { errorResponse } from './platform.schemas'

const TAGS = ['API keys']
const BASE = '/platform/v1/api-keys'
const forbidden = errorResponse(
  'insufficient_role: members only read their own keys; nobody revokes a key of a higher role than their own. credential_ceiling_exceeded: the key created (or the successor of the key rotated) would exceed the calling credential in scopes, role or mode; the message names each part',
)
const notFound = errorResponse('api_key_not_found in this workspace (or not visible to a member)')
const conflict = errorResponse('api_key_revoked, api_key_expired or api_key_already_rotated')
const DAY_MS = 86_400_000

function expiryOf(
  body: { expires_at?: string | undefined; expires_in_days?: number | undefined },
  now: Date,
) {
  if (body.expires_at !== undefined && body.expires_in_days !== undefined) {
    throw new AppError(400, 'invalid_request', 'Give expires_at or expires_in_days, not both.', {
      param: 'expires_in_days',
    })
  }
  if (body.expires_in_days !== undefined) return new Date(now.getTime() + body.expires_in_days * DAY_MS)
  if (body.expires_at === undefined) return null
  const at = new Date(body.expires_at)
  if (at <= now) {
    throw new AppError(400, 'invalid_request', `expires_at must be in the future (got ${body.expires_at}).`, {
      param: 'expires_at',
    })
  }
  if (at.getTime() > now.getTime() + MAX_KEY_LIFETIME_DAYS * DAY_MS) {
    throw new AppError(
      400,
      'invalid_request',
      `expires_at must be at most ${MAX_KEY_LIFETIME_DAYS} days ahead (got ${body.expires_at}).`,
      { param: 'expires_at' },
    )
  }
  return at
}

function changed(view: ApiKeyView) {
  return { key_id: view.id, mode: view.mode, role: view.role, suffix: view.suffix }
}

/** The limits an audit event records (the values after the change). */
function limitsOf(view: ApiKeyView) {
  return { allowed_models: view.allowed_models, spend_limit: view.spend_limit, rate_limit: view.rate_limit }
}

export function apiKeyRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: BASE,
      tags: TAGS,
      summary: "The workspace's API keys, newest first (a member: the keys it created); never a secret",
      request: { query: ApiKeyListQuerySchema },
      responses: {
        200: { description: 'Keys', content: { 'application/json': { schema: ApiKeyListSchema } } },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const query = c.req.valid('query')
      const { catalog } = resolvePlan(c.env, identity.planId)
      const data = await withRequestDatabase(c, 'platform', async (db) =>
        withSpend(
          db,
          await listApiKeys(db, identity, {
            ...(query.mode ? { mode: query.mode } : {}),
            activeOnly: query.include_inactive === 'false',
          }),
          catalog,
        ),
      )
      return c.json({ object: 'list' as const, data }, 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: BASE,
      tags: TAGS,
      summary: 'Create a key; the response holds its secret, shown only once',
      description:
        "The secret is stored only as its SHA-256. Owners and admins. The creator is the ceiling: the key's scopes within the creator's (no scopes means every scope, so only an unscoped creator makes an unscoped key), its role at most the creator's, and a test key creates only test keys; otherwise 403 `credential_ceiling_exceeded`. Recorded in the audit log (`api_key.changed`, created) before the answer.",
      request: { body: { required: true, content: { 'application/json': { schema: ApiKeyCreateSchema } } } },
      responses: {
        201: { description: 'Created', content: { 'application/json': { schema: ApiKeyWithSecretSchema } } },
        403: forbidden,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'create API keys')
      const body = c.req.valid('json')
      const expiresAt = expiryOf(body, new Date())
      const { plan, catalog } = resolvePlan(c.env, identity.planId)
      const { view, key } = await withRequestDatabase(c, 'platform', async (db) => {
        const created = await createApiKey(
          db,
          identity,
          {
            name: body.name,
            mode: body.mode,
            role: body.role,
            scopes: body.scopes,
            expiresAt,
            limits: body,
          },
          plan,
        )
        const [view] = await withSpend(db, [created.view], catalog)
        return { view: view!, key: created.key }
      })
      await recordAuditEvent(c, {
        kind: 'api_key.changed',
        action: 'created',
        ...changed(view),
        name: view.name,
        scopes: view.scopes,
        expires_at: view.expires_at,
        ...limitsOf(view),
        actor: actorOf(identity),
        request_id: c.get('request').requestId,
      })
      return c.json({ ...view, key }, 201, { 'cache-control': 'no-store' })
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: `${BASE}/{keyId}`,
      tags: TAGS,
      summary: 'One key (never its secret)',
      request: { params: ApiKeyParamsSchema },
      responses: {
        200: { description: 'The key', content: { 'application/json': { schema: ApiKeySchema } } },
        404: notFound,
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const { keyId } = c.req.valid('param')
      const { catalog } = resolvePlan(c.env, identity.planId)
      const [view] = await withRequestDatabase(c, 'platform', async (db) =>
        withSpend(db, [await getApiKey(db, identity, keyId)], catalog),
      )
      return c.json(view!, 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'patch',
      path: `${BASE}/{keyId}`,
      tags: TAGS,
      summary: "Change a key's limits: allowed_models, spend_limit, rate_limit",
      description:
        "Owners and admins (never a key of a higher role). A field given replaces that limit, null removes it, a field absent is kept. The key's next request through the gateway isolate that served this call meets the new limits, other isolates within API_KEY_CACHE_TTL_SECONDS. The spend already made in the period counts against a new spend_limit. Recorded in the audit log (`api_key.changed`, limits_changed) before the answer.",
      request: {
        params: ApiKeyParamsSchema,
        body: { required: true, content: { 'application/json': { schema: ApiKeyLimitsPatchSchema } } },
      },
      responses: {
        200: {
          description: 'The key with its new limits',
          content: { 'application/json': { schema: ApiKeySchema } },
        },
        403: forbidden,
        404: notFound,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, "change API keys' limits")
      const { keyId } = c.req.valid('param')
      const body = c.req.valid('json')
      const { plan, catalog } = resolvePlan(c.env, identity.planId)
      const [view] = await withRequestDatabase(c, 'platform', async (db) =>
        withSpend(db, [await updateApiKeyLimits(db, identity, keyId, body, plan)], catalog),
      )
      await recordAuditEvent(c, {
        kind: 'api_key.changed',
        action: 'limits_changed',
        ...changed(view!),
        ...limitsOf(view!),
        actor: actorOf(identity),
        request_id: c.get('request').requestId,
      })
      return c.json(view!, 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: `${BASE}/{keyId}/rotate`,
      tags: TAGS,
      summary: 'Rotate: a new secret now, the old one working for a grace period',
      description:
        'The new key keeps the name, mode, role, scopes and expiry, which must be within the calling credential (403 `credential_ceiling_exceeded`, as on create). The old key answers until `grace_period_seconds` from now (0: at once), then 401 `expired_api_key`. The gateway isolate that served this call applies the new expiry at once, others within API_KEY_CACHE_TTL_SECONDS.',
      request: {
        params: ApiKeyParamsSchema,
        body: { required: false, content: { 'application/json': { schema: ApiKeyRotateSchema } } },
      },
      responses: {
        201: { description: 'Rotated', content: { 'application/json': { schema: ApiKeyRotatedSchema } } },
        403: forbidden,
        404: notFound,
        409: conflict,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'rotate API keys')
      const { keyId } = c.req.valid('param')
      // Without a body the validator hands over {}: the schema's default grace applies.
      const { grace_period_seconds: grace } = ApiKeyRotateSchema.parse(c.req.valid('json'))
      const { catalog } = resolvePlan(c.env, identity.planId)
      const rotated = await withRequestDatabase(c, 'platform', async (db) => {
        const done = await rotateApiKey(db, identity, keyId, grace)
        const [view, previous] = await withSpend(db, [done.view, done.previous], catalog)
        return { ...done, view: view!, previous: previous! }
      })
      await recordAuditEvent(c, {
        kind: 'api_key.changed',
        action: 'rotated',
        ...changed(rotated.previous),
        replaced_by: rotated.view.id,
        grace_period_seconds: grace,
        expires_at: rotated.previous.expires_at,
        actor: actorOf(identity),
        request_id: c.get('request').requestId,
      })
      return c.json(
        {
          object: 'api_key_rotation' as const,
          key: { ...rotated.view, key: rotated.key },
          previous: rotated.previous,
        },
        201,
        { 'cache-control': 'no-store' },
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'delete',
      path: `${BASE}/{keyId}`,
      tags: TAGS,
      summary: 'Revoke a key',
      description:
        'Refused with 401 `revoked_api_key` at once by the gateway isolate that served this call, by every other within API_KEY_CACHE_TTL_SECONDS. Recorded in the audit log before the answer.',
      request: { params: ApiKeyParamsSchema },
      responses: {
        200: { description: 'Revoked', content: { 'application/json': { schema: ApiKeySchema } } },
        403: forbidden,
        404: notFound,
        409: conflict,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'revoke API keys')
      const { keyId } = c.req.valid('param')
      const view = await withRequestDatabase(c, 'platform', (db) => revokeApiKey(db, identity, keyId))
      await recordAuditEvent(c, {
        kind: 'api_key.changed',
        action: 'revoked',
        ...changed(view),
        actor: actorOf(identity),
        request_id: c.get('request').requestId,
      })
      return c.json(view, 200)
    },
  )
}
