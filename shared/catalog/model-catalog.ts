/**
 * The model catalog: versioned configuration (model-catalog.json), validated with zod when an
 * isolate loads it, never code. A bad catalog fails at start-up (and in the test suite), not on a
 * request. The public listings are rendered once per isolate.
 */
import { z } from 'zod'
import { MODEL_ALIASES, type ModelAlias } from './model-aliases'
import raw from './model-catalog.json'

const usdPerToken = z.string().regex(/^\d+(\.\d+)?$/, 'a decimal string in USD per token')
const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a YYYY-MM-DD date')

export const FEATURES = [
  'tools',
  'json_mode',
  'structured_outputs',
  'logprobs',
  'reasoning',
  'web_search',
] as const

const ModelEntry = z
  .object({
    alias: z.enum(MODEL_ALIASES),
    name: z.string().min(1),
    description: z.string().min(1),
    snapshots: z
      .array(z.object({ id: z.string().min(1), created: z.number().int().positive() }).strict())
      .min(1),
    current_snapshot: z.string(),
    context_length: z.number().int().positive(),
    max_output_length: z.number().int().positive(),
    input_modalities: z.array(z.enum(['text', 'image', 'audio', 'file'])).min(1),
    output_modalities: z.array(z.enum(['text', 'image', 'audio'])).min(1),
    supported_features: z.array(z.enum(FEATURES)),
    pricing: z
      .object({ prompt: usdPerToken, completion: usdPerToken, input_cache_read: usdPerToken })
      .strict(),
    capacity: z
      .object({
        requests_per_minute: z.number().int().positive(),
        tokens_per_minute: z.number().int().positive(),
      })
      .strict(),
    datacenters: z.array(z.string().regex(/^[A-Z]{2}$/, 'an ISO 3166-1 alpha-2 country code')).min(1),
    launch_state: z.enum(['staged', 'ready']),
    deprecation_date: isoDate.nullable(),
  })
  .strict()
  .refine((m) => m.snapshots.some((s) => s.id === m.current_snapshot), {
    message: 'current_snapshot must be one of the snapshots',
  })
  .refine((m) => m.snapshots.every((s) => s.id.startsWith(`${m.alias}-`)), {
    message: 'snapshot ids must start with the alias',
  })

export const ModelCatalogSchema = z
  .object({
    version: isoDate,
    owned_by: z.string().min(1),
    models: z.array(ModelEntry),
  })
  .strict()
  .refine((c) => MODEL_ALIASES.every((a) => c.models.filter((m) => m.alias === a).length === 1), {
    message: 'every model alias must appear exactly once',
  })

export type ModelCatalog = z.infer<typeof ModelCatalogSchema>
export type ModelEntry = z.infer<typeof ModelEntry>

export const MODEL_CATALOG: ModelCatalog = ModelCatalogSchema.parse(raw)

const byAlias = new Map(MODEL_CATALOG.models.map((m) => [m.alias, m]))

export function modelEntry(alias: ModelAlias): ModelEntry {
  return byAlias.get(alias)!
}

export function supportsThinking(alias: ModelAlias): boolean {
  return modelEntry(alias).supported_features.includes('reasoning')
}

/** Resolves an alias or a dated snapshot id to its catalog entry. */
export function resolveModel(id: string): { entry: ModelEntry; snapshot: string } | null {
  const entry = byAlias.get(id as ModelAlias)
  if (entry) return { entry, snapshot: entry.current_snapshot }
  for (const m of MODEL_CATALOG.models) {
    if (m.snapshots.some((s) => s.id === id)) return { entry: m, snapshot: id }
  }
  return null
}

/** GET /svc/models: OpenAI list shape; aliases and their immutable dated snapshots. */
export function renderModelList(catalog: ModelCatalog = MODEL_CATALOG) {
  const data: Record<string, unknown>[] = []
  for (const m of catalog.models) {
    const current = m.snapshots.find((s) => s.id === m.current_snapshot)!
    data.push({
      id: m.alias,
      object: 'model',
      created: current.created,
      owned_by: catalog.owned_by,
      snapshot: m.current_snapshot,
    })
    for (const s of m.snapshots) {
      data.push({ id: s.id, object: 'model', created: s.created, owned_by: catalog.owned_by, alias: m.alias })
    }
  }
  return {
    object: 'list',
    data,
    aliases: Object.fromEntries(catalog.models.map((m) => [m.alias, m.current_snapshot])),
    catalog_version: catalog.version,
  }
}

/** GET /svc/router/models: the provider-facing catalog (OpenRouter provider-spec style). */
export function renderRouterCatalog(catalog: ModelCatalog = MODEL_CATALOG) {
  return {
    catalog_version: catalog.version,
    data: catalog.models.map((m) => ({
      id: m.alias,
      name: m.name,
      description: m.description,
      created: m.snapshots.find((s) => s.id === m.current_snapshot)!.created,
      snapshots: m.snapshots.map((s) => s.id),
      current_snapshot: m.current_snapshot,
      input_modalities: m.input_modalities,
      output_modalities: m.output_modalities,
      context_length: m.context_length,
      max_output_length: m.max_output_length,
      pricing: m.pricing,
      supported_features: m.supported_features,
      capacity: m.capacity,
      datacenters: m.datacenters.map((country_code) => ({ country_code })),
      launch_state: m.launch_state,
      is_ready: m.launch_state === 'ready',
      deprecation_date: m.deprecation_date,
    })),
  }
}
