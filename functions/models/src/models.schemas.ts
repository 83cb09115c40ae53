import { z } from '@hono/zod-openapi'

export const ModelListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(
      z.object({
        id: z.string(),
        object: z.literal('model'),
        created: z.number().int(),
        owned_by: z.string(),
        snapshot: z.string().optional().openapi({ description: 'On an alias: its current dated snapshot' }),
        alias: z.string().optional().openapi({ description: 'On a snapshot: the alias it belongs to' }),
      }),
    ),
    aliases: z.record(z.string(), z.string()).openapi({ description: 'alias → current immutable snapshot' }),
    catalog_version: z.string(),
  })
  .openapi('ModelList')

export const RouterCatalogSchema = z
  .object({
    catalog_version: z.string(),
    data: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        description: z.string(),
        created: z.number().int(),
        snapshots: z.array(z.string()),
        current_snapshot: z.string(),
        input_modalities: z.array(z.string()),
        output_modalities: z.array(z.string()),
        context_length: z.number().int(),
        max_output_length: z.number().int(),
        pricing: z
          .object({ prompt: z.string(), completion: z.string(), input_cache_read: z.string() })
          .openapi({ description: 'USD per token, as decimal strings' }),
        supported_features: z.array(z.string()),
        capacity: z.object({ requests_per_minute: z.number().int(), tokens_per_minute: z.number().int() }),
        datacenters: z.array(z.object({ country_code: z.string() })),
        launch_state: z.enum(['staged', 'ready']),
        is_ready: z.boolean(),
        deprecation_date: z.string().nullable(),
      }),
    ),
  })
  .openapi('RouterCatalog')
