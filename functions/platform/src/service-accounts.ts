/**
 * Service-account administration (owners and admins): list, create (the secret is returned once),
 * rotate the secret (the old one stops working at once), revoke. The spec says accounts are made
 * "in the admin portal or API" without showing the API; this is it. An account created or given a
 * new secret can do no more than the calling credential (shared/auth/credential-ceiling.ts).
 */

import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { assertWithinCeiling } from '../../../shared/auth/credential-ceiling'
import {
  createServiceAccount,
  getActiveServiceAccount,
  listServiceAccounts,
  revokeServiceAccount,
  rotateServiceAccountSecret,
  serviceAccountPowers,
} from '../../../shared/auth/service-accounts'
import { type FamilyEnv, requireAdmin } from '../../../shared/worker/family-app'
import { actorOf } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { recordAuditEvent } from './database'
import type { PlatformEnv } from './platform.context'
import {
  errorResponse,
  ServiceAccountCreateSchema,
  ServiceAccountListSchema,
  ServiceAccountParamsSchema,
  ServiceAccountSchema,
  ServiceAccountWithSecretSchema,
} from './platform.schemas'

const TAGS = ['Service accounts']
const forbidden = errorResponse(
  'insufficient_role: only owners and admins manage service accounts. credential_ceiling_exceeded: the account (member role, live) would have scopes the calling credential lacks, or the caller is a test key; the message names each part',
)
const notFound = errorResponse('service_account_not_found (or already revoked)')

export function serviceAccountRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/service-accounts',
      tags: TAGS,
      summary: "The workspace's service accounts, newest first (secrets are never shown again)",
      responses: {
        200: {
          description: 'Accounts',
          content: { 'application/json': { schema: ServiceAccountListSchema } },
        },
        403: forbidden,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'list service accounts')
      const data = await withRequestDatabase(c, 'platform', (db) =>
        listServiceAccounts(db, identity.tenantId),
      )
      return c.json({ object: 'list' as const, data }, 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: '/platform/v1/service-accounts',
      tags: TAGS,
      summary: 'Create a service account; the response holds its secret, shown only once',
      description:
        "Exchange the id and secret at POST /auth/service-token for an access token. The secret is stored only as an Argon2id hash. The account acts with the member role and is live, and its scopes must be within the calling credential's (no scopes means every scope): a scoped or test credential cannot create an unscoped account (403 `credential_ceiling_exceeded`).",
      request: {
        body: { required: true, content: { 'application/json': { schema: ServiceAccountCreateSchema } } },
      },
      responses: {
        201: {
          description: 'Created',
          content: { 'application/json': { schema: ServiceAccountWithSecretSchema } },
        },
        403: forbidden,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'create service accounts')
      const body = c.req.valid('json')
      assertWithinCeiling(identity, serviceAccountPowers(body.scopes), 'the new service account')
      const { account, secret } = await withRequestDatabase(c, 'platform', (db) =>
        createServiceAccount(db, {
          tenantId: identity.tenantId,
          name: body.name,
          audiences: body.audiences,
          scopes: body.scopes,
          createdBy: actorOf(identity),
        }),
      )
      await recordAuditEvent(c, {
        kind: 'service_account.changed',
        action: 'created',
        service_account_id: account.id,
        name: account.name,
        audiences: account.audiences,
        actor: actorOf(identity),
        request_id: c.get('request').requestId,
      })
      return c.json({ ...account, secret }, 201, { 'cache-control': 'no-store' })
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: '/platform/v1/service-accounts/{serviceAccountId}/rotate',
      tags: TAGS,
      summary: 'Replace the secret; the old secret stops working at once',
      description:
        "Access tokens already issued stay valid until they expire (AUTH_ACCESS_TOKEN_TTL_SECONDS). The account must be within the calling credential's ceiling, as on create (403 `credential_ceiling_exceeded`).",
      request: { params: ServiceAccountParamsSchema },
      responses: {
        200: {
          description: 'Rotated',
          content: { 'application/json': { schema: ServiceAccountWithSecretSchema } },
        },
        403: forbidden,
        404: notFound,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'rotate service-account secrets')
      const { serviceAccountId } = c.req.valid('param')
      const { account, secret } = await withRequestDatabase(c, 'platform', async (db) => {
        const existing = await getActiveServiceAccount(db, identity.tenantId, serviceAccountId)
        assertWithinCeiling(
          identity,
          serviceAccountPowers(existing.scopes),
          `a new secret of service account ${serviceAccountId}`,
        )
        return rotateServiceAccountSecret(db, identity.tenantId, serviceAccountId)
      })
      await recordAuditEvent(c, {
        kind: 'service_account.changed',
        action: 'rotated',
        service_account_id: account.id,
        actor: actorOf(identity),
        request_id: c.get('request').requestId,
      })
      return c.json({ ...account, secret }, 200, { 'cache-control': 'no-store' })
    },
  )

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/platform/v1/service-accounts/{serviceAccountId}',
      tags: TAGS,
      summary: 'Revoke a service account',
      description:
        'Its secret is refused at once; the gateway refuses its access tokens within API_KEY_CACHE_TTL_SECONDS (at once in the gateway isolate that served this call).',
      request: { params: ServiceAccountParamsSchema },
      responses: {
        200: { description: 'Revoked', content: { 'application/json': { schema: ServiceAccountSchema } } },
        403: forbidden,
        404: notFound,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'revoke service accounts')
      const { serviceAccountId } = c.req.valid('param')
      const account = await withRequestDatabase(c, 'platform', (db) =>
        revokeServiceAccount(db, identity.tenantId, serviceAccountId),
      )
      await recordAuditEvent(c, {
        kind: 'service_account.changed',
        action: 'revoked',
        service_account_id: account.id,
        actor: actorOf(identity),
        request_id: c.get('request').requestId,
      })
      return c.json(account, 200)
    },
  )
}
