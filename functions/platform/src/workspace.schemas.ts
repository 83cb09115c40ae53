/** zod schemas of the workspace, plans, billing and usage API (the console reads these). */
import { z } from '@hono/zod-openapi'
import { API_KEY_MODES, MEMBER_ROLES } from '../../../shared/db/schema'

export const WorkspaceSchema = z
  .object({
    object: z.literal('workspace'),
    id: z.string().uuid(),
    name: z.string(),
    plan: z.object({ id: z.string(), name: z.string() }),
    role: z.enum(MEMBER_ROLES).openapi({ description: "The caller's role in this workspace" }),
    principal: z.string().openapi({ description: 'The caller: key:<id>, user:<uuid> or sa:<uuid>' }),
    user: z
      .object({ id: z.string().uuid(), email: z.string(), display_name: z.string().nullable() })
      .nullable()
      .openapi({ description: 'The person calling with a login token; null for keys and service accounts' }),
  })
  .openapi('Workspace')

export const PlanSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    rank: z.number().int(),
    monthly_price_cents: z.number().int().nullable().openapi({ description: 'null: priced by contract' }),
    self_serve: z.boolean().openapi({ description: 'Whether an owner may switch to it in the console' }),
    models: z.array(z.string()),
    model_allowances: z.record(z.string(), z.number()),
    tool_allowances: z.record(z.string(), z.number()),
    features: z.array(z.string()),
    domains: z.array(z.string()),
    monthly_token_allowance: z.number().int().nullable().openapi({ description: 'null: unlimited' }),
    included_credits_cents: z.number().int(),
    usage_credits: z.boolean(),
    overage_cap_cents: z.number().int().nullable(),
    context_limit_tokens: z.number().int(),
    requests_per_minute: z.number().int(),
    tokens_per_minute: z.number().int(),
    document_allowance: z.number().int(),
  })
  .openapi('Plan')

export const PlanListSchema = z
  .object({
    object: z.literal('list'),
    catalog_version: z.string(),
    current_plan: z.string(),
    data: z.array(PlanSchema),
  })
  .openapi('PlanList')

export const BillingSchema = z
  .object({
    object: z.literal('billing'),
    plan: PlanSchema,
    period: z
      .object({ start: z.string(), end: z.string() })
      .openapi({ description: 'The calendar month (UTC)' }),
    tokens_used: z
      .number()
      .int()
      .openapi({ description: 'Live tokens counted against the allowance this period' }),
    tokens_remaining: z.number().int().nullable().openapi({ description: 'null: the plan is unlimited' }),
    credits_balance_cents: z.number(),
    overage_cents: z.number().openapi({ description: 'Spent on usage beyond the allowance this period' }),
    usage_credits_enabled: z.boolean(),
    spend_cap_cents: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The workspace's own cap on overage spend; null: the plan's default" }),
    effective_spend_cap_cents: z.number().int().nullable().openapi({ description: 'null: no cap' }),
    updated_at: z.string().nullable().openapi({ description: 'When the metering last wrote these figures' }),
  })
  .openapi('Billing')

export const BillingPatchSchema = z
  .object({
    usage_credits_enabled: z.boolean().optional().openapi({
      description: 'Pay for usage beyond the allowance from credits (plans with usage credits only)',
    }),
    spend_cap_cents: z
      .number()
      .int()
      .min(0)
      .max(100_000_000)
      .nullable()
      .optional()
      .openapi({ description: "Monthly cap on overage spend, in cents; null: the plan's default" }),
  })
  .strict()
  .openapi('BillingPatch')

export const PlanChangeSchema = z
  .object({ plan_id: z.string().min(1).max(40).openapi({ example: 'team' }) })
  .strict()
  .openapi('PlanChange')

export const UsageQuerySchema = z.object({
  days: z.coerce
    .number()
    .int()
    .min(1)
    .max(92)
    .default(30)
    .openapi({ description: 'Days back from today (UTC)' }),
  mode: z.enum(API_KEY_MODES).optional().openapi({
    description:
      "Usage is the caller's mode's only (a key's own, a person's x-svc-mode); naming the other mode shows nothing",
  }),
  key_id: z.string().uuid().optional().openapi({ description: 'Only what this API key used' }),
})

export const UsageDaySchema = z.object({
  day: z.string().openapi({ description: 'YYYY-MM-DD (UTC)' }),
  model: z.string().openapi({ description: 'Model alias, or the paid tool (web_search, transcription)' }),
  mode: z.enum(API_KEY_MODES),
  requests: z.number().int().openapi({
    description: 'Admitted requests, those that then failed included (they used and were charged nothing)',
  }),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  quantity: z.number().openapi({ description: "What was used in the model's or tool's unit" }),
  unit: z.string(),
  credits_cents: z.number(),
})

export const UsageSchema = z
  .object({
    object: z.literal('usage'),
    from: z.string(),
    to: z.string(),
    data: z.array(UsageDaySchema).openapi({ description: 'One row per day, model and mode that had usage' }),
    totals: z.object({
      requests: z.number().int(),
      tokens: z.number().int(),
      credits_cents: z.number(),
    }),
  })
  .openapi('Usage')

export const UsageRequestsQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z
    .string()
    .max(200)
    .optional()
    .openapi({ description: "The previous page's next_cursor; omit for the newest requests" }),
  mode: z.enum(API_KEY_MODES).optional().openapi({
    description:
      "Usage is the caller's mode's only (a key's own, a person's x-svc-mode); naming the other mode shows nothing",
  }),
  key_id: z.string().uuid().optional(),
  outcome: z.enum(['succeeded', 'failed']).optional().openapi({
    description:
      'succeeded: status below 400; failed: status 400 or above (admitted requests that then failed). Rows with no status (billed from a checkpoint, or older than the column) match neither',
  }),
})

export const UsageRequestSchema = z.object({
  request_id: z.string(),
  endpoint: z.string().openapi({ description: 'chat.completions, code.turns, code.search, code.transcribe' }),
  model: z.string(),
  provider: z.string(),
  mode: z.enum(API_KEY_MODES),
  principal: z.string(),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  quantity: z.number(),
  unit: z.string(),
  credits_cents: z.number(),
  estimated: z.boolean().openapi({
    description:
      'The usage was counted with the tokenizer (the stream was cut, or the provider reported none)',
  }),
  status: z.number().int().nullable().openapi({
    description:
      'The HTTP status the client received. A stream or turn whose answer began before its outcome was known records the outcome: 200 completed, 502 ended in an error event or failed, 499 cancelled by the client (a completed reasoning job: 200). A request admitted and then failed before producing anything is listed with its status (e.g. 502) and zero tokens and credits. null: the request never ended (billed from its last checkpoint, estimated) or was recorded before this field existed',
    example: 200,
  }),
  latency_ms: z.number().int().nullable().openapi({
    description:
      'Milliseconds from admission to the end of the request (a stream: its last byte; a job: its end), measured by the worker that served it. null when status is null',
    example: 412,
  }),
  created_at: z.string(),
})

export const UsageRequestListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(UsageRequestSchema),
    has_more: z.boolean(),
    next_cursor: z
      .string()
      .nullable()
      .openapi({ description: 'Pass as cursor for the next (older) page; null on the last page' }),
  })
  .openapi('UsageRequestList')
