/**
 * The agent loop of one turn, run inside its AgentRun object. It reads and writes only the run's
 * storage (agent-run.store.ts) and reports through `emit`, which persists each event before any
 * connection sees it. Everything it needs to continue is in storage, so a turn that waits for a
 * retry alarm resumes where it stopped, in a fresh instance if need be.
 *
 * A turn:
 * 1. accept (synchronous, in the request that posts the turn): `turn.started`, then the answers
 *    it carries — expired approvals (deny by expiry), approvals (by the user or the new mode's
 *    policy), client tool results (with their file changes) — and the user's request text.
 * 2. drive (asynchronous): run approved server tools; stop if the client still owes results;
 *    then model rounds: call the model (text/reasoning deltas stream as events), record its tool
 *    calls, decide each by the mode's approval matrix, run server tools at once, and stop when
 *    the model answers without tools, when approvals or client results are needed, or when a
 *    budget runs out. A transient provider failure before any delta schedules a retry alarm.
 * 3. end: `turn.diff` (when files changed), `usage`, exactly one terminal event, the run state.
 */

import { z } from 'zod'
import { modelEntry } from '../../shared/catalog/model-catalog'
import { AppError, toAppError } from '../../shared/http/errors'
import { checkContextLimit, resolvePlan, upgradeMessage } from '../../shared/plans'
import { countPromptTokens, countTextTokens } from '../../shared/providers'
import type {
  ChatFunctionTool,
  NormalizedUsage,
  ProviderChatMessage,
  ProviderChatRequest,
} from '../../shared/providers/chat-wire'
import { parseWebSearchRequest } from '../../shared/search/search.schemas'
import { runWebSearch, searchChainFromEnv } from '../../shared/search/search-chain'
import {
  type AgentEventType,
  addUsage,
  type EventDataOf,
  nextRunState,
  PLAN_STEP_STATUSES,
  type RunState,
  type TokenUsage,
} from './agent-events'
import type { AgentRunEnv } from './agent-run.context'
import type { ApprovalRow, RunStore, ToolCallRow, TurnRow } from './agent-run.store'
import { type AgentSettings, retryDelayMs, turnOutputBudget } from './agent-settings'
import {
  approvalExpiresAt,
  clientToolExecutor,
  decideApproval,
  isServerTool,
  type PolicyTool,
  SERVER_TOOLS,
} from './approval-policy'
import { ClientToolRegistry } from './client-tools'
import type { FileChange } from './file-changes'
import { runModelRound } from './model-round'
import type { ApprovalAnswer, ToolResult } from './turn.schemas'
import type { TurnPlan } from './turn-settings'

export type DurableEventType = Exclude<AgentEventType, 'heartbeat'>

/** What the loop needs from its object. */
export interface LoopHost {
  readonly store: RunStore
  readonly settings: AgentSettings
  readonly workerEnv: AgentRunEnv
  now(): number
  /** Persists the event (next seq), then writes it to every connection following the run. */
  emit<T extends DurableEventType>(turnId: string, type: T, data: EventDataOf<T>): void
  /** Called once when a turn has written its terminal event (metering settles here). */
  turnEnded(turnId: string): void
}

/** Thrown inside the loop when its turn was stopped (cancel, timeout) while it awaited. */
export class TurnStopped extends Error {
  constructor() {
    super('the turn was stopped')
    this.name = 'TurnStopped'
  }
}

/** Tool output is cut to this many characters for the model and in events. */
export const MAX_TOOL_OUTPUT_CHARS = 100_000
/** Messages taken from a first turn's transcript, and their size. */
const TRANSCRIPT_LIMITS = { messages: 200, chars: 100_000 }

export function tokenUsageOf(usage: NormalizedUsage): TokenUsage {
  return {
    input_tokens: usage.promptTokens,
    output_tokens: usage.completionTokens,
    reasoning_tokens: usage.reasoningTokens,
    cached_input_tokens: usage.cachedTokens,
    total_tokens: usage.totalTokens,
  }
}

/** USD cost of one model call at the catalog's per-token prices; test mode is never billed. */
export function costOf(plan: Pick<TurnPlan, 'model' | 'test_mode'>, usage: TokenUsage): number {
  if (plan.test_mode) return 0
  const price = modelEntry(plan.model).pricing
  const cached = Math.min(usage.cached_input_tokens, usage.input_tokens)
  return (
    (usage.input_tokens - cached) * Number(price.prompt) +
    cached * Number(price.input_cache_read) +
    usage.output_tokens * Number(price.completion)
  )
}

