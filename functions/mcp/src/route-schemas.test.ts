/**
 * A tool's output schema is its route's success schema from the owning family's OpenAPI document,
 * made self-contained: references become `$defs`, and a schema documented as `allOf` (a zod schema
 * extending a named one, as DocumentUploadResult extends Document) becomes one object schema.
 */
import { beforeEach, describe, expect, it } from 'vitest'
import type { McpEnv } from './mcp.context'
import { clearRouteSchemas, routeOutputSchema } from './route-schemas'

const DOCUMENT = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    source: { type: 'string' },
    size: { $ref: '#/components/schemas/Size' },
  },
  required: ['id', 'source'],
}

function envWith(doc: unknown): McpEnv {
  return { KNOWLEDGE: { openapi: async () => doc } } as unknown as McpEnv
}

const answering = (schema: unknown) => ({
  paths: {
    '/svc/documents/upload': {
      post: { responses: { '200': { content: { 'application/json': { schema } } } } },
    },
  },
  components: {
    schemas: {
      Document: DOCUMENT,
      Size: { type: 'integer', example: 3 },
      Upload: {
        allOf: [
          { $ref: '#/components/schemas/Document' },
          { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] },
        ],
      },
    },
  },
})

describe('routeOutputSchema', () => {
  beforeEach(() => clearRouteSchemas())

  it('follows a reference to the root object and keeps the components it uses as $defs', async () => {
    const schema = await routeOutputSchema(
      envWith(answering({ $ref: '#/components/schemas/Document' })),
      'knowledge',
      'POST',
      '/svc/documents/upload',
    )
    expect(schema).toMatchObject({
      type: 'object',
      properties: { id: { type: 'string' }, source: { type: 'string' }, size: { $ref: '#/$defs/Size' } },
      required: ['id', 'source'],
    })
    // OpenAPI-only keywords (example) are dropped.
    expect((schema!.$defs as Record<string, unknown>).Size).toEqual({ type: 'integer' })
  })

  it('merges an allOf of objects into one object: properties and required names of every part', async () => {
    const schema = await routeOutputSchema(
      envWith(answering({ $ref: '#/components/schemas/Upload' })),
      'knowledge',
      'POST',
      '/svc/documents/upload',
    )
    expect(schema).toMatchObject({
      type: 'object',
      properties: { id: { type: 'string' }, source: { type: 'string' }, status: { type: 'string' } },
      required: ['id', 'source', 'status'],
    })
    expect(schema).not.toHaveProperty('allOf')
  })

  it('gives no schema when the answer is not an object', async () => {
    const schema = await routeOutputSchema(
      envWith(answering({ type: 'array', items: { type: 'string' } })),
      'knowledge',
      'POST',
      '/svc/documents/upload',
    )
    expect(schema).toBeNull()
  })
})
