/** zod schemas of the API-key management API (the OpenAPI document is generated from these). */
import { z } from '@hono/zod-openapi'
import { SCOPE_NAMES, SCOPES } from '../../../shared/auth/scopes'
import { API_KEY_MODES, MEMBER_ROLES } from '../../../shared/db/schema'

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

export const ApiKeyCreateSchema = z
  .object({
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
