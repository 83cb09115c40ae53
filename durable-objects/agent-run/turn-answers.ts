/**
 * What a run waits for and how a continuation turn answers it: pending approvals and client tool
 * results, approvals that expired, how each pending approval resolves in a new turn (the user's
 * answer, else the new mode's policy), and the events and conversation entries those answers
 * produce when the turn is accepted.
 */

import type { ApprovalRow, RunStore, ToolCallRow } from './agent-run.store'
import { decideApproval, type PolicyTool } from './approval-policy'
import { cut, eventOutput, outputText } from './tool-output'
import type { ApprovalAnswer, ToolResult } from './turn.schemas'
import type { TurnWriter } from './turn-execution'
import type { TurnSettings } from './turn-settings'

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

function policyToolOf(call: ToolCallRow, settings: TurnSettings): PolicyTool {
  if (call.executor === 'server') return { executor: 'server', name: call.name }
  const tool = settings.client_tools.find((t) => t.name === call.name)
  if (tool) return { executor: call.executor, tool }
  // The tool is no longer registered: without its tags it is unclassified.
  return { executor: call.executor, tool: { name: call.name, tags: [] } }
}

/** How a continuation turn resolves what is pending, and what its client must answer. */
export interface AnswerResolution {
  /** approval_id -> how it resolves in this turn. */
  decisions: Map<string, { decision: 'approve' | 'deny'; decidedBy: 'user' | 'mode_policy'; reason?: string }>
  /** What the client must answer (PendingWork for assertAnswersPending). */
  requiredApprovals: string[]
  optionalApprovals: string[]
  requiredResults: string[]
  optionalResults: string[]
}

/**
 * The user's answers first; a pending approval the user did not answer is settled by the turn's
 * mode when the matrix does not ask (auto -> approve, refuse -> deny). A client call approved in
 * this turn may carry its result in the same turn.
 */
export function resolveAnswers(
  store: RunStore,
  pending: PendingState,
  settings: TurnSettings,
  answers: readonly ApprovalAnswer[],
): AnswerResolution {
  const decisions: AnswerResolution['decisions'] = new Map()
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
    const policy = call ? decideApproval(settings.mode, policyToolOf(call, settings)) : null
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

/**
 * Step 1 of a turn (synchronous, in the request that posts it): the answers it carries — expired
 * approvals (deny by expiry), approvals (by the user or the new mode's policy), client tool
 * results with their file changes — then the user's request text.
 */
export function applyAnswers(
  turn: TurnWriter,
  settings: TurnSettings,
  resolution: AnswerResolution,
  toolResults: readonly ToolResult[],
): void {
  const { store } = turn
  for (const expired of store.unreportedExpiries()) {
    const call = store.toolCall(expired.call_id)
    const name = call?.name ?? 'the tool'
    turn.say('approval.resolved', {
      approval_id: expired.approval_id,
      call_id: expired.call_id,
      decision: 'deny',
      decided_by: 'expiry',
    })
    const message = `nobody approved ${name} before ${new Date(expired.expires_at).toISOString()}`
    turn.say('tool_call.updated', {
      call_id: expired.call_id,
      status: 'denied',
      error: { code: 'approval_expired', message },
    })
    store.markApprovalReported(expired.approval_id)
    turn.toolMessage(expired.call_id, `Not run: ${message} (the approval expired).`)
  }
  for (const [approvalId, resolved] of resolution.decisions) {
    const approval = store.approval(approvalId)
    if (!approval) continue
    const call = store.toolCall(approval.call_id)
    turn.say('approval.resolved', {
      approval_id: approvalId,
      call_id: approval.call_id,
      decision: resolved.decision,
      decided_by: resolved.decidedBy,
      ...(resolved.reason ? { reason: resolved.reason } : {}),
    })
    store.resolveApproval(
      approvalId,
      resolved.decision === 'approve' ? 'approved' : 'denied',
      resolved.decidedBy,
      true,
    )
    store.unschedule('approval_expiry', approvalId)
    if (!call) continue
    if (resolved.decision === 'approve') {
      store.setToolCallStatus(call.call_id, call.executor === 'server' ? 'approved' : 'awaiting_result')
      continue
    }
    store.setToolCallStatus(call.call_id, 'denied')
    const byUser = resolved.decidedBy === 'user'
    const message = byUser
      ? `the user denied ${call.name}${resolved.reason ? `: ${resolved.reason}` : ''}`
      : (resolved.reason ?? `${call.name} is refused in ${settings.mode} mode`)
    turn.say('tool_call.updated', {
      call_id: call.call_id,
      status: 'denied',
      error: { code: byUser ? 'denied_by_user' : 'refused_by_mode', message },
    })
    turn.toolMessage(call.call_id, `Not run: ${message}.`)
  }
  for (const result of toolResults) {
    const call = store.toolCall(result.call_id)
    if (!call) continue
    if (result.is_error) {
      turn.say('tool_call.updated', {
        call_id: call.call_id,
        status: 'failed',
        output: eventOutput(result.output),
        error: { code: 'tool_error', message: cut(outputText(result.output), 2_000) },
      })
    } else {
      turn.say('tool_call.updated', {
        call_id: call.call_id,
        status: 'completed',
        output: eventOutput(result.output),
      })
    }
    store.setToolCallStatus(call.call_id, result.is_error ? 'failed' : 'completed')
    const changes = result.file_changes ?? []
    for (const change of changes) turn.say('file.delta', { call_id: call.call_id, ...change })
    if (changes.length > 0) store.addTurnFileChanges(turn.turnId, changes)
    turn.toolMessage(
      call.call_id,
      result.is_error ? `Error: ${outputText(result.output)}` : outputText(result.output),
    )
  }
  if (settings.request.trim() !== '')
    store.addMessage(turn.turnId, { role: 'user', content: settings.request })
}
