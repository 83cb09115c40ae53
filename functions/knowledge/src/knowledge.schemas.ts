import { z } from '@hono/zod-openapi'
import { ListCursorSchema } from '../../../shared/db/list-cursor'

export const AnyJsonObject = z.record(z.string(), z.unknown()).openapi('AnyJsonObject', {
  description: 'Any JSON object',
})

export const RetrievalRequestSchema = z
  .object({
    query: z.string().min(1).openapi({ example: 'how do I rotate keys' }),
    k: z.number().int().min(1).max(100).default(3),
  })
  .openapi('RetrievalRequest')

export const FeedbackReceiptSchema = z
  .object({
    id: z.string().uuid(),
    object: z.literal('feedback'),
    status: z.literal('accepted'),
    created_at: z.string(),
  })
  .openapi('FeedbackReceipt')

export const MemorySchema = z
  .object({
    id: z.string().uuid(),
    object: z.literal('memory'),
    content: z
      .string()
      .openapi({ description: 'Searchable text: `content` or `text` of the body, else the body as JSON' }),
    body: AnyJsonObject,
    created_at: z.string(),
  })
  .openapi('Memory')

export const MemoryListSchema = z
  .object({ object: z.literal('list'), data: z.array(MemorySchema), has_more: z.boolean() })
  .openapi('MemoryList')

export const MemorySearchResultSchema = z
  .object({ object: z.literal('list'), data: z.array(MemorySchema.extend({ score: z.number() })) })
  .openapi('MemorySearchResult')

export const MemoryListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  before: ListCursorSchema,
})

// ---------------------------------------------------------------------------------------------
// Tenant documents (docs/retrieval.md).

export const DocumentUploadRequestSchema = z
  .object({
    source: z.string().min(1).max(1024).openapi({
      description:
        'Names the document (a path, URL or title, at most 1024 characters); uploading the same source again replaces the document',
      example: 'handbook/security.md',
    }),
    content: z.string().openapi({
      description: 'The text, at most 1 MiB of UTF-8 (larger: 413 document_too_large)',
      example: 'Rotate signing keys every 90 days.',
    }),
  })
  .openapi('DocumentUploadRequest')

const IndexingStateSchema = z.enum(['indexed', 'full_text_only', 'stale_embeddings']).openapi({
  description:
    '`indexed`: full-text and vectors; `full_text_only`: no embeddings provider when it was uploaded; `stale_embeddings`: its vectors belong to another embedding space than the one this caller retrieves with (upload it again to re-index)',
})

export const DocumentSchema = z
  .object({
    id: z.string().uuid(),
    object: z.literal('document'),
    source: z.string(),
    size_bytes: z.int().openapi({ description: 'UTF-8 bytes of the content' }),
    characters: z
      .int()
      .openapi({ description: 'Length of the content in UTF-16 code units (offsets use these)' }),
    chunk_count: z.int(),
    indexing_state: IndexingStateSchema,
    embedding_space: z
      .string()
      .nullable()
      .openapi({ description: '`model@dimensions` of its vectors, null when full-text only' }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('Document')

export const DocumentUploadResultSchema = DocumentSchema.extend({
  status: z.enum(['created', 'replaced', 'unchanged']).openapi({
    description:
      '`unchanged`: the same source with identical content was already stored (nothing re-embedded)',
  }),
  embedded_chunks: z.int().openapi({ description: 'Chunks embedded by the provider for this upload' }),
  reused_embeddings: z
    .int()
    .openapi({ description: 'Chunks whose stored vector (identical text, same embedding space) was reused' }),
}).openapi('DocumentUploadResult')

export const DocumentListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after: z.string().optional().openapi({ description: '`next_cursor` of the previous page' }),
})

export const DocumentListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(DocumentSchema),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
  })
  .openapi('DocumentList')

export const DocumentIdParamSchema = z.object({
  id: z
    .string()
    .uuid()
    .openapi({ param: { name: 'id', in: 'path' } }),
})

export const DocumentChunkSchema = z
  .object({
    index: z.int().openapi({ description: 'Position of the chunk in its document, from 0' }),
    start: z
      .int()
      .openapi({ description: 'Offset of its first character in the content (UTF-16 code units)' }),
    end: z
      .int()
      .openapi({ description: 'Offset just past its last character: content.slice(start, end) = text' }),
    text: z.string(),
  })
  .openapi('DocumentChunk')

export const DocumentDetailSchema = DocumentSchema.extend({
  chunks: z.array(DocumentChunkSchema.extend({ embedded: z.boolean() })),
}).openapi('DocumentDetail')

export const DocumentDeletedSchema = z
  .object({ id: z.string().uuid(), object: z.literal('document'), deleted: z.literal(true) })
  .openapi('DocumentDeleted')

const SignalSchema = z
  .object({
    rank: z.int().openapi({ description: 'Rank in this signal, from 1' }),
    score: z.number().openapi({
      description:
        'lexical: full-text score (ts_rank_cd, +1 all words matched, +1 verbatim); vector: cosine similarity',
    }),
  })
  .nullable()

export const RetrievedChunkSchema = DocumentChunkSchema.extend({
  object: z.literal('document_chunk'),
  document_id: z.string().uuid(),
  source: z.string(),
  score: z
    .number()
    .openapi({ description: 'Fused score: the sum of 1/(60 + rank) over the signals that ranked it' }),
  signals: z.object({ lexical: SignalSchema, vector: SignalSchema }).openapi({
    description: 'Which signal ranked the chunk where (null: not among that signal’s candidates)',
  }),
}).openapi('RetrievedChunk')

export const RetrievalRankingSchema = z
  .object({
    fusion: z.literal('reciprocal_rank_fusion'),
    rrf_k: z.int(),
    lexical: z.literal('postgres_full_text'),
    vector: z.discriminatedUnion('state', [
      z.object({
        state: z.literal('used'),
        backend: z.enum(['pgvector', 'exact']).openapi({
          description:
            '`pgvector`: HNSW index; `exact`: exact cosine over every vector (a database without pgvector)',
        }),
        embedding_space: z.string(),
      }),
      z.object({
        state: z.literal('unavailable'),
        reason: z.enum(['no_embeddings_provider', 'embeddings_provider_failed']),
      }),
    ]),
  })
  .openapi('RetrievalRanking')

export const DocumentRetrievalResultSchema = z
  .object({ object: z.literal('list'), data: z.array(RetrievedChunkSchema), ranking: RetrievalRankingSchema })
  .openapi('DocumentRetrievalResult')
