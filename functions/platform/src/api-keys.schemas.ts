/** zod schemas of the API-key management API (the OpenAPI document is generated from these). */
import { z } from '@hono/zod-openapi'
import { SCOPE_NAMES, SCOPES } from '../../../shared/auth/scopes'
import { MODEL_ALIASES } from '../../../shared/catalog/model-aliases'
import { API_KEY_MODES, MEMBER_ROLES } from '../../../shared/db/schema'
import { SPEND_PERIODS } from '../../../shared/metering/spend-period'

/** The largest value of a Postgres `integer` column. */
const MAX_STORED_INT = 2_147_483_647

/** Longest grace period a rotation may leave the old secret working: 30 days. */
export const MAX_ROTATION_GRACE_SECONDS = 30 * 24 * 3600
/** Furthest expiry a new key may have: about five years. */
export const MAX_KEY_LIFETIME_DAYS = 5 * 366

export const API_KEY_STATUSES = ['active', 'expiring', 'expired', 'revoked'] as const

const scopeList = z
  .array(z.enum(SCOPE_NAMES))
  .max(SCOPE_NAMES.length)
  .openapi({
    description: `Limit the key to these scopes (none: everything its role allows). ${Object.entries(SCOPES)
      .map(([name, what]) => `\`${name}\`: ${what}`)
      .join('; ')}.`,
  })

/** The key's own limits (docs/plans.md, "Per-key limits"); null or absent: none. */
const allowedModels = z
  .array(z.enum(MODEL_ALIASES))
  .min(1)
  .max(MODEL_ALIASES.length)
  .nullable()
  .openapi({
    description:
      'Model aliases this key may use, for chat, agent turns, reasoning jobs and MCP tools (absent or null: whatever the plan allows). Another model is 403 `model_access_required`.',
    example: ['svc-cell', 'svc-brood'],
  })

export const SpendLimitSchema = z
  .object({
    amount_usd: z.number().positive().max(1_000_000).openapi({
      description: 'What the key may spend per period at list price, in USD (6 decimals at most)',
      example: 5,
    }),
    period: z.enum(SPEND_PERIODS).openapi({
      description:
        'When the spend starts over: at 00:00 UTC each day, each Monday, on the 1st of each month; total: never',
    }),
  })
  .strict()
  .openapi('ApiKeySpendLimit', {
    description:
      'A spend limit at list price, in test mode too. Each request reserves its worst case (prompt + max_tokens) until it ends, so concurrent requests never spend more; a spent key is 402 `overage_cap_reached`.',
  })

export const KeyRateLimitSchema = z
  .object({
    // Stored as Postgres integers: a larger number is a 400 here, not a failed insert.
    requests_per_minute: z.number().int().min(1).max(MAX_STORED_INT).optional(),
    tokens_per_minute: z.number().int().min(1).max(MAX_STORED_INT).optional(),
  })
  .strict()
  .openapi('ApiKeyRateLimit', {
    description: "The key's own per-minute limits, at most the plan's; reached: 429 `rate_limited`",
  })

const limitFields = {
  allowed_models: allowedModels.optional(),
  spend_limit: SpendLimitSchema.nullable().optional(),
  rate_limit: KeyRateLimitSchema.nullable().optional(),
}

export const ApiKeyLimitsPatchSchema = z.object(limitFields).strict().openapi('ApiKeyLimitsPatch', {
  description:
    'The limits to change: a field given replaces that limit (null removes it); a field absent is kept',
})

export const ApiKeySpendSchema = z
  .object({
    period: z.enum(SPEND_PERIODS),
    amount_usd: z.number(),
    used_usd: z.number().openapi({ description: 'Spent at list price in the current period' }),
    remaining_usd: z.number(),
    resets_at: z.string().nullable().openapi({ description: 'When the period ends (null for total)' }),
  })
  .openapi('ApiKeySpend', {
    description:
      "The key's spend in the current period, at list price (requests that ended; the limit also counts those in flight)",
  })

export const ApiKeyCreateSchema = z
  .object({
    ...limitFields,
    name: z.string().trim().min(1).max(120).openapi({ example: 'production backend' }),
    mode: z.enum(API_KEY_MODES).openapi({
      description:
        'test: answered by the built-in simulated model, never billed (`svc_sk_test_`); live: real providers, billed (`svc_sk_live_`)',
    }),
    role: z.enum(MEMBER_ROLES).default('member').openapi({
      description:
        "What the key may administer: member (use the API, read settings), admin, owner. At most the creator's own role. Default member.",
    }),
    scopes: scopeList.default([]),
    expires_at: z.iso
      .datetime({ offset: true })
      .optional()
      .openapi({ description: 'When the key stops working; in the future, at most about five years ahead' }),
    expires_in_days: z
      .number()
      .int()
      .min(1)
      .max(MAX_KEY_LIFETIME_DAYS)
      .optional()
      .openapi({ description: 'Alternative to expires_at: days from now' }),
  })
  .strict()
  .openapi('ApiKeyCreate')

export const ApiKeyRotateSchema = z
  .object({
    grace_period_seconds: z.number().int().min(0).max(MAX_ROTATION_GRACE_SECONDS).default(86_400).openapi({
      description:
        'How long the old secret keeps working beside the new one (default one day, 0 = stops at once, at most 30 days)',
    }),
  })
  .strict()
  .openapi('ApiKeyRotate')

export const ApiKeySchema = z
  .object({
    id: z.string().uuid(),
    object: z.literal('api_key'),
    tenant_id: z.string().uuid(),
    name: z.string(),
    mode: z.enum(API_KEY_MODES),
    prefix: z
      .string()
      .openapi({ description: 'The mode prefix every such key starts with', example: 'svc_sk_live_' }),
    suffix: z.string().openapi({ description: 'The last four characters of the secret' }),
    redacted_value: z.string().openapi({ example: 'svc_sk_live_…x7Qa' }),
    role: z.enum(MEMBER_ROLES),
    scopes: z.array(z.string()),
    status: z.enum(API_KEY_STATUSES).openapi({
      description:
        'active; expiring: works until expires_at (a rotated key in its grace period, or a key with an expiry); expired; revoked',
    }),
    created_at: z.string(),
    created_by: z.string().nullable().openapi({ description: 'user:<uuid>, key:<uuid> or sa:<uuid>' }),
    last_used_at: z
      .string()
      .nullable()
      .openapi({ description: 'Updated at most once a minute per gateway isolate' }),
    expires_at: z.string().nullable(),
    replaced_by: z.string().uuid().nullable().openapi({ description: 'The key this one was rotated to' }),
    revoked_at: z.string().nullable(),
    allowed_models: z.array(z.string()).nullable(),
    spend_limit: SpendLimitSchema.nullable(),
    rate_limit: KeyRateLimitSchema.nullable(),
    spend: ApiKeySpendSchema.nullable().openapi({ description: 'Present when the key has a spend limit' }),
  })
  .openapi('ApiKey')

export const ApiKeyWithSecretSchema = ApiKeySchema.extend({
  key: z.string().openapi({
    description: 'The secret, shown only in this response (never stored, never shown again). Store it now.',
  }),
}).openapi('ApiKeyWithSecret')

export const ApiKeyRotatedSchema = z
  .object({
    object: z.literal('api_key_rotation'),
    key: ApiKeyWithSecretSchema.openapi({ description: 'The new key, with its secret (shown once)' }),
    previous: ApiKeySchema.openapi({ description: 'The old key: expiring at the end of the grace period' }),
  })
  .openapi('ApiKeyRotation')

export const ApiKeyListQuerySchema = z.object({
  mode: z.enum(API_KEY_MODES).optional(),
  include_inactive: z
    .enum(['true', 'false'])
    .default('true')
    .openapi({ description: 'false: only keys that work now (active or expiring)' }),
})

export const ApiKeyListSchema = z
  .object({ object: z.literal('list'), data: z.array(ApiKeySchema) })
  .openapi('ApiKeyList')

export const ApiKeyParamsSchema = z.object({ keyId: z.string().uuid() })
