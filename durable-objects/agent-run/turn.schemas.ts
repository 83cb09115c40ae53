/**
 * The agent turn request of svc.code.v1 (POST /svc/code/v1/turns), as spec 000 defines it, plus
 * the continuation fields this plane defines for answering approvals (`approvals`) and returning
 * client tool results (`tool_results`). See docs/agent-protocol.md.
 *
 * `parseTurnRequest` is the boundary: it returns a typed request or throws one AppError 400 whose
 * `param` is the failing field path (e.g. `client_tools[3].input_schema`) and whose message names
 * the path and the rule.
 */
import { z } from 'zod'
import { MODEL_ALIASES, type ModelAlias } from '../../shared/catalog/model-aliases'
import { canonicalJson, sha256Hex } from '../../shared/crypto/digests'
import { AppError } from '../../shared/http/errors'
import { describeValue, parseWith } from '../../shared/http/validation'
import { isServerTool } from './approval-policy'
import { jsonSchemaProblems } from './client-tools'
import { FileChangeSchema, MAX_FILE_CHANGES } from './file-changes'

export const AGENT_PROTOCOL = 'svc.code.v1'
export const AGENT_MODES = ['manual', 'plan', 'edit', 'auto'] as const
export const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max', 'ultracode'] as const

export const LIMITS = {
  clientTools: 64,
  toolName: 200,
  toolDescription: 1000,
  tagsPerTool: 16,
  tag: 100,
  /** Not in the spec: identifiers are storage keys, so they are bounded (documented). */
  id: 256,
  /** Continuation answers per turn; matches the client tool limit. */
  answers: 64,
  reason: 1000,
} as const

const object = () => z.record(z.string(), z.unknown())
const identifier = () =>
  z
    .string()
    .min(1, { error: 'must be a non-empty string' })
    .max(LIMITS.id, { error: `must be at most ${LIMITS.id} characters` })

export const ClientToolSchema = z.object({
  name: z
    .string()
    .min(1, { error: 'must be a non-empty string' })
    .max(LIMITS.toolName, { error: `must be at most ${LIMITS.toolName} characters` }),
  description: z.string().max(LIMITS.toolDescription, {
    error: `must be at most ${LIMITS.toolDescription} characters`,
  }),
  input_schema: object().superRefine((schema, ctx) => {
    const problems = jsonSchemaProblems(schema)
    if (problems.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `is not a valid JSON Schema: ${problems.slice(0, 5).join('; ')}`,
      })
    }
  }),
  tags: z
    .array(z.string().max(LIMITS.tag, { error: `must be at most ${LIMITS.tag} characters` }))
    .max(LIMITS.tagsPerTool, { error: `must have at most ${LIMITS.tagsPerTool} items` }),
})
export type ClientTool = z.infer<typeof ClientToolSchema>

/** Next-turn answer to an `approval.requested` event. */
export const ApprovalAnswerSchema = z
  .object({
    approval_id: identifier(),
    decision: z.enum(['approve', 'deny']),
    reason: z.string().max(LIMITS.reason).optional(),
  })
  .strict()
export type ApprovalAnswer = z.infer<typeof ApprovalAnswerSchema>

/** Next-turn result of a client tool call the previous turn stopped on (`awaiting_client_tool`). */
export const ToolResultSchema = z
  .object({
    call_id: identifier(),
    output: z.union([z.string(), z.array(z.unknown()), object()]),
    is_error: z.boolean().default(false),
    /** What the tool changed in the caller's files; each becomes a `file.delta` event. */
    file_changes: z
      .array(FileChangeSchema)
      .max(MAX_FILE_CHANGES, { error: `must have at most ${MAX_FILE_CHANGES} items` })
      .optional(),
  })
  .strict()
export type ToolResult = z.infer<typeof ToolResultSchema>

function uniqueBy<T>(
  items: readonly T[],
  key: (item: T) => string,
  field: string,
  ctx: z.RefinementCtx,
  what: string,
) {
  const first = new Map<string, number>()
  items.forEach((item, index) => {
    const value = key(item)
    const seen = first.get(value)
    if (seen === undefined) first.set(value, index)
    else
      ctx.addIssue({
        code: 'custom',
        path: [index, field],
        message: `is used twice (also at index ${seen}); each ${what} must be unique`,
      })
  })
}

export const TurnRequestSchema = z.object({
  protocol: z.literal(AGENT_PROTOCOL),
  session_id: identifier(),
  run_id: z.uuid().optional(),
  turn_id: identifier(),
  model: z.enum(MODEL_ALIASES),
  mode: z.enum(AGENT_MODES),
  effort: z.enum(EFFORTS).optional(),
  enable_thinking: z.boolean().default(false),
  request: z.string(),
  cursor: z.int().min(0).optional(),
  workspace: object(),
  transcript: z.array(z.unknown()),
  client_tools: z
    .array(ClientToolSchema)
    .max(LIMITS.clientTools, { error: `must have at most ${LIMITS.clientTools} items` })
    .superRefine((tools, ctx) => {
      uniqueBy(tools, (t) => t.name, 'name', ctx, 'client tool name')
      tools.forEach((tool, index) => {
        if (isServerTool(tool.name)) {
          ctx.addIssue({
            code: 'custom',
            path: [index, 'name'],
            message: 'is reserved for the server tool of that name; rename the client tool',
          })
        }
      })
    })
    .optional(),
  capabilities: object(),
  approvals: z
    .array(ApprovalAnswerSchema)
    .max(LIMITS.answers)
    .superRefine((answers, ctx) => uniqueBy(answers, (a) => a.approval_id, 'approval_id', ctx, 'approval_id'))
    .optional(),
  tool_results: z
    .array(ToolResultSchema)
    .max(LIMITS.answers)
    .superRefine((results, ctx) => uniqueBy(results, (r) => r.call_id, 'call_id', ctx, 'call_id'))
    .optional(),
})
export type TurnRequest = z.infer<typeof TurnRequestSchema>
export type AgentMode = (typeof AGENT_MODES)[number]
export type Effort = (typeof EFFORTS)[number]

