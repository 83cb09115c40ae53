/**
 * Personal memories: records owned by one principal (API key or token subject) inside its
 * tenant. Every query filters by tenant and owner. Search ranks with Postgres full-text search
 * (`websearch_to_tsquery` on the `english` configuration, so "fridays" matches "friday") and falls back to substring matches.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { and, desc, eq, lt, sql } from 'drizzle-orm'
import { memories } from '../../../shared/db/schema'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { principalId } from '../../../shared/worker/request-context'
import { withDatabase } from './database'
import type { KnowledgeEnv } from './knowledge.context'
import {
  AnyJsonObject,
  MemoryListQuerySchema,
  MemoryListSchema,
  MemorySchema,
  MemorySearchResultSchema,
  RetrievalRequestSchema,
} from './knowledge.schemas'

type MemoryRow = typeof memories.$inferSelect

function contentOf(body: Record<string, unknown>): string {
  if (typeof body.content === 'string') return body.content
  if (typeof body.text === 'string') return body.text
  return JSON.stringify(body)
}

function render(row: Pick<MemoryRow, 'id' | 'content' | 'body' | 'createdAt'>) {
  return {
    id: row.id,
    object: 'memory' as const,
    content: row.content,
    body: row.body as Record<string, unknown>,
    created_at: row.createdAt.toISOString(),
  }
}

export function memoryRoutes(app: OpenAPIHono<FamilyEnv<KnowledgeEnv>>): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/svc/memories',
      tags: ['Knowledge'],
      summary: 'Create a personal memory record (any JSON object)',
      request: { body: { required: true, content: { 'application/json': { schema: AnyJsonObject } } } },
      responses: {
        200: { description: 'Created', content: { 'application/json': { schema: MemorySchema } } },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const body = c.req.valid('json')
      const content = contentOf(body)
      const row = await withDatabase(c, async (db) => {
        const [inserted] = await db
          .insert(memories)
          .values({
            tenantId: identity.tenantId,
            ownerId: principalId(identity),
            content,
            body,
            sizeBytes: new TextEncoder().encode(JSON.stringify(body)).byteLength,
          })
          .returning()
        return inserted!
      })
      return c.json(render(row), 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/svc/memories',
      tags: ['Knowledge'],
      summary: 'List your memory records, newest first',
      request: { query: MemoryListQuerySchema },
      responses: {
        200: { description: 'Memories', content: { 'application/json': { schema: MemoryListSchema } } },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const { limit, before } = c.req.valid('query')
      const rows = await withDatabase(c, (db) =>
        db
          .select()
          .from(memories)
          .where(
            and(
              eq(memories.tenantId, identity.tenantId),
              eq(memories.ownerId, principalId(identity)),
              before ? lt(memories.createdAt, new Date(before)) : undefined,
            ),
          )
          .orderBy(desc(memories.createdAt), desc(memories.id))
          .limit(limit + 1),
      )
      return c.json(
        { object: 'list' as const, data: rows.slice(0, limit).map(render), has_more: rows.length > limit },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: '/svc/memories/search',
      tags: ['Knowledge'],
      summary: 'Search your memory records (full-text ranking)',
      request: {
        body: { required: true, content: { 'application/json': { schema: RetrievalRequestSchema } } },
      },
      responses: {
        200: {
          description: 'Matches, best first',
          content: { 'application/json': { schema: MemorySearchResultSchema } },
        },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const { query, k } = c.req.valid('json')
      const vector = sql`to_tsvector('english', ${memories.content})`
      const tsquery = sql`websearch_to_tsquery('english', ${query})`
      const rows = await withDatabase(c, (db) =>
        db
          .select({
            id: memories.id,
            content: memories.content,
            body: memories.body,
            createdAt: memories.createdAt,
            score: sql<number>`(ts_rank(${vector}, ${tsquery}) + case when ${memories.content} ilike ${`%${query}%`} then 1 else 0 end)::float8`,
          })
          .from(memories)
          .where(
            and(
              eq(memories.tenantId, identity.tenantId),
              eq(memories.ownerId, principalId(identity)),
              sql`(${vector} @@ ${tsquery} or ${memories.content} ilike ${`%${query}%`})`,
            ),
          )
          .orderBy(sql`5 desc`, desc(memories.createdAt))
          .limit(k),
      )
      return c.json(
        {
          object: 'list' as const,
          data: rows.map((r) => ({ ...render(r), score: Number(r.score.toFixed(6)) })),
        },
        200,
      )
    },
  )
}
