/**
 * Usage as the console charts it, from the usage ledger (one row per metered request, written by
 * the RateLimiter within RATE_LIMIT_LEDGER_FLUSH_MS): per day, model and mode over the last `days`
 * (GET /platform/v1/usage), and the requests themselves, newest first, with the status their
 * client received and their latency (GET /platform/v1/usage/requests). Both filter by API key; a
 * member sees only what its own credential used. Every query is scoped by the caller's tenant and
 * mode: test usage is seen in test mode (a test key, a person in test mode) and live usage in live
 * mode; naming the other mode (`mode=`) shows nothing.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { and, desc, eq, getTableColumns, gte, lt, type SQL, sql } from 'drizzle-orm'
import { afterPageKey, decodePageCursor, encodePageCursor } from '../../../shared/db/page-cursor'
import { usageLedger } from '../../../shared/db/schema'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { type Identity, principalId } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import type { PlatformEnv } from './platform.context'
import {
  UsageQuerySchema,
  UsageRequestListSchema,
  UsageRequestsQuerySchema,
  UsageSchema,
} from './workspace.schemas'

const TAGS = ['Usage']

function filters(
  identity: Identity,
  query: { mode?: 'live' | 'test' | undefined; key_id?: string | undefined },
) {
  const where: SQL[] = [eq(usageLedger.tenantId, identity.tenantId), eq(usageLedger.mode, identity.mode)]
  if (query.mode) where.push(eq(usageLedger.mode, query.mode))
  if (query.key_id) where.push(eq(usageLedger.principal, `key:${query.key_id}`))
  // Members see what their own credential used; owners and admins the whole workspace.
  if (identity.role === 'member') where.push(eq(usageLedger.principal, principalId(identity)))
  return where
}

export function usageRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/usage',
      tags: TAGS,
      summary: 'Requests, tokens and credits per day, model and mode',
      request: { query: UsageQuerySchema },
      responses: { 200: { description: 'Usage', content: { 'application/json': { schema: UsageSchema } } } },
    }),
    async (c) => {
      const identity = identityOf(c)
      const query = c.req.valid('query')
      const now = new Date()
      const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1))
      const from = new Date(to.getTime() - query.days * 86_400_000)
      const day = sql<string>`to_char(date_trunc('day', ${usageLedger.createdAt} at time zone 'UTC'), 'YYYY-MM-DD')`
      const rows = await withRequestDatabase(c, 'platform', (db) =>
        db
          .select({
            day,
            model: usageLedger.model,
            mode: usageLedger.mode,
            unit: usageLedger.unit,
            requests: sql<string>`count(*)::text`,
            promptTokens: sql<string>`sum(${usageLedger.promptTokens})::text`,
            completionTokens: sql<string>`sum(${usageLedger.completionTokens})::text`,
            quantity: sql<string>`sum(${usageLedger.quantity})::text`,
            credits: sql<string>`sum(${usageLedger.creditsCents})::text`,
          })
          .from(usageLedger)
          .where(
            and(...filters(identity, query), gte(usageLedger.createdAt, from), lt(usageLedger.createdAt, to)),
          )
          .groupBy(day, usageLedger.model, usageLedger.mode, usageLedger.unit)
          .orderBy(day, usageLedger.model),
      )
      const data = rows.map((r) => ({
        day: r.day,
        model: r.model,
        mode: r.mode,
        unit: r.unit,
        requests: Number(r.requests),
        prompt_tokens: Number(r.promptTokens),
        completion_tokens: Number(r.completionTokens),
        quantity: Number(r.quantity),
        credits_cents: Number(r.credits),
      }))
      return c.json(
        {
          object: 'usage' as const,
          from: from.toISOString(),
          to: to.toISOString(),
          data,
          totals: {
            requests: data.reduce((n, r) => n + r.requests, 0),
            tokens: data.reduce((n, r) => n + r.prompt_tokens + r.completion_tokens, 0),
            credits_cents: data.reduce((n, r) => n + r.credits_cents, 0),
          },
        },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/usage/requests',
      tags: TAGS,
      summary:
        'The metered requests, newest first: request id, endpoint, model, status, latency, tokens, credits',
      request: { query: UsageRequestsQuerySchema },
      responses: {
        200: { description: 'Requests', content: { 'application/json': { schema: UsageRequestListSchema } } },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const query = c.req.valid('query')
      const where = filters(identity, query)
      if (query.cursor) {
        where.push(
          afterPageKey(usageLedger.createdAt, usageLedger.id, decodePageCursor(query.cursor, 'cursor')),
        )
      }
      if (query.outcome === 'succeeded') where.push(lt(usageLedger.status, 400))
      if (query.outcome === 'failed') where.push(gte(usageLedger.status, 400))
      const rows = await withRequestDatabase(c, 'platform', (db) =>
        db
          // The cursor keeps created_at as Postgres has it (microseconds), not as a JS Date.
          .select({ ...getTableColumns(usageLedger), cursorAt: sql<string>`${usageLedger.createdAt}::text` })
          .from(usageLedger)
          .where(and(...where))
          .orderBy(desc(usageLedger.createdAt), desc(usageLedger.id))
          .limit(query.limit + 1),
      )
      const data = rows.slice(0, query.limit).map((r) => ({
        request_id: r.requestId,
        endpoint: r.endpoint,
        model: r.model,
        provider: r.provider,
        mode: r.mode,
        principal: r.principal,
        prompt_tokens: r.promptTokens,
        completion_tokens: r.completionTokens,
        quantity: r.quantity,
        unit: r.unit,
        credits_cents: Number(r.creditsCents),
        estimated: r.estimated,
        status: r.status,
        latency_ms: r.latencyMs,
        created_at: r.createdAt.toISOString(),
      }))
      const last = rows.length > query.limit ? rows[query.limit - 1] : undefined
      return c.json(
        {
          object: 'list' as const,
          data,
          has_more: last !== undefined,
          next_cursor: last ? encodePageCursor({ createdAt: last.cursorAt, id: last.id }) : null,
        },
        200,
      )
    },
  )
}
