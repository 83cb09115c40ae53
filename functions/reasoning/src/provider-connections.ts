/**
 * Provider connections (byopa_managed): a tenant's own QPU provider account, used only by that
 * tenant's reasoning jobs that name it (`provider_connection_id`). Create, list, read, test and
 * delete; owners and admins only (a member gets 403); every query scoped by the caller's tenant
 * and mode (another tenant's or mode's id is 404, a name is taken per mode). The API key is encrypted at rest
 * (durable-objects/reasoning-job/quantum/providers/provider-credentials.ts) and never returned. Creation and deletion are
 * in the tenant's audit log (`provider_connection.changed`) before they are acknowledged. The base
 * URL must be one the deployment allows (QPU_PROVIDER_BASE_URLS), so a connection cannot point the
 * workers at an arbitrary host.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { and, eq } from 'drizzle-orm'
import type { Context } from 'hono'
import { type AuditLogNamespace, appendAuditEvent } from '../../../durable-objects/audit-log/audit-client'
import { openQpuProvider } from '../../../durable-objects/reasoning-job/quantum/providers/ionq-v03'
import {
  connectionsOf,
  getConnection,
  listConnections,
  type ProviderConnectionRow,
} from '../../../durable-objects/reasoning-job/quantum/providers/provider-connections.store'
import {
  credentialKeyring,
  decryptCredential,
  encryptCredential,
} from '../../../durable-objects/reasoning-job/quantum/providers/provider-credentials'
import { QpuProviderError } from '../../../durable-objects/reasoning-job/quantum/providers/qpu-provider'
import type { DatabaseEnv } from '../../../shared/db/client'
import { qpuProviderConnections } from '../../../shared/db/schema'
import { errorResponse } from '../../../shared/http/error-body'
import { AppError } from '../../../shared/http/errors'
import { UUID } from '../../../shared/http/uuid'
import { type FamilyEnv, requireAdmin } from '../../../shared/worker/family-app'
import { actorOf, type Identity, scopeOf } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import {
  ConnectionParamsSchema,
  type ProviderConnection,
  ProviderConnectionCreateSchema,
  ProviderConnectionDeletedSchema,
  ProviderConnectionListSchema,
  ProviderConnectionSchema,
  ProviderConnectionTestedSchema,
} from './provider-connections.schemas'

/** The bindings these routes use (functions/reasoning/wrangler.toml; README, "Configuration"). */
export interface ProviderConnectionsEnv extends DatabaseEnv {
  AUDIT_LOG?: AuditLogNamespace
  /** Secret: the key-encryption keys of provider credentials. */
  PROVIDER_CREDENTIAL_KEYS?: string
  /** Comma-separated base URLs tenants' connections may use (default https://api.ionq.co/v0.3). */
  QPU_PROVIDER_BASE_URLS?: string
}

export const DEFAULT_PROVIDER_BASE_URL = 'https://api.ionq.co/v0.3'
const TAGS = ['Provider connections']
const BASE = '/svc/quantum-reasoning/provider-connections'
const forbidden = errorResponse(
  'insufficient_role: only workspace owners and admins manage provider connections',
)
const notFound = errorResponse('provider_connection_not_found in this workspace')

type Ctx<E extends ProviderConnectionsEnv> = Context<FamilyEnv<E>>

export function allowedBaseUrls(env: ProviderConnectionsEnv): string[] {
  const list = (env.QPU_PROVIDER_BASE_URLS ?? DEFAULT_PROVIDER_BASE_URL)
    .split(',')
    .map((u) => u.trim().replace(/\/+$/, ''))
    .filter(Boolean)
  return list.length ? list : [DEFAULT_PROVIDER_BASE_URL]
}

function connectionNotFound(): AppError {
  return new AppError(
    404,
    'provider_connection_not_found',
    'No provider connection with this id exists in your workspace. List them with GET /svc/quantum-reasoning/provider-connections.',
    { param: 'connectionId' },
  )
}

