import { z } from '@hono/zod-openapi'

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
  before: z
    .string()
    .datetime({ offset: true })
    .optional()
    .openapi({ description: 'created_at cursor from the last page' }),
})
