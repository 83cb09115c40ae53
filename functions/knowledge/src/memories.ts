/**
 * Personal memories: records owned by one principal (API key or token subject) inside its
 * tenant and mode. Every query filters by tenant, mode and owner: a person's test-mode memories
 * are not its live ones. Search is the retrieval engine's lexical signal
 * (retrieval/engine.ts, the same as for documents): Postgres full-text search on the `english`
 * configuration (so "fridays" matches "friday"), falling back to substring matches.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { and, desc, eq, sql } from 'drizzle-orm'
import { olderThanCursor } from '../../../shared/db/list-cursor'
import { memories } from '../../../shared/db/schema'
import { errorResponse } from '../../../shared/http/error-body'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { type Identity, principalId } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import type { KnowledgeEnv } from './knowledge.context'
import {
  AnyJsonObject,
  MemoryListQuerySchema,
  MemoryListSchema,
  MemorySchema,
  MemorySearchResultSchema,
  RetrievalRequestSchema,
} from './knowledge.schemas'
import { fuse, lexicalCandidates } from './retrieval/engine'

type MemoryRow = typeof memories.$inferSelect

/** The caller's own memories: its tenant, its mode, itself. */
function ownedBy(identity: Identity) {
  return and(
    eq(memories.tenantId, identity.tenantId),
    eq(memories.mode, identity.mode),
    eq(memories.ownerId, principalId(identity)),
  )!
}

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

const storeUnavailable = errorResponse(
  'knowledge_store_unavailable: the database cannot be reached; retry shortly',
)

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
        400: errorResponse('The body is not a JSON object'),
        503: storeUnavailable,
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const body = c.req.valid('json')
      const content = contentOf(body)
      const row = await withRequestDatabase(c, 'knowledge', async (db) => {
        const [inserted] = await db
          .insert(memories)
          .values({
            tenantId: identity.tenantId,
            mode: identity.mode,
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
        400: errorResponse('A query parameter (limit, before) is invalid'),
        503: storeUnavailable,
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const { limit, before } = c.req.valid('query')
      const mine = ownedBy(identity)
      const rows = await withRequestDatabase(c, 'knowledge', async (db) =>
        db
          .select()
          .from(memories)
          .where(
            and(
              mine,
              await olderThanCursor(
                db,
                { table: memories, id: memories.id, createdAt: memories.createdAt, scope: mine },
                before,
              ),
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
        400: errorResponse('The body is invalid (query missing, k outside 1 to 100)'),
        503: storeUnavailable,
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const { query, k } = c.req.valid('json')
      const owner = ownedBy(identity)
      const rows = await withRequestDatabase(c, 'knowledge', async (db) => {
        const lexical = await lexicalCandidates(
          db,
          {
            table: sql`${memories}`,
            id: sql`${memories.id}`,
            text: sql`${memories.content}`,
            tsv: sql`${memories.tsv}`,
            scope: owner,
          },
          query,
          k,
        )
        const ranked = fuse(lexical, null)
        if (ranked.length === 0) return []
        const found = await db
          .select({
            id: memories.id,
            content: memories.content,
            body: memories.body,
            createdAt: memories.createdAt,
          })
          .from(memories)
          .where(and(owner, sql`${memories.id} = any(${sql.param(ranked.map((r) => r.id))}::uuid[])`))
        const byId = new Map(found.map((row) => [row.id, row]))
        return ranked.flatMap((r) => {
          const row = byId.get(r.id)
          return row ? [{ ...row, score: r.score }] : []
        })
      })
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
