/**
 * The tool calls of a model round: each call's arguments are checked (the client tool's
 * input_schema, or the server tool's own schema), the mode's approval matrix decides it (run,
 * ask, refuse), and the plane's own tools run here: `web_search` (the same search as
 * POST /svc/code/v1/search) and `update_plan` (the model's task plan, shown as `plan.updated`).
 */
import { AppError, toAppError } from '../../shared/http/errors'
import { EventData } from './agent-events'
import type { ToolCallRow } from './agent-run.store'
import {
  approvalExpiresAt,
  clientToolExecutor,
  decideApproval,
  isServerTool,
  type PolicyTool,
} from './approval-policy'
import type { ClientToolRegistry } from './client-tools'
import { cut, eventOutput, outputText } from './tool-output'
import { TurnStopped, type TurnWriter } from './turn-execution'
import type { TurnSettings } from './turn-settings'
import { meteredWebSearch } from './web-search/metered-search'
import { parseWebSearchRequest } from './web-search/search.schemas'

/** The arguments of `update_plan`: the task plan, exactly as `plan.updated` carries it. */
const TaskPlanSchema = EventData['plan.updated']

type Executor = 'server' | 'client' | 'mcp'

function parseArguments(raw: string): Record<string, unknown> | null {
  try {
    const value: unknown = raw.trim() === '' ? {} : JSON.parse(raw)
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null
  } catch {
    return null
  }
}

function serverToolArguments(
  name: string,
  args: Record<string, unknown> | null,
): { ok: true; arguments: Record<string, unknown> } | { ok: false; message: string } {
  if (args === null) return { ok: false, message: `arguments for ${name} must be a JSON object` }
  if (name === 'update_plan') {
    const parsed = TaskPlanSchema.safeParse(args)
    if (parsed.success) return { ok: true, arguments: parsed.data }
    const issue = parsed.error.issues[0]
    return { ok: false, message: `update_plan ${issue?.path.join('.') || 'arguments'}: ${issue?.message}` }
  }
  try {
    const request = parseWebSearchRequest(args)
    return { ok: true, arguments: { query: request.query, count: request.count } }
  } catch (err) {
    return { ok: false, message: err instanceof AppError ? err.message : 'invalid web_search arguments' }
  }
}

/**
 * Records one call the model made and decides it: refused by the mode (denied at once), waiting
 * for an approval, or let through (a server tool then runs at once; a client tool waits for the
 * client's result). A call whose arguments fail their schema is reported `failed` and the model
 * is asked to correct it.
 */