export function connectionView(row: ProviderConnectionRow): ProviderConnection {
  return {
    id: row.id,
    object: 'provider_connection',
    name: row.name,
    kind: row.kind as ProviderConnection['kind'],
    base_url: row.baseUrl,
    target: row.target,
    created_at: row.createdAt.toISOString(),
    created_by: row.createdBy,
    last_test:
      row.lastTestedAt === null
        ? null
        : {
            ok: row.lastTestOk === true,
            tested_at: row.lastTestedAt.toISOString(),
            error: row.lastTestOk
              ? null
              : { code: row.lastTestErrorCode ?? 'provider_error', message: row.lastTestError ?? 'unknown' },
          },
  }
}

async function audit<E extends ProviderConnectionsEnv>(
  c: Ctx<E>,
  identity: Identity,
  action: 'created' | 'deleted',
  row: ProviderConnectionRow,
): Promise<void> {
  if (!c.env.AUDIT_LOG) {
    throw new AppError(
      503,
      'audit_log_unavailable',
      'This action must be recorded in the audit log, which this deployment does not bind; nothing was done.',
    )
  }
  await appendAuditEvent(c.env.AUDIT_LOG, identity.tenantId, {
    kind: 'provider_connection.changed',
    action,
    connection_id: row.id,
    provider: row.kind,
    actor: actorOf(identity),
    request_id: c.get('request').requestId,
  })
}

