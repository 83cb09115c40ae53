/**
 * A turn's settings: what an AgentRun keeps of a turn request to run it (and to run it again
 * after a retry alarm):
 * the validated fields the model loop needs, the caller's entitlements for this turn, and the
 * workspace and capabilities as bounded text for the system prompt. The transcript seeds the
 * conversation once and the answers (`approvals`, `tool_results`) are applied when the turn is
 * accepted, so neither is kept here; neither is `cursor`, which belongs to a connection.
 */
import { z } from 'zod'
import { MODEL_ALIASES } from '../../shared/catalog/model-aliases'
import { AppError } from '../../shared/http/errors'
import { AGENT_MODES, EFFORTS, type TurnRequest } from './turn.schemas'

/** The workspace and capabilities objects reach the model as JSON text, cut at these sizes. */
export const CONTEXT_LIMITS = { workspace: 16_000, capabilities: 4_000 } as const
/** SQLite in a Durable Object holds at most 2 MB per row; a stored turn stays well below. */
export const MAX_STORED_TURN_BYTES = 1_500_000

const StoredClientToolSchema = z.object({
  name: z.string(),
  description: z.string(),
  input_schema: z.record(z.string(), z.unknown()),
  tags: z.array(z.string()),
})

export const TurnSettingsSchema = z.object({
  session_id: z.string(),
  model: z.enum(MODEL_ALIASES),
  mode: z.enum(AGENT_MODES),
  effort: z.enum(EFFORTS).nullable(),
  enable_thinking: z.boolean(),
  request: z.string(),
  client_tools: z.array(StoredClientToolSchema),
  workspace_context: z.string(),
  capabilities_context: z.string(),
  /** svc_sk_test_ credential: the simulated model and the built-in search index. */
  test_mode: z.boolean(),
  /** The caller's billing plan (resolvePlan finds it in the deployment's catalog at every model call). */
  billing_plan_id: z.string(),
  /** The billing plan includes web search: the model is offered the `web_search` tool. */
  web_search: z.boolean(),
  request_id: z.string(),
  /**
   * A spend-limited key's turn: the worst case its admission reserved (list price, credit units).
   * Rounds after the first stop (`budget_exhausted`) before one could take the turn past it.
   */
  spend_bound_units: z.int().min(1).optional(),
})
export type TurnSettings = z.infer<typeof TurnSettingsSchema>

function boundedJson(value: unknown, limit: number): string {
  const text = JSON.stringify(value)
  return text.length <= limit ? text : `${text.slice(0, limit)}… (${text.length - limit} more characters cut)`
}

export function turnSettingsOf(
  request: TurnRequest,
  caller: { testMode: boolean; billingPlanId: string; webSearch: boolean; requestId: string },
): TurnSettings {
  const settings: TurnSettings = {
    session_id: request.session_id,
    model: request.model,
    mode: request.mode,
    effort: request.effort ?? null,
    enable_thinking: request.enable_thinking,
    request: request.request,
    client_tools: request.client_tools ?? [],
    workspace_context: boundedJson(request.workspace, CONTEXT_LIMITS.workspace),
    capabilities_context: boundedJson(request.capabilities, CONTEXT_LIMITS.capabilities),
    test_mode: caller.testMode,
    billing_plan_id: caller.billingPlanId,
    web_search: caller.webSearch,
    request_id: caller.requestId,
  }
  const size = new TextEncoder().encode(JSON.stringify(settings)).byteLength
  if (size > MAX_STORED_TURN_BYTES) {
    throw new AppError(
      400,
      'turn_too_large',
      `the turn's request text and client_tools take ${size} bytes; at most ${MAX_STORED_TURN_BYTES} fit in a run. Shorten request, or send fewer or smaller client tool schemas`,
      { param: 'request' },
    )
  }
  return settings
}