/** Parses and validates a turn request body; throws AppError 400 `invalid_turn_request`. */
export function parseTurnRequest(body: unknown): TurnRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError(
      400,
      'invalid_turn_request',
      `the turn request must be a JSON object (got ${describeValue(body)})`,
    )
  }
  return parseWith(TurnRequestSchema, body, { code: 'invalid_turn_request' })
}

/**
 * Rejects `enable_thinking: true` for a model without thinking mode. `supportsThinking` comes from
 * the model catalog, so this module needs no knowledge of which aliases think.
 */
export function assertThinkingSupported(
  model: ModelAlias,
  enableThinking: boolean,
  supportsThinking: (alias: ModelAlias) => boolean,
): void {
  if (!enableThinking || supportsThinking(model)) return
  const thinkers = MODEL_ALIASES.filter((alias) => supportsThinking(alias))
  const hint =
    thinkers.length > 0
      ? `choose a model that supports it (${thinkers.join(', ')}) or set enable_thinking to false`
      : 'set enable_thinking to false'
  throw new AppError(
    400,
    'thinking_not_supported',
    `model ${model} does not support thinking mode; ${hint}`,
    {
      param: 'enable_thinking',
    },
  )
}

/**
 * The identity of a turn body for reattach: SHA-256 over the canonical JSON of the parsed request
 * without `cursor` (a reconnecting client sends the same turn with a newer cursor) and with
 * `run_id` set to the run's id (`runId`, for a first post that omitted it and a reattach that
 * sends the id it learned from the events). Defaults are applied first, so omitting
 * `enable_thinking` and sending `false` hash the same.
 */
export async function turnBodyHash(
  request: TurnRequest,
  runId: string | undefined = request.run_id,
): Promise<string> {
  const { cursor: _cursor, ...identity } = request
  return `sha256:${sha256Hex(canonicalJson({ ...identity, run_id: runId }))}`
}

/**
 * Reattach rule: the same (run_id, turn_id) with the same body hash attaches to the existing turn;
 * a different body is a 409 (the client must use a new turn_id for a different request).
 */
export function assertSameTurnBody(storedHash: string, incomingHash: string, turnId: string): void {
  if (storedHash === incomingHash) return
  throw new AppError(
    409,
    'turn_id_reused',
    `turn_id ${JSON.stringify(turnId)} was already used in this run with a different request body; resend the original body to reattach, or use a new turn_id`,
    { param: 'turn_id' },
  )
}

export interface PendingWork {
  /** approval_id values of approvals that must be answered in this turn. */
  approvals: readonly string[]
  /** call_id values of client tool calls whose result must be returned in this turn. */
  toolCalls: readonly string[]
  /**
   * Ids that may be answered but need not be: approvals the turn's mode settles by itself, and
   * client calls whose approval is being granted in this same turn (the client ran them already).
   */
  optionalApprovals?: readonly string[]
  optionalToolCalls?: readonly string[]
}

function pendingList(ids: readonly string[]): string {
  return ids.length > 0 ? ` (pending: ${ids.join(', ')})` : ' (nothing is pending)'
}

/**
 * Checks a continuation turn against what the run is waiting for: every required approval and
 * client tool result must be there, and nothing unknown may be. Throws AppError 400 naming the
 * missing or unknown ids (the run's state is unchanged, so the client can resend).
 */
export function assertAnswersPending(
  pending: PendingWork,
  request: Pick<TurnRequest, 'approvals' | 'tool_results'>,
): void {
  const approvals = request.approvals ?? []
  const results = request.tool_results ?? []
  const allowedApprovals = [...pending.approvals, ...(pending.optionalApprovals ?? [])]
  const allowedResults = [...pending.toolCalls, ...(pending.optionalToolCalls ?? [])]
  const unknownApproval = approvals.findIndex((a) => !allowedApprovals.includes(a.approval_id))
  if (unknownApproval >= 0) {
    throw new AppError(
      400,
      'unknown_approval',
      `approvals[${unknownApproval}].approval_id ${JSON.stringify(approvals[unknownApproval]?.approval_id)} is not pending in this run${pendingList(allowedApprovals)}`,
      { param: `approvals[${unknownApproval}].approval_id` },
    )
  }
  const unknownResult = results.findIndex((r) => !allowedResults.includes(r.call_id))
  if (unknownResult >= 0) {
    throw new AppError(
      400,
      'unknown_tool_call',
      `tool_results[${unknownResult}].call_id ${JSON.stringify(results[unknownResult]?.call_id)} is not a pending client tool call in this run${pendingList(allowedResults)}`,
      { param: `tool_results[${unknownResult}].call_id` },
    )
  }
  const missingApprovals = pending.approvals.filter((id) => !approvals.some((a) => a.approval_id === id))
  if (missingApprovals.length > 0) {
    throw new AppError(
      400,
      'approval_answer_required',
      `the run is waiting for approval ${missingApprovals.join(', ')}; answer each in approvals[] with decision "approve" or "deny"`,
      { param: 'approvals' },
    )
  }
  const missingResults = pending.toolCalls.filter((id) => !results.some((r) => r.call_id === id))
  if (missingResults.length > 0) {
    throw new AppError(
      400,
      'tool_result_required',
      `the run is waiting for the result of client tool call ${missingResults.join(', ')}; return each in tool_results[]`,
      { param: 'tool_results' },
    )
  }
}