export function providerConnectionRoutes<E extends ProviderConnectionsEnv>(
  app: OpenAPIHono<FamilyEnv<E>>,
): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: BASE,
      tags: TAGS,
      summary: "The workspace's QPU provider connections, newest first (never a credential)",
      responses: {
        200: {
          description: 'Connections',
          content: { 'application/json': { schema: ProviderConnectionListSchema } },
        },
        403: forbidden,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'list provider connections')
      const rows = await withRequestDatabase(c, 'reasoning', (db) => listConnections(db, scopeOf(identity)))
      return c.json({ object: 'list' as const, data: rows.map(connectionView) }, 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: BASE,
      tags: TAGS,
      summary: 'Connect a QPU provider account for byopa_managed jobs',
      description:
        "The API key is encrypted at rest and never returned. `base_url` must be one of the deployment's QPU_PROVIDER_BASE_URLS. Recorded in the audit log (`provider_connection.changed`, created) before the answer. Test it with POST …/{connectionId}/test.",
      request: {
        body: { required: true, content: { 'application/json': { schema: ProviderConnectionCreateSchema } } },
      },
      responses: {
        201: {
          description: 'Created',
          content: { 'application/json': { schema: ProviderConnectionSchema } },
        },
        400: errorResponse('invalid_request, base_url_not_allowed'),
        403: forbidden,
        409: errorResponse('provider_connection_name_taken'),
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'create provider connections')
      const body = c.req.valid('json')
      const allowed = allowedBaseUrls(c.env)
      const baseUrl = (body.base_url ?? allowed[0]!).replace(/\/+$/, '')
      if (!allowed.includes(baseUrl)) {
        throw new AppError(
          400,
          'base_url_not_allowed',
          `base_url must be one of ${allowed.join(', ')} (got ${baseUrl}); the operator lists the allowed provider URLs in QPU_PROVIDER_BASE_URLS.`,
          { param: 'base_url' },
        )
      }
      const keyring = await credentialKeyring(c.env.PROVIDER_CREDENTIAL_KEYS)
      const id = crypto.randomUUID()
      const credential = await encryptCredential(keyring, body.api_key, {
        tenantId: identity.tenantId,
        connectionId: id,
      })
      const row = await withRequestDatabase(c, 'reasoning', async (db) => {
        const [inserted] = await db
          .insert(qpuProviderConnections)
          .values({
            id,
            tenantId: identity.tenantId,
            mode: identity.mode,
            name: body.name,
            kind: body.kind,
            baseUrl,
            target: body.target,
            credential,
            createdBy: actorOf(identity),
          })
          .onConflictDoNothing()
          .returning()
        if (!inserted) {
          throw new AppError(
            409,
            'provider_connection_name_taken',
            `A provider connection named "${body.name}" already exists in this workspace (in ${identity.mode} mode); pick another name or delete it first.`,
            {
              param: 'name',
            },
          )
        }
        return inserted
      })
      await audit(c, identity, 'created', row)
      return c.json(connectionView(row), 201, { 'cache-control': 'no-store' })
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: `${BASE}/{connectionId}`,
      tags: TAGS,
      summary: 'One connection (never its credential)',
      request: { params: ConnectionParamsSchema },
      responses: {
        200: {
          description: 'The connection',
          content: { 'application/json': { schema: ProviderConnectionSchema } },
        },
        403: forbidden,
        404: notFound,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'read provider connections')
      const { connectionId } = c.req.valid('param')
      if (!UUID.test(connectionId)) throw connectionNotFound()
      const row = await withRequestDatabase(c, 'reasoning', (db) =>
        getConnection(db, scopeOf(identity), connectionId),
      )
      if (!row) throw connectionNotFound()
      return c.json(connectionView(row), 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: `${BASE}/{connectionId}/test`,
      tags: TAGS,
      summary: 'Check the credential against the provider (an authenticated read)',
      description:
        'Answers 200 whether or not the provider accepted the key: `test.ok` and `test.error` say what it answered (provider_rejected_credentials, provider_unreachable, provider_error). The result is kept as `last_test`.',
      request: { params: ConnectionParamsSchema },
      responses: {
        200: {
          description: 'Tested',
          content: { 'application/json': { schema: ProviderConnectionTestedSchema } },
        },
        403: forbidden,
        404: notFound,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'test provider connections')
      const { connectionId } = c.req.valid('param')
      if (!UUID.test(connectionId)) throw connectionNotFound()
      const updated = await withRequestDatabase(c, 'reasoning', async (db) => {
        const row = await getConnection(db, scopeOf(identity), connectionId)
        if (!row) throw connectionNotFound()
        const keyring = await credentialKeyring(c.env.PROVIDER_CREDENTIAL_KEYS)
        const apiKey = await decryptCredential(keyring, row.credential, {
          tenantId: identity.tenantId,
          connectionId,
        })
        let error: { code: string; message: string } | null = null
        try {
          await openQpuProvider({ kind: row.kind as 'ionq', baseUrl: row.baseUrl, apiKey }).verify()
        } catch (err) {
          if (!(err instanceof QpuProviderError)) throw err
          const code =
            err.kind === 'credentials'
              ? 'provider_rejected_credentials'
              : err.kind === 'retryable' || err.kind === 'outcome_unknown'
                ? 'provider_unreachable'
                : 'provider_error'
          error = { code, message: err.message }
        }
        const [saved] = await db
          .update(qpuProviderConnections)
          .set({
            lastTestedAt: new Date(),
            lastTestOk: error === null,
            lastTestErrorCode: error?.code ?? null,
            lastTestError: error?.message ?? null,
          })
          .where(and(connectionsOf(scopeOf(identity)), eq(qpuProviderConnections.id, connectionId)))
          .returning()
        if (!saved) throw connectionNotFound()
        return { saved, error }
      })
      const connection = connectionView(updated.saved)
      return c.json(
        {
          connection,
          test: {
            ok: updated.error === null,
            tested_at: connection.last_test!.tested_at,
            error: updated.error,
          },
        },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'delete',
      path: `${BASE}/{connectionId}`,
      tags: TAGS,
      summary: 'Delete a connection and its stored credential',
      description:
        'Jobs that name it and have not reached the provider end classical_fallback (selector_unreachable). Recorded in the audit log (`provider_connection.changed`, deleted) before the answer.',
      request: { params: ConnectionParamsSchema },
      responses: {
        200: {
          description: 'Deleted',
          content: { 'application/json': { schema: ProviderConnectionDeletedSchema } },
        },
        403: forbidden,
        404: notFound,
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'delete provider connections')
      const { connectionId } = c.req.valid('param')
      if (!UUID.test(connectionId)) throw connectionNotFound()
      const row = await withRequestDatabase(c, 'reasoning', async (db) => {
        const [deleted] = await db
          .delete(qpuProviderConnections)
          .where(and(connectionsOf(scopeOf(identity)), eq(qpuProviderConnections.id, connectionId)))
          .returning()
        if (!deleted) throw connectionNotFound()
        return deleted
      })
      await audit(c, identity, 'deleted', row)
      return c.json({ id: row.id, object: 'provider_connection' as const, deleted: true as const }, 200)
    },
  )
}
