import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { feedback } from '../../../shared/db/schema'
import { errorResponse } from '../../../shared/http/error-body'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import type { KnowledgeEnv } from './knowledge.context'
import { AnyJsonObject, FeedbackReceiptSchema } from './knowledge.schemas'

export function feedbackRoutes(app: OpenAPIHono<FamilyEnv<KnowledgeEnv>>): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/svc/feedback',
      tags: ['Knowledge'],
      summary: 'Send feedback (any JSON object); stored for the tenant, in the mode of the credential',
      request: { body: { required: true, content: { 'application/json': { schema: AnyJsonObject } } } },
      responses: {
        200: { description: 'Accepted', content: { 'application/json': { schema: FeedbackReceiptSchema } } },
        400: errorResponse('The body is not a JSON object'),
        503: errorResponse('knowledge_store_unavailable: the database cannot be reached; retry shortly'),
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const body = c.req.valid('json')
      const subject = identity.principal.kind === 'api_key' ? null : identity.principal.subject
      const row = await withRequestDatabase(c, 'knowledge', async (db) => {
        const [inserted] = await db
          .insert(feedback)
          .values({
            tenantId: identity.tenantId,
            mode: identity.mode,
            apiKeyId: identity.principal.kind === 'api_key' ? identity.principal.keyId : null,
            subject,
            body,
            requestId: c.get('request').requestId,
          })
          .returning({ id: feedback.id, createdAt: feedback.createdAt })
        return inserted!
      })
      return c.json(
        {
          id: row.id,
          object: 'feedback' as const,
          status: 'accepted' as const,
          created_at: row.createdAt.toISOString(),
        },
        200,
      )
    },
  )
}
