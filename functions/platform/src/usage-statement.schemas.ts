/**
 * zod schemas of a key's signed usage statement (GET /platform/v1/api-keys/{keyId}/usage-statement;
 * docs/plans.md, "Usage statements"): the statement that is signed, the DSSE envelope around it,
 * and the answer with the audit-log inclusion proof. One definition; the OpenAPI document is
 * generated from these.
 */
import { z } from '@hono/zod-openapi'
import { API_KEY_MODES } from '../../../shared/db/schema'
import { SPEND_PERIODS, type SpendPeriodKind } from '../../../shared/metering/spend-period'
import { InclusionProofSchema } from './audit-log.schemas'

export const USAGE_STATEMENT_PAYLOAD_TYPE = 'application/vnd.svc.usage-statement.v1+json'
export const USAGE_STATEMENT_TYPE = 'https://svc.dev/usage-statement/v1'

/**
 * The period a statement covers when the request names none. The key's own spend-limit period
 * once keys carry one (issue 29); until then the calendar month, as the plan's allowance.
 */
export function defaultStatementPeriod(): SpendPeriodKind {
  return 'month'
}

const usd = z
  .string()
  .regex(/^\d+\.\d{6}$/)
  .openapi({
    description: 'USD as an exact decimal with 6 places (the ledger counts 1e-6 USD)',
    example: '0.001250',
  })
const instant = z.string().openapi({ description: 'RFC 3339 instant (UTC, milliseconds)' })

/** `current`: the API key making the call, so a key that knows only its secret reads its own bill. */
export const CURRENT_KEY = 'current'

export const UsageStatementParamsSchema = z.object({
  keyId: z.union([z.uuid(), z.literal(CURRENT_KEY)]).openapi({
    description: 'The key’s id, or `current` for the API key making the call',
    example: CURRENT_KEY,
  }),
})

export const UsageStatementQuerySchema = z.object({
  period: z.enum(SPEND_PERIODS).optional().openapi({
    description:
      'day, week (from Monday), month (from the 1st) — UTC calendar periods — or total (everything the key ever used). Default: month.',
  }),
  at: z.iso.datetime({ offset: true }).optional().openapi({
    description:
      'An instant in the period to state (RFC 3339); default now. Picks a past period, e.g. last month.',
    example: '2026-11-15T00:00:00Z',
  }),
})

export const UsageStatementRowSchema = z
  .object({
    request_id: z.string().openapi({ description: 'The request id its client received (x-request-id)' }),
    resource: z
      .object({ type: z.enum(['agent_run', 'reasoning_job']), id: z.string() })
      .strict()
      .nullable()
      .openapi({
        description:
          'The agent run or reasoning job the request belongs to; null for a chat completion or a tool call, whose request id is what its client received',
      }),
    endpoint: z.string().openapi({ example: 'chat.completions' }),
    model: z
      .string()
      .openapi({ description: 'The model alias, or the paid tool (web_search, transcription, …)' }),
    unit: z.string().openapi({ description: 'tokens for a model; the tool’s own unit otherwise' }),
    quantity: z.int(),
    prompt_tokens: z.int(),
    completion_tokens: z.int(),
    cost_usd: usd.openapi({
      description:
        'What the request was charged: credits beyond the plan’s allowance (0 within it and in test mode)',
    }),
    status: z.int().nullable().openapi({
      description:
        'The HTTP status its client received; null when it never ended (billed from its last checkpoint)',
    }),
    estimated: z
      .boolean()
      .openapi({ description: 'Billed from the last checkpoint of a stream that was cut' }),
    created_at: instant.openapi({ description: 'When the request was settled' }),
  })
  .strict()
  .openapi('UsageStatementRow')

/** The signed statement: canonical JSON of this object is the DSSE payload. */
export const UsageStatementSchema = z
  .object({
    _type: z.literal(USAGE_STATEMENT_TYPE),
    statement_id: z.uuid(),
    generated_at: instant,
    tenant_id: z.uuid(),
    key_id: z.uuid(),
    mode: z.enum(API_KEY_MODES),
    period: z
      .object({
        kind: z.enum(SPEND_PERIODS),
        start: instant,
        end: instant.nullable().openapi({ description: 'Exclusive; null for total (it never ends)' }),
      })
      .strict(),
    rows: z.array(UsageStatementRowSchema).openapi({
      description:
        'Every request of the key settled in the period up to generated_at, oldest first, each exactly once',
    }),
    totals: z
      .object({
        requests: z.int(),
        prompt_tokens: z.int(),
        completion_tokens: z.int(),
        cost_usd: usd,
      })
      .strict(),
  })
  .strict()
  .openapi('UsageStatement')
export type UsageStatement = z.infer<typeof UsageStatementSchema>

export const UsageStatementEnvelopeSchema = z
  .object({
    payloadType: z.literal(USAGE_STATEMENT_PAYLOAD_TYPE),
    payload: z
      .string()
      .openapi({ description: 'Standard base64 of the canonical JSON statement (what is signed)' }),
    signatures: z
      .array(
        z
          .object({
            keyid: z.string().openapi({ description: 'kid of the ML-DSA-65 key in the JWKS' }),
            sig: z
              .string()
              .openapi({ description: 'Standard base64 ML-DSA-65 signature of the DSSE v1 PAE' }),
          })
          .strict(),
      )
      .min(1),
  })
  .strict()
  .openapi('UsageStatementEnvelope')

export const UsageStatementResponseSchema = z
  .object({
    object: z.literal('usage_statement'),
    statement_id: z.uuid(),
    envelope: UsageStatementEnvelopeSchema,
    statement: UsageStatementSchema.openapi({
      description: 'The envelope’s payload, decoded for convenience (what is signed is the payload bytes)',
    }),
    jwks_url: z.string().openapi({ description: 'The public JWKS holding the signing key' }),
    audit_log: InclusionProofSchema.openapi({
      description:
        'The `usage_statement.issued` entry of your workspace’s audit log (it holds the sha256 of the payload), its RFC 9162 inclusion proof and the signed checkpoint it is proved against',
    }),
  })
  .strict()
  .openapi('UsageStatementResponse')
export type UsageStatementResponse = z.infer<typeof UsageStatementResponseSchema>
