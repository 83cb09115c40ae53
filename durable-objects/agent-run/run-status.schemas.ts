/**
 * The agent run status record (GET /svc/agents/runs/{runId}, and the body of a successful DELETE):
 * spec 000 says "account-scoped status with bounded usage" and leaves the fields to us. "Bounded":
 * the usage so far comes with the run's caps and what remains of them.
 */
import { z } from '@hono/zod-openapi'
import { RUN_STATES, STOP_REASONS, TokenUsageSchema } from './agent-events'
import { AGENT_MODES } from './turn.schemas'

const count = z.int().min(0)

/** The run's usage so far (the `usage` events' `run` figures) and what it cost. */
export const RunUsageSchema = TokenUsageSchema.extend({
  cost_usd: z.number().min(0).openapi({ description: 'At the catalog prices; always 0 for test keys' }),
}).strict()

export const RunLimitsSchema = z
  .object({
    max_total_tokens: count.openapi({
      description: 'AGENT_RUN_MAX_TOKENS: tokens all turns together may use',
    }),
    remaining_tokens: count,
    max_cost_usd: z.number().min(0),
    remaining_cost_usd: z.number().min(0),
    max_tool_rounds_per_turn: count,
    turn_timeout_ms: count,
    approval_ttl_ms: count,
  })
  .strict()

export const RunStatusSchema = z
  .object({
    object: z.literal('agent.run'),
    id: z.uuid(),
    state: z.enum(RUN_STATES),
    session_id: z.string(),
    model: z.string(),
    mode: z.enum(AGENT_MODES),
    test_mode: z.boolean(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    last_seq: count.openapi({ description: 'seq of the last stored event; resume with cursor = this' }),
    turn_count: count,
    last_turn: z
      .object({
        turn_id: z.string(),
        state: z.enum(['running', 'completed', 'failed', 'cancelled']),
        stop_reason: z.enum(STOP_REASONS).nullable(),
        started_at: z.iso.datetime(),
        ended_at: z.iso.datetime().nullable(),
      })
      .strict()
      .nullable(),
    pending_approvals: z.array(
      z
        .object({
          approval_id: z.string(),
          call_id: z.string(),
          tool_name: z.string(),
          reason: z.string(),
          expires_at: z.iso.datetime(),
        })
        .strict(),
    ),
    pending_tool_calls: z.array(
      z
        .object({
          call_id: z.string(),
          name: z.string(),
          executor: z.enum(['client', 'mcp']),
          arguments: z.record(z.string(), z.unknown()),
        })
        .strict(),
    ),
    usage: RunUsageSchema,
    limits: RunLimitsSchema,
  })
  .strict()
  .openapi('AgentRun')
export type RunStatus = z.infer<typeof RunStatusSchema>

export const RunIdParamSchema = z.object({
  runId: z.string().openapi({ param: { name: 'runId', in: 'path' }, description: 'The run id (a UUID)' }),
})