function cut(text: string, limit = MAX_TOOL_OUTPUT_CHARS): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}… (${text.length - limit} more characters cut)`
}

function outputText(output: unknown): string {
  return cut(typeof output === 'string' ? output : JSON.stringify(output))
}

/** An output as it goes into an event: as sent, unless it is too big to store. */
function eventOutput(output: unknown): unknown {
  const text = JSON.stringify(output)
  return text.length <= MAX_TOOL_OUTPUT_CHARS ? output : cut(text)
}

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

const PlanUpdateSchema = z
  .object({
    explanation: z.string().optional(),
    steps: z
      .array(z.object({ step: z.string().min(1), status: z.enum(PLAN_STEP_STATUSES) }).strict())
      .max(100),
  })
  .strict()

const SERVER_TOOL_SCHEMAS: Record<keyof typeof SERVER_TOOLS, Record<string, unknown>> = {
  web_search: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'What to search for' },
      count: { type: 'integer', minimum: 1, maximum: 10, description: 'Results wanted (default 5)' },
    },
    required: ['query'],
    additionalProperties: false,
  },
  update_plan: {
    type: 'object',
    properties: {
      explanation: { type: 'string' },
      steps: {
        type: 'array',
        items: {
          type: 'object',
          properties: { step: { type: 'string' }, status: { enum: [...PLAN_STEP_STATUSES] } },
          required: ['step', 'status'],
          additionalProperties: false,
        },
      },
    },
    required: ['steps'],
    additionalProperties: false,
  },
}

const MODE_PROMPT: Record<TurnPlan['mode'], string> = {
  manual: 'Manual mode: the user approves every tool call before it runs.',
  plan: 'Plan mode: only read-only tools run; do not try to edit files or run commands, propose a plan instead.',
  edit: 'Edit mode: read-only tools run at once; edits and commands wait for the user to approve them.',
  auto: 'Auto mode: tools run without asking, except destructive ones.',
}

export function systemPrompt(plan: TurnPlan): string {
  return [
    "You are svc's coding agent. You work in the user's workspace through tools.",
    MODE_PROMPT[plan.mode],
    "Client tools run on the user's machine. When a call is denied or refused, do not repeat it: say why you needed it and continue without it.",
    'For work of several steps, call update_plan with the whole list of steps and keep it current.',
    `Workspace: ${plan.workspace_context}`,
    `Client capabilities: ${plan.capabilities_context}`,
  ].join('\n')
}

export function toolsFor(plan: TurnPlan): ChatFunctionTool[] {
  const tools: ChatFunctionTool[] = plan.client_tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.input_schema },
  }))
  for (const name of Object.keys(SERVER_TOOLS) as (keyof typeof SERVER_TOOLS)[]) {
    if (name === 'web_search' && !plan.web_search) continue
    tools.push({
      type: 'function',
      function: { name, description: SERVER_TOOLS[name].description, parameters: SERVER_TOOL_SCHEMAS[name] },
    })
  }
  return tools
}

/** Chat messages from a first turn's free-form transcript: `{role, content: string}` entries only. */
export function transcriptMessages(transcript: readonly unknown[]): ProviderChatMessage[] {
  const messages: ProviderChatMessage[] = []
  for (const entry of transcript.slice(-TRANSCRIPT_LIMITS.messages)) {
    if (entry === null || typeof entry !== 'object') continue
    const { role, content } = entry as { role?: unknown; content?: unknown }
    if ((role === 'user' || role === 'assistant' || role === 'system') && typeof content === 'string') {
      messages.push({ role, content: cut(content, TRANSCRIPT_LIMITS.chars) })
    }
  }
  return messages
}

// ---------------------------------------------------------------------------------------------
// Pending work and answers

export interface PendingState {
  /** Approvals still waiting for an answer (expired ones excluded). */
  approvals: ApprovalRow[]
  /** Client calls whose result the client owes. */
  awaitingResults: ToolCallRow[]
  /** Approvals that expired and whose resolution the next turn reports. */
  expired: ApprovalRow[]
}

/** What the run waits for at `now` (reads only: an approval past its expiry counts as expired). */
export function pendingState(store: RunStore, now: number): PendingState {
  const open = store.approvalsIn('pending')
  return {
    approvals: open.filter((a) => a.expires_at > now),
    awaitingResults: store.toolCallsIn('awaiting_result'),
    expired: [...store.unreportedExpiries(), ...open.filter((a) => a.expires_at <= now)],
  }
}

/**
 * Moves approvals past their expiry (or just `onlyId`, whose expiry alarm fired) out of `pending`;
 * their events come at the start of the next turn. Idempotent.
 */
export function expireApprovals(store: RunStore, now: number, onlyId?: string): void {
  for (const approval of store.approvalsIn('pending')) {
    if (onlyId !== undefined && approval.approval_id !== onlyId) continue
    if (approval.expires_at <= now) {
      store.resolveApproval(approval.approval_id, 'expired', 'expiry', false)
      store.setToolCallStatus(approval.call_id, 'denied')
    }
  }
}

function policyToolOf(call: ToolCallRow, plan: TurnPlan): PolicyTool {
  if (call.executor === 'server') return { executor: 'server', name: call.name }
  const tool = plan.client_tools.find((t) => t.name === call.name)
  if (tool) return { executor: call.executor, tool }
  // The tool is no longer registered: without its tags it is unclassified.
  return { executor: call.executor, tool: { name: call.name, tags: [] } }
}

export interface AnswerPlan {
  /** approval_id -> how it resolves in this turn. */
  decisions: Map<string, { decision: 'approve' | 'deny'; decidedBy: 'user' | 'mode_policy'; reason?: string }>
  /** What the client must answer (PendingWork for assertAnswersPending). */
  requiredApprovals: string[]
  optionalApprovals: string[]
  requiredResults: string[]
  optionalResults: string[]
}

/**
 * How a continuation turn resolves what is pending: the user's answers first; a pending approval
 * the user did not answer is settled by the turn's mode when the matrix does not ask (auto -> approve,
 * refuse -> deny). A client call approved in this turn may carry its result in the same turn.
 */
export function planAnswers(
  store: RunStore,
  pending: PendingState,
  plan: TurnPlan,
  answers: readonly ApprovalAnswer[],
): AnswerPlan {
  const decisions: AnswerPlan['decisions'] = new Map()
  const requiredApprovals: string[] = []
  const optionalApprovals: string[] = []
  const optionalResults: string[] = []
  for (const approval of pending.approvals) {
    const call = store.toolCall(approval.call_id)
    const answer = answers.find((a) => a.approval_id === approval.approval_id)
    if (answer) {
      decisions.set(approval.approval_id, {
        decision: answer.decision,
        decidedBy: 'user',
        ...(answer.reason ? { reason: answer.reason } : {}),
      })
    }
    const policy = call ? decideApproval(plan.mode, policyToolOf(call, plan)) : null
    if (policy && policy.decision !== 'require_approval') {
      optionalApprovals.push(approval.approval_id)
      if (!answer) {
        decisions.set(approval.approval_id, {
          decision: policy.decision === 'auto_approve' ? 'approve' : 'deny',
          decidedBy: 'mode_policy',
          reason: policy.reason,
        })
      }
    } else {
      requiredApprovals.push(approval.approval_id)
    }
    const resolved = decisions.get(approval.approval_id)
    const approvedClientCall = call && call.executor !== 'server' && resolved?.decision !== 'deny'
    if (approvedClientCall) optionalResults.push(approval.call_id)
  }
  return {
    decisions,
    requiredApprovals,
    optionalApprovals,
    requiredResults: pending.awaitingResults.map((c) => c.call_id),
    optionalResults,
  }
}

// ---------------------------------------------------------------------------------------------
// The loop

export interface TurnExecution {
  readonly turnId: string
  readonly controller: AbortController
  /**
   * The model call in progress: its prompt size and the text streamed so far. When the turn is
   * stopped mid-call (cancel, timeout), the provider's usage report never arrives, so what was
   * used is estimated from this (see `chargeStoppedCall`).
   */
  inFlight?: { promptTokens: number; text: string; provider: string } | null
}

export class TurnLoop {
  constructor(private readonly host: LoopHost) {}

  private get store(): RunStore {
    return this.host.store
  }

  private say<T extends DurableEventType>(exec: TurnExecution, type: T, data: EventDataOf<T>): void {
    if (exec.controller.signal.aborted) throw new TurnStopped()
    this.host.emit(exec.turnId, type, data)
  }

  private toolMessage(turnId: string, callId: string, content: string): void {
    this.store.addMessage(turnId, { role: 'tool', tool_call_id: callId, content })
  }

  /** Step 1 of a turn: what the request answers, and the user's text (synchronous). */
  applyAnswers(
    exec: TurnExecution,
    plan: TurnPlan,
    answerPlan: AnswerPlan,
    toolResults: readonly ToolResult[],
  ): void {
    const { store } = this
    for (const expired of store.unreportedExpiries()) {
      const call = store.toolCall(expired.call_id)
      const name = call?.name ?? 'the tool'
      this.say(exec, 'approval.resolved', {
        approval_id: expired.approval_id,
        call_id: expired.call_id,
        decision: 'deny',
        decided_by: 'expiry',
      })
      const message = `nobody approved ${name} before ${new Date(expired.expires_at).toISOString()}`
      this.say(exec, 'tool_call.updated', {
        call_id: expired.call_id,
        status: 'denied',
        error: { code: 'approval_expired', message },
      })
      store.markApprovalReported(expired.approval_id)
      this.toolMessage(exec.turnId, expired.call_id, `Not run: ${message} (the approval expired).`)
    }
    for (const [approvalId, resolution] of answerPlan.decisions) {
      const approval = store.approval(approvalId)
      if (!approval) continue
      const call = store.toolCall(approval.call_id)
      this.say(exec, 'approval.resolved', {
        approval_id: approvalId,
        call_id: approval.call_id,
        decision: resolution.decision,
        decided_by: resolution.decidedBy,
        ...(resolution.reason ? { reason: resolution.reason } : {}),
      })
      store.resolveApproval(
        approvalId,
        resolution.decision === 'approve' ? 'approved' : 'denied',
        resolution.decidedBy,
        true,
      )
      store.unschedule('approval_expiry', approvalId)
      if (!call) continue
      if (resolution.decision === 'approve') {
        store.setToolCallStatus(call.call_id, call.executor === 'server' ? 'approved' : 'awaiting_result')
        continue
      }
      store.setToolCallStatus(call.call_id, 'denied')
      const byUser = resolution.decidedBy === 'user'
      const message = byUser
        ? `the user denied ${call.name}${resolution.reason ? `: ${resolution.reason}` : ''}`
        : (resolution.reason ?? `${call.name} is refused in ${plan.mode} mode`)
      this.say(exec, 'tool_call.updated', {
        call_id: call.call_id,
        status: 'denied',
        error: { code: byUser ? 'denied_by_user' : 'refused_by_mode', message },
      })
      this.toolMessage(exec.turnId, call.call_id, `Not run: ${message}.`)
    }
    for (const result of toolResults) {
      const call = store.toolCall(result.call_id)
      if (!call) continue
      if (result.is_error) {
        this.say(exec, 'tool_call.updated', {
          call_id: call.call_id,
          status: 'failed',
          output: eventOutput(result.output),
          error: { code: 'tool_error', message: cut(outputText(result.output), 2_000) },
        })
      } else {
        this.say(exec, 'tool_call.updated', {
          call_id: call.call_id,
          status: 'completed',
          output: eventOutput(result.output),
        })
      }
      store.setToolCallStatus(call.call_id, result.is_error ? 'failed' : 'completed')
      const changes = result.file_changes ?? []
      for (const change of changes) this.say(exec, 'file.delta', { call_id: call.call_id, ...change })
      if (changes.length > 0) store.addTurnFileChanges(exec.turnId, changes)
      this.toolMessage(
        exec.turnId,
        call.call_id,
        result.is_error ? `Error: ${outputText(result.output)}` : outputText(result.output),
      )
    }
    if (plan.request.trim() !== '') store.addMessage(exec.turnId, { role: 'user', content: plan.request })
  }

  /**
   * Steps 2 and 3: runs until the turn ends or waits for a retry alarm. Never throws: a failure
   * becomes `turn.failed`; a stop (cancel, timeout) has already written its own terminal event.
   */
  async drive(exec: TurnExecution): Promise<void> {
    if (exec.controller.signal.aborted) return
    try {
      await this.driveRounds(exec)
    } catch (err) {
      if (err instanceof TurnStopped || exec.controller.signal.aborted) return
      const error = toAppError(err)
      console.error(
        JSON.stringify({
          level: 'error',
          turn_id: exec.turnId,
          code: error.code,
          detail: error.internalMessage ?? error.message,
        }),
      )
      this.fail(exec.turnId, { code: error.code, message: error.message }, error.status >= 500)
    }
  }

  private turnRow(turnId: string): TurnRow {
    const turn = this.store.turn(turnId)
    if (!turn) throw new Error(`turn ${turnId} is not stored`)
    return turn
  }

  private async driveRounds(exec: TurnExecution): Promise<void> {
    const { store, host } = this
    const turn = this.turnRow(exec.turnId)
    const plan = turn.plan_json
    for (const call of store.toolCallsIn('approved')) await this.runServerTool(exec, plan, call)
    if (this.stopIfWaiting(exec)) return

    const budget = turnOutputBudget(plan.effort ?? undefined, modelEntry(plan.model).max_output_length)
    const registry = new ClientToolRegistry(plan.client_tools)
    const tools = toolsFor(plan)
    for (;;) {
      const current = this.turnRow(exec.turnId)
      const run = store.run()
      if (!run) throw new Error('the run row is missing')
      if (current.rounds >= host.settings.maxToolRounds) return this.complete(exec.turnId, 'max_tool_rounds')
      const remaining = budget - current.usage_json.output_tokens
      if (remaining <= 0) return this.complete(exec.turnId, 'max_tokens')
      if (
        run.usage_json.total_tokens >= host.settings.runMaxTokens ||
        run.cost_usd >= host.settings.runMaxCostUsd
      ) {
        return this.complete(exec.turnId, 'budget_exhausted')
      }

      const messages: ProviderChatMessage[] = [
        { role: 'system', content: systemPrompt(plan) },
        ...store.conversation(),
      ]
      const promptTokens = countPromptTokens(messages, tools)
      // Resolved for every call: the deployment's catalog decides, as it does for chat.
      const { plan: billingPlan, catalog } = resolvePlan(host.workerEnv, plan.plan_id)
      const decision = checkContextLimit(
        billingPlan,
        { model: plan.model, promptTokens, maxOutputTokens: remaining },
        { catalog },
      )
      if (decision) {
        return this.fail(
          exec.turnId,
          { code: decision.reason, message: upgradeMessage(decision, catalog) },
          false,
        )
      }
      const request: ProviderChatRequest = {
        model: plan.model,
        messages,
        stream: true,
        stream_options: { include_usage: true },
        tools,
        max_tokens: remaining,
        ...(plan.enable_thinking ? { reasoning_effort: plan.effort ?? 'medium' } : {}),
      }
      let messageId: string | null = null
      let reasoningId: string | null = null
      let streamed = false
      let output: Awaited<ReturnType<typeof runModelRound>>
      exec.inFlight = { promptTokens, text: '', provider: plan.test_mode ? 'svc-test-mode' : 'unknown' }
      try {
        output = await runModelRound({
          request,
          alias: plan.model,
          testMode: plan.test_mode,
          env: host.workerEnv,
          signal: exec.controller.signal,
          requestId: plan.request_id,
          onText: (delta) => {
            streamed = true
            if (exec.inFlight) exec.inFlight.text += delta
            messageId ??= store.allocateId('msg')
            this.say(exec, 'message.delta', { message_id: messageId, delta })
          },
          onReasoning: (delta) => {
            streamed = true
            if (exec.inFlight) exec.inFlight.text += delta
            reasoningId ??= store.allocateId('rs')
            this.say(exec, 'reasoning.delta', { reasoning_id: reasoningId, delta })
          },
        })
      } catch (err) {
        if (err instanceof TurnStopped || exec.controller.signal.aborted) throw new TurnStopped()
        exec.inFlight = null
        const error = toAppError(err)
        if (!streamed && isTransient(error)) return this.scheduleRetry(exec, current, error)
        return this.fail(exec.turnId, { code: error.code, message: error.message }, isTransient(error))
      }

      exec.inFlight = null
      const usage = tokenUsageOf(output.usage)
      store.addRunUsage(usage, costOf(plan, usage), host.now())
      store.setTurnProgress(exec.turnId, {
        rounds: current.rounds + 1,
        attempt: 1,
        usage: addUsage(current.usage_json, usage),
        provider: output.providerId,
        estimated: output.usageEstimated,
      })
      if (exec.controller.signal.aborted) throw new TurnStopped()

      const calls = output.status === 'completed' ? output.toolCalls : []
      const callIds = calls.map(() => store.allocateId('call'))
      store.addMessage(exec.turnId, {
        role: 'assistant',
        content: output.text === '' ? null : output.text,
        ...(calls.length > 0
          ? {
              tool_calls: calls.map((call, i) => ({
                id: callIds[i]!,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
      })
      if (output.status === 'cut') {
        return this.fail(
          exec.turnId,
          output.error ?? { code: 'upstream_stream_interrupted', message: 'the model stream broke off' },
          true,
        )
      }
      if (calls.length === 0) {
        if (output.refusal !== '' || output.finishReason === 'content_filter') {
          if (output.refusal !== '') {
            messageId ??= store.allocateId('msg')
            this.say(exec, 'message.delta', { message_id: messageId, delta: output.refusal })
          }
          return this.complete(exec.turnId, 'refusal')
        }
        return this.complete(exec.turnId, output.finishReason === 'length' ? 'max_tokens' : 'end_turn')
      }
      this.emitUsage(exec.turnId)
      for (const [i, call] of calls.entries()) {
        await this.offerToolCall(exec, plan, registry, callIds[i]!, call.name, call.arguments)
      }
      if (this.stopIfWaiting(exec)) return
    }
  }

  /** Ends the turn when approvals or client results are outstanding; true when it did. */
  private stopIfWaiting(exec: TurnExecution): boolean {
    const pending = pendingState(this.store, this.host.now())
    if (pending.approvals.length === 0 && pending.awaitingResults.length === 0) return false
    const pendingToolCalls = pending.awaitingResults.map((c) => c.call_id)
    if (pending.approvals.length > 0) {
      this.complete(exec.turnId, 'awaiting_approval', {
        pending_approvals: pending.approvals.map((a) => a.approval_id),
        ...(pendingToolCalls.length > 0 ? { pending_tool_calls: pendingToolCalls } : {}),
      })
    } else {
      this.complete(exec.turnId, 'awaiting_client_tool', { pending_tool_calls: pendingToolCalls })
    }
    return true
  }

  private async offerToolCall(
    exec: TurnExecution,
    plan: TurnPlan,
    registry: ClientToolRegistry,
    callId: string,
    name: string,
    rawArguments: string,
  ): Promise<void> {
    const { store } = this
    const parsed = parseArguments(rawArguments)
    const reject = (executor: 'server' | 'client' | 'mcp', code: string, message: string) => {
      store.insertToolCall({
        callId,
        turnId: exec.turnId,
        name,
        executor,
        arguments: parsed ?? {},
        status: 'failed',
      })
      this.say(exec, 'tool_call.requested', {
        call_id: callId,
        name,
        executor,
        approval: 'none',
        arguments: parsed ?? {},
      })
      this.say(exec, 'tool_call.updated', { call_id: callId, status: 'failed', error: { code, message } })
      this.toolMessage(exec.turnId, callId, `Error: ${message}. Correct the call and try again.`)
    }

    let executor: 'server' | 'client' | 'mcp'
    let args: Record<string, unknown>
    let policyTool: PolicyTool
    const serverTool = isServerTool(name)
    if (serverTool && name === 'web_search' && !plan.web_search) {
      return reject('server', 'tool_unavailable', 'web_search is not part of this workspace plan')
    }
    if (serverTool) {
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

    const decision = decideApproval(plan.mode, policyTool)
    if (decision.decision === 'refuse') {
      store.insertToolCall({ callId, turnId: exec.turnId, name, executor, arguments: args, status: 'denied' })
      this.say(exec, 'tool_call.requested', {
        call_id: callId,
        name,
        executor,
        approval: 'none',
        arguments: args,
      })
      this.say(exec, 'tool_call.updated', {
        call_id: callId,
        status: 'denied',
        error: { code: 'refused_by_mode', message: decision.reason },
      })
      this.toolMessage(exec.turnId, callId, `Not run: ${decision.reason}.`)
      return
    }
    if (decision.decision === 'require_approval') {
      const approvalId = store.allocateId('appr')
      const expiresAt = approvalExpiresAt(new Date(this.host.now()), this.host.settings.approvalTtlMs)
      store.insertToolCall({
        callId,
        turnId: exec.turnId,
        name,
        executor,
        arguments: args,
        status: 'awaiting_approval',
      })
      store.insertApproval({
        approvalId,
        callId,
        turnId: exec.turnId,
        reason: decision.reason,
        expiresAt: Date.parse(expiresAt),
      })
      store.schedule('approval_expiry', approvalId, Date.parse(expiresAt))
      this.say(exec, 'tool_call.requested', {
        call_id: callId,
        name,
        executor,
        approval: 'required',
        arguments: args,
      })
      this.say(exec, 'approval.requested', {
        approval_id: approvalId,
        call_id: callId,
        expires_at: expiresAt,
        reason: decision.reason,
      })
      return
    }
    const status = executor === 'server' ? 'approved' : 'awaiting_result'
    store.insertToolCall({ callId, turnId: exec.turnId, name, executor, arguments: args, status })
    this.say(exec, 'tool_call.requested', {
      call_id: callId,
      name,
      executor,
      approval: 'none',
      arguments: args,
    })
    if (executor === 'server') {
      const call = store.toolCall(callId)
      if (call) await this.runServerTool(exec, plan, call)
    }
  }

  private async runServerTool(exec: TurnExecution, plan: TurnPlan, call: ToolCallRow): Promise<void> {
    const { store } = this
    const check = serverToolArguments(call.name, call.arguments_json)
    this.say(exec, 'tool_call.updated', { call_id: call.call_id, status: 'running' })
    const finish = (outcome: { output: unknown } | { error: { code: string; message: string } }) => {
      if ('output' in outcome) {
        this.say(exec, 'tool_call.updated', {
          call_id: call.call_id,
          status: 'completed',
          output: eventOutput(outcome.output),
        })
        this.toolMessage(exec.turnId, call.call_id, outputText(outcome.output))
      } else {
        this.say(exec, 'tool_call.updated', { call_id: call.call_id, status: 'failed', error: outcome.error })
        this.toolMessage(exec.turnId, call.call_id, `Error: ${outcome.error.message}`)
      }
      store.setToolCallStatus(call.call_id, 'output' in outcome ? 'completed' : 'failed')
    }
    if (!check.ok) return finish({ error: { code: 'invalid_arguments', message: check.message } })
    if (call.name === 'update_plan') {
      const update = PlanUpdateSchema.parse(check.arguments)
      this.say(exec, 'plan.updated', update)
      return finish({ output: `plan updated (${update.steps.length} steps)` })
    }
    const search = parseWebSearchRequest(check.arguments)
    this.say(exec, 'progress', {
      message: `Searching the web for "${cut(search.query, 200)}"`,
      phase: 'web_search',
    })
    try {
      const chain = searchChainFromEnv(this.host.workerEnv, { testMode: plan.test_mode })
      const result = await runWebSearch(search, chain, { signal: exec.controller.signal })
      if (exec.controller.signal.aborted) throw new TurnStopped()
      finish({ output: result })
    } catch (err) {
      if (err instanceof TurnStopped || exec.controller.signal.aborted) throw new TurnStopped()
      const error = toAppError(err)
      finish({ error: { code: error.code, message: error.message } })
    }
  }

  private scheduleRetry(exec: TurnExecution, turn: TurnRow, error: AppError): void {
    const { store, host } = this
    const attempts = host.settings.modelAttempts
    if (turn.attempt >= attempts) {
      this.fail(
        exec.turnId,
        { code: error.code, message: `${error.message} (gave up after ${attempts} attempts)` },
        true,
      )
      return
    }
    const next = turn.attempt + 1
    const delay = retryDelayMs(next, host.settings)
    store.setTurnProgress(exec.turnId, { attempt: next })
    store.schedule('model_retry', exec.turnId, host.now() + delay)
    this.say(exec, 'progress', {
      message: `${error.message}; retrying in ${Math.ceil(delay / 1000)} s (attempt ${next} of ${attempts})`,
      phase: 'retry',
    })
  }

  private emitUsage(turnId: string): void {
    const run = this.store.run()
    const turn = this.store.turn(turnId)
    if (!run || !turn) return
    this.host.emit(turnId, 'usage', { turn: turn.usage_json, run: run.usage_json })
  }

  private finish(
    turnId: string,
    type: 'turn.completed' | 'turn.failed' | 'turn.cancelled',
    data: EventDataOf<'turn.completed'> | EventDataOf<'turn.failed'> | EventDataOf<'turn.cancelled'>,
    stopReason: string | null,
  ): void {
    const { store, host } = this
    const run = store.run()
    const turn = store.turn(turnId)
    if (!run || !turn || turn.state !== 'running') return
    if (turn.file_changes_json.length > 0) {
      host.emit(turnId, 'turn.diff', turnDiff(turn.file_changes_json))
    }
    // The final usage of the turn, unless the last event already is exactly that.
    if (store.lastEventType() !== 'usage') this.emitUsage(turnId)
    const next: RunState = nextRunState(run.state, { kind: 'event', event: { type, data } })
    host.emit(turnId, type, data as never)
    const seq = store.lastSeq()
    store.endTurn(
      turnId,
      type === 'turn.completed' ? 'completed' : type === 'turn.failed' ? 'failed' : 'cancelled',
      stopReason,
      seq,
      host.now(),
    )
    store.setRunState(next, host.now(), null)
    store.unschedule('turn_timeout', turnId)
    store.unschedule('model_retry', turnId)
    store.unschedule('turn_interrupted', turnId)
    host.turnEnded(turnId)
  }

  /**
   * Counts a model call that was stopped before it answered (cancel, timeout): prompt tokens as
   * sent, output tokens from the text streamed so far, both estimated with the tokenizer. Call it
   * before the terminal event, so the turn's last `usage` includes it.
   */
  chargeStoppedCall(exec: TurnExecution): void {
    const inFlight = exec.inFlight
    exec.inFlight = null
    const turn = this.store.turn(exec.turnId)
    if (!inFlight || !turn || turn.state !== 'running') return
    const output = countTextTokens(inFlight.text)
    const usage: TokenUsage = {
      input_tokens: inFlight.promptTokens,
      output_tokens: output,
      reasoning_tokens: 0,
      cached_input_tokens: 0,
      total_tokens: inFlight.promptTokens + output,
    }
    this.store.addRunUsage(usage, costOf(turn.plan_json, usage), this.host.now())
    this.store.setTurnProgress(exec.turnId, {
      usage: addUsage(turn.usage_json, usage),
      estimated: true,
      ...(turn.provider ? {} : { provider: inFlight.provider }),
    })
  }

  complete(
    turnId: string,
    stopReason: EventDataOf<'turn.completed'>['stop_reason'],
    pending: Omit<EventDataOf<'turn.completed'>, 'stop_reason'> = {},
  ): void {
    this.finish(turnId, 'turn.completed', { stop_reason: stopReason, ...pending }, stopReason)
  }

  fail(turnId: string, error: { code: string; message: string }, retryable: boolean): void {
    this.finish(turnId, 'turn.failed', { error, retryable }, null)
  }

  cancel(turnId: string, reason: string, by: 'user' | 'system'): void {
    this.finish(turnId, 'turn.cancelled', { reason, cancelled_by: by }, null)
  }
}

/** Failures worth another attempt later: every provider failed, overloaded or rate limited. */
export function isTransient(error: AppError): boolean {
  if (error.code === 'provider_not_configured' || error.code === 'provider_config_invalid') return false
  return error.status === 502 || error.status === 503 || error.status === 504 || error.status === 429
}

function serverToolArguments(
  name: string,
  args: Record<string, unknown> | null,
): { ok: true; arguments: Record<string, unknown> } | { ok: false; message: string } {
  if (args === null) return { ok: false, message: `arguments for ${name} must be a JSON object` }
  if (name === 'update_plan') {
    const parsed = PlanUpdateSchema.safeParse(args)
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

export function turnDiff(changes: readonly FileChange[]): EventDataOf<'turn.diff'> {
  return {
    diff: changes.map((c) => (c.diff === '' || c.diff.endsWith('\n') ? c.diff : `${c.diff}\n`)).join(''),
    files: changes.map((c) => ({
      path: c.path,
      op: c.op,
      ...(c.from_path ? { from_path: c.from_path } : {}),
    })),
  }
}
