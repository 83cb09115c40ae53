/** What the CLI shows people on a terminal: the events as text, and the approval question. */
import { createInterface } from 'node:readline/promises'
import type { AgentEvent } from '../../durable-objects/agent-run/agent-events.ts'

export const dim = (text: string) => (process.stderr.isTTY ? `\x1b[2m${text}\x1b[0m` : text)

export function renderEvent(event: AgentEvent, write: (text: string) => void): void {
  const d = event.data as Record<string, unknown>
  switch (event.type) {
    case 'turn.started':
      write(dim(`── turn ${event.turn_id} (${d.model}, ${d.mode} mode, run ${event.run_id})\n`))
      break
    case 'message.delta':
      write(String(d.delta))
      break
    case 'reasoning.delta':
      write(dim(String(d.delta)))
      break
    case 'tool_call.requested':
      write(
        `\n→ ${d.name} ${JSON.stringify(d.arguments)} [${d.executor}${d.approval === 'required' ? ', needs approval' : ''}]\n`,
      )
      break
    case 'tool_call.updated':
      if (d.status === 'running') break
      write(
        d.status === 'completed'
          ? dim(`  ✓ ${String(d.call_id)} completed\n`)
          : `  ✗ ${String(d.call_id)} ${d.status}: ${(d.error as { message?: string } | undefined)?.message ?? ''}\n`,
      )
      break
    case 'approval.requested':
      write(`  ? approval ${d.approval_id}: ${d.reason} (until ${d.expires_at})\n`)
      break
    case 'approval.resolved':
      write(dim(`  ${d.decision === 'approve' ? 'approved' : 'denied'} by ${d.decided_by}\n`))
      break
    case 'file.delta':
      write(`\n${String(d.diff)}`)
      break
    case 'plan.updated':
      write(
        `\nplan:\n${(d.steps as { step: string; status: string }[])
          .map(
            (s) => `  [${s.status === 'completed' ? 'x' : s.status === 'in_progress' ? '>' : ' '}] ${s.step}`,
          )
          .join('\n')}\n`,
      )
      break
    case 'progress':
      write(dim(`\n… ${d.message}\n`))
      break
    case 'usage': {
      const run = d.run as { total_tokens: number }
      write(dim(`\n[tokens: ${run.total_tokens} in this run]\n`))
      break
    }
    case 'turn.completed':
      write(dim(`── ${d.stop_reason}\n`))
      break
    case 'turn.failed':
      write(`\n── failed: ${(d.error as { message: string }).message}${d.retryable ? ' (retryable)' : ''}\n`)
      break
    case 'turn.cancelled':
      write(`\n── cancelled: ${d.reason}\n`)
      break
    default:
      break
  }
}

/** Asks on the terminal whether a call the mode wants approved may run (default: no). */
export async function askApproval(request: {
  name: string
  arguments: Record<string, unknown>
  reason: string
}): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr })
  try {
    const answer = await rl.question(
      `\nAllow ${request.name} ${JSON.stringify(request.arguments)}?\n  (${request.reason}) [y/N] `,
    )
    return /^y(es)?$/i.test(answer.trim())
  } finally {
    rl.close()
  }
}
