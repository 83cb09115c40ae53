/**
 * /svc/documents*: the HTTP surface of tenant documents. The work is in documents/document-store.ts
 * (plain functions, reused by other surfaces); here: validation, plan gating, rendering.
 *
 * Gating (spec Errors): list, get and retrieve need the plan's `retrieval` feature (403
 * feature_required with the action-required body); upload past the plan's document allowance is
 * 429 tier_allowance_exhausted with binding_limit kind `documents` (on Free, whose allowance is 0,
 * every upload). Delete is always allowed, so a downgraded workspace can clean up.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { actionRequiredResponse, errorResponse } from '../../../shared/http/error-body'
import { AppError } from '../../../shared/http/errors'
import { checkFeatureAccess } from '../../../shared/plans/entitlements'
import { type ResolvedPlan, resolvePlan } from '../../../shared/plans/plan-catalog'
import { actionRequiredError } from '../../../shared/plans/upgrade-decision'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { scopeOf } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import {
  type DocumentRecord,
  deleteDocument,
  getDocument,
  indexingState,
  listDocuments,
  retrieveChunks,
  uploadDocument,
} from './documents/document-store'
import type { KnowledgeEnv } from './knowledge.context'
import {
  DocumentDeletedSchema,
  DocumentDetailSchema,
  DocumentIdParamSchema,
  DocumentListQuerySchema,
  DocumentListSchema,
  DocumentRetrievalResultSchema,
  DocumentUploadRequestSchema,
  DocumentUploadResultSchema,
  RetrievalRequestSchema,
} from './knowledge.schemas'
import { embedderFor } from './retrieval/embeddings'
import { RRF_K, vectorBackendOf } from './retrieval/engine'

type Ctx = Context<FamilyEnv<KnowledgeEnv>>

function planOf(c: Ctx): ResolvedPlan {
  return resolvePlan(c.env, identityOf(c).planId)
}

/** 403 feature_required unless the caller's plan includes retrieval. */
function requireRetrieval(c: Ctx): ResolvedPlan {
  const resolved = planOf(c)
  const decision = checkFeatureAccess(resolved.plan, 'retrieval', { catalog: resolved.catalog })
  if (decision) throw actionRequiredError(decision, { catalog: resolved.catalog })
  return resolved
}

function render(document: DocumentRecord, currentSpace: string | null) {
  return {
    id: document.id,
    object: 'document' as const,
    source: document.source,
    size_bytes: document.sizeBytes,
    characters: document.characters,
    chunk_count: document.chunkCount,
    indexing_state: indexingState(document.embeddingSpace, currentSpace),
    embedding_space: document.embeddingSpace,
    created_at: document.createdAt.toISOString(),
    updated_at: document.updatedAt.toISOString(),
  }
}

const notFound = (id: string) =>
  new AppError(404, 'document_not_found', `No document ${id} in this workspace.`, { param: 'id' })

const json = <T>(schema: T) => ({ 'application/json': { schema } })
const retrievalNotIncluded = actionRequiredResponse('feature_required: retrieval is not enabled for the plan')
const storeUnavailable = errorResponse(
  'knowledge_store_unavailable (the database; retry shortly) or embeddings_provider_invalid (its configuration)',
)

