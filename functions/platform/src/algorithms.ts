/**
 * GET /platform/v1/crypto/algorithms?status=&type=: the registry, filtered. No database work; the
 * rendered body of each filter combination is built once per isolate (the registry is static).
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { filterAlgorithms } from '../../../shared/crypto-policy'
import { AppError } from '../../../shared/http/errors'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import type { PlatformEnv } from './platform.context'
import { AlgorithmListSchema, AlgorithmQuerySchema, errorResponse } from './platform.schemas'

const rendered = new Map<string, string>()

const route = createRoute({
  method: 'get',
  path: '/platform/v1/crypto/algorithms',
  tags: ['Crypto policy'],
  summary: 'The algorithm registry: standard names, OIDs, security levels, lifecycle status',
  description:
    'status: NIST_FINAL, DRAFT, DEPRECATED; type: kem, signature, symmetric, hash, mac (any case). The spec tables exactly (source "spec"), plus the classical, symmetric, hash and MAC algorithms the product uses (source "product"). Deprecated entries carry replacement and deprecationDate.',
  request: { query: AlgorithmQuerySchema },
  responses: {
    200: {
      description: 'Registry entries',
      content: { 'application/json': { schema: AlgorithmListSchema } },
    },
    400: errorResponse('invalid_algorithm_filter, listing the allowed values'),
  },
})

/** The registry filtered by the query, as the JSON text of the list (the same text per filter). */
function algorithmList(query: Readonly<Record<string, string>>): string {
  const parsed = AlgorithmQuerySchema.safeParse(query)
  if (!parsed.success) {
    throw new AppError(400, 'invalid_algorithm_filter', 'status and type must be at most 32 characters.')
  }
  const { status, type } = parsed.data
  const cacheKey = `${status ?? ''}|${type ?? ''}`
  let body = rendered.get(cacheKey)
  if (body === undefined) {
    body = JSON.stringify({ object: 'list', data: filterAlgorithms({ status, type }) })
    if (rendered.size < 64) rendered.set(cacheKey, body)
  }
  return body
}

export function algorithmRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  // The cached body text of the filter (filterAlgorithms validates both filters and answers 400
  // naming the allowed values).
  app.openAPIRegistry.registerPath(route)
  app.get('/platform/v1/crypto/algorithms', (c) =>
    c.body(algorithmList(c.req.query()), 200, { 'content-type': 'application/json' }),
  )
}
