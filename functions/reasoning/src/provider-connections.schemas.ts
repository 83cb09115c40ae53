/** zod schemas of the provider connections API (the OpenAPI document is generated from these). */
import { z } from '@hono/zod-openapi'
import { PROVIDER_KINDS } from '../../../durable-objects/reasoning-job/quantum/providers/qpu-provider'

/** IonQ's targets a connection may run real-hardware jobs on (or its simulator). */
export const IONQ_CONNECTION_TARGETS = [
  'qpu.aria-1',
  'qpu.aria-2',
  'qpu.forte-1',
  'qpu.forte-enterprise-1',
  'qpu.harmony',
  'simulator',
] as const

export const ProviderConnectionCreateSchema = z
  .object({
    name: z.string().trim().min(1).max(100).openapi({ example: 'our IonQ account' }),
    kind: z.enum(PROVIDER_KINDS).openapi({ description: 'The provider API (ionq: IonQ Quantum Cloud v0.3)' }),
    api_key: z
      .string()
      .min(8)
      .max(512)
      .regex(/^\S+$/, 'the API key has no spaces')
      .openapi({ description: 'The provider API key. Stored encrypted, never returned.' }),
    base_url: z
      .url({ protocol: /^https?$/ })
      .optional()
      .openapi({
        description:
          "The provider's API base URL: one of the deployment's QPU_PROVIDER_BASE_URLS (default: the first)",
      }),
    target: z
      .enum(IONQ_CONNECTION_TARGETS)
      .default('qpu.aria-1')
      .openapi({ description: 'The QPU jobs run on (default qpu.aria-1)' }),
  })
  .strict()
  .openapi('ProviderConnectionCreate')

export const ConnectionTestSchema = z
  .object({
    ok: z.boolean(),
    tested_at: z.iso.datetime(),
    error: z.object({ code: z.string(), message: z.string() }).strict().nullable(),
  })
  .strict()
  .openapi('ProviderConnectionTest')

export const ProviderConnectionSchema = z
  .object({
    id: z.uuid(),
    object: z.literal('provider_connection'),
    name: z.string(),
    kind: z.enum(PROVIDER_KINDS),
    base_url: z.string(),
    target: z.string(),
    created_at: z.iso.datetime(),
    created_by: z.string().openapi({ description: 'key:<uuid> or the token subject that created it' }),
    last_test: ConnectionTestSchema.nullable().openapi({ description: 'The latest POST …/test, or null' }),
  })
  .strict()
  .openapi('ProviderConnection')
export type ProviderConnection = z.infer<typeof ProviderConnectionSchema>

export const ProviderConnectionListSchema = z
  .object({ object: z.literal('list'), data: z.array(ProviderConnectionSchema) })
  .strict()
  .openapi('ProviderConnectionList')

export const ProviderConnectionTestedSchema = z
  .object({ connection: ProviderConnectionSchema, test: ConnectionTestSchema })
  .strict()
  .openapi('ProviderConnectionTested')

export const ProviderConnectionDeletedSchema = z
  .object({ id: z.uuid(), object: z.literal('provider_connection'), deleted: z.literal(true) })
  .strict()
  .openapi('ProviderConnectionDeleted')

export const ConnectionParamsSchema = z.object({
  connectionId: z
    .string()
    .openapi({ param: { name: 'connectionId', in: 'path' }, description: 'The connection id (a UUID)' }),
})