export function documentRoutes(app: OpenAPIHono<FamilyEnv<KnowledgeEnv>>): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/svc/documents/upload',
      tags: ['Knowledge'],
      summary: 'Upload a document (replaces the document with the same source)',
      description:
        'Chunked on paragraph and sentence boundaries (at most 1,000 characters, overlapping by up to 200), indexed for full-text search and, where an embeddings provider is configured, embedded. Re-uploading a source replaces it atomically; identical content changes nothing. 413 over 1 MiB; 429 past the plan’s document allowance.',
      request: { body: { required: true, content: json(DocumentUploadRequestSchema) } },
      responses: {
        200: { description: 'Accepted and indexed', content: json(DocumentUploadResultSchema) },
        400: errorResponse(
          'The body is invalid (the message names the field and the rule), or empty_document',
        ),
        413: errorResponse('document_too_large: the content is over 1 MiB'),
        429: actionRequiredResponse(
          "tier_allowance_exhausted: the plan's document allowance is reached (binding_limit kind documents)",
        ),
        502: errorResponse('embeddings_provider_failed: the embeddings provider failed; nothing was stored'),
        503: storeUnavailable,
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const input = c.req.valid('json')
      const plan = planOf(c)
      const embedder = embedderFor(c.env, identity)
      const result = await withRequestDatabase(c, 'knowledge', (db) =>
        uploadDocument(db, scopeOf(identity), input, { plan, embedder }),
      )
      return c.json(
        {
          ...render(result.document, embedder?.space.id ?? null),
          status: result.status,
          embedded_chunks: result.embeddedChunks,
          reused_embeddings: result.reusedEmbeddings,
        },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/svc/documents',
      tags: ['Knowledge'],
      summary: "List the workspace's documents, newest first",
      request: { query: DocumentListQuerySchema },
      responses: {
        200: { description: 'Documents', content: json(DocumentListSchema) },
        400: errorResponse('A query parameter (limit, after) is invalid'),
        403: retrievalNotIncluded,
        503: storeUnavailable,
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      requireRetrieval(c)
      const { limit, after } = c.req.valid('query')
      const space = embedderFor(c.env, identity)?.space.id ?? null
      const page = await withRequestDatabase(c, 'knowledge', (db) =>
        listDocuments(db, scopeOf(identity), { limit, after }),
      )
      return c.json(
        {
          object: 'list' as const,
          data: page.documents.map((d) => render(d, space)),
          has_more: page.nextCursor !== null,
          next_cursor: page.nextCursor,
        },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/svc/documents/{id}',
      tags: ['Knowledge'],
      summary: 'A document with its chunks and their offsets (extension)',
      request: { params: DocumentIdParamSchema },
      responses: {
        200: { description: 'The document', content: json(DocumentDetailSchema) },
        400: errorResponse('id is not a document id'),
        403: retrievalNotIncluded,
        404: errorResponse('document_not_found in this workspace'),
        503: storeUnavailable,
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      requireRetrieval(c)
      const { id } = c.req.valid('param')
      const space = embedderFor(c.env, identity)?.space.id ?? null
      const found = await withRequestDatabase(c, 'knowledge', (db) => getDocument(db, scopeOf(identity), id))
      if (!found) throw notFound(id)
      return c.json(
        {
          ...render(found.document, space),
          chunks: found.chunks.map((ch) => ({
            index: ch.ordinal,
            start: ch.start,
            end: ch.end,
            text: ch.text,
            embedded: ch.embedded,
          })),
        },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/svc/documents/{id}',
      tags: ['Knowledge'],
      summary: 'Delete a document with its chunks and vectors (extension)',
      request: { params: DocumentIdParamSchema },
      responses: {
        200: { description: 'Deleted', content: json(DocumentDeletedSchema) },
        400: errorResponse('id is not a document id'),
        404: errorResponse('document_not_found in this workspace'),
        503: storeUnavailable,
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const { id } = c.req.valid('param')
      const deleted = await withRequestDatabase(c, 'knowledge', (db) =>
        deleteDocument(db, scopeOf(identity), id),
      )
      if (!deleted) throw notFound(id)
      return c.json({ id, object: 'document' as const, deleted: true as const }, 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: '/svc/documents/retrieve',
      tags: ['Knowledge'],
      summary: 'The k chunks most relevant to a query (hybrid full-text + vector ranking)',
      description:
        'Postgres full-text search fused with vector similarity by reciprocal rank fusion (k = 60). Each chunk says which signal ranked it where; `ranking.vector` says whether vectors were used (pgvector index or exact scan) or why not.',
      request: { body: { required: true, content: json(RetrievalRequestSchema) } },
      responses: {
        200: { description: 'Chunks, best first', content: json(DocumentRetrievalResultSchema) },
        400: errorResponse('The body is invalid (query missing, k outside 1 to 100)'),
        403: retrievalNotIncluded,
        503: storeUnavailable,
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      requireRetrieval(c)
      const request = c.req.valid('json')
      const embedder = embedderFor(c.env, identity)
      const retrieval = await withRequestDatabase(c, 'knowledge', (db) =>
        retrieveChunks(db, scopeOf(identity), request, {
          embedder,
          backend: () => vectorBackendOf(db, c.env.DATABASE_URL ?? ''),
        }),
      )
      const round = (x: number) => Number(x.toFixed(6))
      const signal = (s: { rank: number; score: number } | null) =>
        s ? { rank: s.rank, score: round(s.score) } : null
      return c.json(
        {
          object: 'list' as const,
          data: retrieval.chunks.map((chunk) => ({
            object: 'document_chunk' as const,
            document_id: chunk.documentId,
            source: chunk.source,
            index: chunk.ordinal,
            start: chunk.start,
            end: chunk.end,
            text: chunk.text,
            score: round(chunk.fused.score),
            signals: { lexical: signal(chunk.fused.lexical), vector: signal(chunk.fused.vector) },
          })),
          ranking: {
            fusion: 'reciprocal_rank_fusion' as const,
            rrf_k: RRF_K,
            lexical: 'postgres_full_text' as const,
            vector:
              retrieval.vector.state === 'used'
                ? {
                    state: 'used' as const,
                    backend: retrieval.vector.backend,
                    embedding_space: retrieval.vector.embeddingSpace,
                  }
                : { state: 'unavailable' as const, reason: retrieval.vector.reason },
          },
        },
        200,
      )
    },
  )
}
