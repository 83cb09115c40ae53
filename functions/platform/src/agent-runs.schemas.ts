/** zod schemas of the workspace's agent runs (GET /platform/v1/agent-runs and the admin cancel). */
import { z } from '@hono/zod-openapi'
import { RUN_STATES } from '../../../durable-objects/agent-run/agent-events'
import { RunStatusSchema } from '../../../durable-objects/agent-run/run-status.schemas'
import { AGENT_MODES } from '../../../durable-objects/agent-run/turn.schemas'
import { API_KEY_MODES } from '../../../shared/db/schema'

const count = z.int().min(0)

export const AgentRunStarterSchema = z
  .object({
    principal: z.string().openapi({
      description:
        'The credential that started the run and owns it: `key:<api key id>` or `sub:<token subject>`',
      example: 'key:5b0c9a7e-0f3e-4a53-9a3b-1d2e3f4a5b6c',
    }),
    api_key_id: z.uuid().nullable().openapi({ description: 'The API key, when one started it' }),
    user_id: z
      .uuid()
      .nullable()
      .openapi({ description: "The person, when it was started with a user's login" }),
  })
  .strict()
  .openapi('AgentRunStarter')

export const AgentRunSummarySchema = z
  .object({
    object: z.literal('agent_run'),
    id: z.uuid().openapi({ description: 'The run id (run_id in its events)' }),
    state: z.enum(RUN_STATES),
    mode: z.enum(API_KEY_MODES).openapi({
      description: 'test: started in test mode (a test key, or a person in test mode; never billed)',
    }),
    agent_mode: z.enum(AGENT_MODES).openapi({ description: 'The agent mode of its last turn' }),
    model: z.string(),
    started_by: AgentRunStarterSchema,
    turn_count: count,
    usage: z
      .object({
        input_tokens: count,
        output_tokens: count,
        total_tokens: count,
        cost_usd: z.number().min(0).openapi({ description: 'At the catalog prices; always 0 for test keys' }),
      })
      .strict(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .strict()
  .openapi('AgentRunSummary')
export type AgentRunSummary = z.infer<typeof AgentRunSummarySchema>

export const AgentRunListQuerySchema = z.object({
  state: z.enum(RUN_STATES).optional(),
  mode: z.enum(API_KEY_MODES).optional().openapi({
    description:
      "The list shows the caller's mode only (a key's own, a person's x-svc-mode); naming the other mode lists nothing",
  }),
  agent_mode: z.enum(AGENT_MODES).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z
    .string()
    .max(200)
    .optional()
    .openapi({ description: '`next_cursor` of the previous page; omit for the first page' }),
})

export const AgentRunListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(AgentRunSummarySchema),
    next_cursor: z.string().nullable().openapi({ description: 'null: this was the last page' }),
  })
  .openapi('AgentRunList')

export const AgentRunParamsSchema = z.object({
  runId: z.uuid().openapi({ param: { name: 'runId', in: 'path' }, description: 'The run id' }),
})

export const AgentRunPickQuerySchema = z.object({
  started_by: z.string().max(300).optional().openapi({
    description:
      "The run's `started_by.principal`: needed only when two credentials of the workspace started runs with the same run id (409 `run_id_ambiguous` otherwise)",
  }),
})

/** One run: its index row and the live status its object answers. */
export const AgentRunDetailSchema = AgentRunSummarySchema.extend({ status: RunStatusSchema })
  .strict()
  .openapi('AgentRunDetail')