export async function offerToolCall(
  turn: TurnWriter,
  settings: TurnSettings,
  registry: ClientToolRegistry,
  call: { readonly callId: string; readonly name: string; readonly rawArguments: string },
): Promise<void> {
  const { store, turnId } = turn
  const { callId, name, rawArguments } = call
  const parsed = parseArguments(rawArguments)
  const requested = (executor: Executor, approval: 'none' | 'required', args: Record<string, unknown>) =>
    turn.say('tool_call.requested', { call_id: callId, name, executor, approval, arguments: args })
  const reject = (executor: Executor, code: string, message: string) => {
    store.insertToolCall({ callId, turnId, name, executor, arguments: parsed ?? {}, status: 'failed' })
    requested(executor, 'none', parsed ?? {})
    turn.say('tool_call.updated', { call_id: callId, status: 'failed', error: { code, message } })
    turn.toolMessage(callId, `Error: ${message}. Correct the call and try again.`)
  }

  let executor: Executor
  let args: Record<string, unknown>
  let policyTool: PolicyTool
  if (isServerTool(name)) {
    if (name === 'web_search' && !settings.web_search) {
      return reject('server', 'tool_unavailable', 'web_search is not part of this workspace plan')
    }
    executor = 'server'
    const check = serverToolArguments(name, parsed)
    if (!check.ok) return reject('server', 'invalid_arguments', check.message)
    args = check.arguments
    policyTool = { executor: 'server', name }
  } else {
    const check = registry.validateInvocation(name, rawArguments)
    const tool = registry.get(name)
    executor = tool ? clientToolExecutor(tool) : 'client'
    if (!check.ok) return reject(executor, check.code, check.message)
    args = check.arguments
    policyTool = { executor: executor as 'client' | 'mcp', tool: check.tool }
  }

  const decision = decideApproval(settings.mode, policyTool)
  if (decision.decision === 'refuse') {
    store.insertToolCall({ callId, turnId, name, executor, arguments: args, status: 'denied' })
    requested(executor, 'none', args)
    turn.say('tool_call.updated', {
      call_id: callId,
      status: 'denied',
      error: { code: 'refused_by_mode', message: decision.reason },
    })
    turn.toolMessage(callId, `Not run: ${decision.reason}.`)
    return
  }
  if (decision.decision === 'require_approval') {
    const approvalId = store.allocateId('appr')
    const expiresAt = approvalExpiresAt(new Date(turn.host.now()), turn.host.settings.approvalTtlMs)
    store.insertToolCall({ callId, turnId, name, executor, arguments: args, status: 'awaiting_approval' })
    store.insertApproval({
      approvalId,
      callId,
      turnId,
      reason: decision.reason,
      expiresAt: Date.parse(expiresAt),
    })
    store.schedule('approval_expiry', approvalId, Date.parse(expiresAt))
    requested(executor, 'required', args)
    turn.say('approval.requested', {
      approval_id: approvalId,
      call_id: callId,
      expires_at: expiresAt,
      reason: decision.reason,
    })
    return
  }
  const status = executor === 'server' ? 'approved' : 'awaiting_result'
  store.insertToolCall({ callId, turnId, name, executor, arguments: args, status })
  requested(executor, 'none', args)
  if (executor === 'server') {
    const stored = store.toolCall(callId)
    if (stored) await runServerTool(turn, stored)
  }
}

/** Runs an approved server tool: its events, its answer to the model, its stored status. */
export async function runServerTool(turn: TurnWriter, call: ToolCallRow): Promise<void> {
  const { store, exec } = turn
  const check = serverToolArguments(call.name, call.arguments_json)
  turn.say('tool_call.updated', { call_id: call.call_id, status: 'running' })
  const finish = (outcome: { output: unknown } | { error: { code: string; message: string } }) => {
    if ('output' in outcome) {
      turn.say('tool_call.updated', {
        call_id: call.call_id,
        status: 'completed',
        output: eventOutput(outcome.output),
      })
      turn.toolMessage(call.call_id, outputText(outcome.output))
    } else {
      turn.say('tool_call.updated', { call_id: call.call_id, status: 'failed', error: outcome.error })
      turn.toolMessage(call.call_id, `Error: ${outcome.error.message}`)
    }
    store.setToolCallStatus(call.call_id, 'output' in outcome ? 'completed' : 'failed')
  }
  if (!check.ok) return finish({ error: { code: 'invalid_arguments', message: check.message } })
  if (call.name === 'update_plan') {
    const taskPlan = TaskPlanSchema.parse(check.arguments)
    turn.say('plan.updated', taskPlan)
    return finish({ output: `plan updated (${taskPlan.steps.length} steps)` })
  }
  const search = parseWebSearchRequest(check.arguments)
  turn.say('progress', { message: `Searching the web for "${cut(search.query, 200)}"`, phase: 'web_search' })
  try {
    // Metered like POST /svc/code/v1/search, for the caller that posted the turn.
    const identity = store.turn(turn.turnId)?.meter_json?.identity
    if (!identity) throw new Error(`turn ${turn.turnId} has no caller to meter its web search for`)
    const { result } = await meteredWebSearch(turn.host.workerEnv, identity, search, {
      requestId: `agent-search:${store.runId()}:${call.call_id}`,
      endpoint: 'code.turns',
      signal: exec.controller.signal,
    })
    if (exec.controller.signal.aborted) throw new TurnStopped()
    finish({ output: result })
  } catch (err) {
    if (err instanceof TurnStopped || exec.controller.signal.aborted) throw new TurnStopped()
    const error = toAppError(err)
    finish({ error: { code: error.code, message: error.message } })
  }
}
