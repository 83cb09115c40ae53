/**
 * How a worker reaches a run's object: by its owner and id (the object's name), for the status
 * and the cancel. One definition for both callers: the code worker (GET|DELETE
 * /svc/agents/runs/{runId}, the owner is the caller) and the platform worker (an admin's cancel
 * from the run index, the owner is the row's). Errors the object returns as data become AppErrors.
 */
import { AppError, reviveAppError } from '../../shared/http/errors'
import type { AgentRun, RunOwner, RunReply } from './agent-run.do'
import type { RunStatus } from './run-status.schemas'

export type AgentRunNamespace = DurableObjectNamespace<AgentRun>

/**
 * The object of a run: named by its owner (tenant, mode, principal) and id, so runs of two
 * accounts, or of one person in two modes, never share one.
 */
export function runObject(namespace: AgentRunNamespace, owner: RunOwner, runId: string) {
  return namespace.get(namespace.idFromName(runObjectName(owner, runId)))
}

/**
 * `<tenant>/<principal>/<run>`, with `test/` before the principal for a person's (or a service
 * account's) test-mode run. An API key's principal already names its mode, and every other
 * principal acted live before modes were separate, so every run started before keeps its object.
 */
export function runObjectName(owner: RunOwner, runId: string): string {
  const modePart = owner.mode === 'test' && !owner.principalId.startsWith('key:') ? 'test/' : ''
  return `${owner.tenantId}/${modePart}${owner.principalId}/${runId}`
}

export function runStoreUnavailable(err: unknown): AppError {
  return new AppError(
    503,
    'run_store_unavailable',
    'The durable run store is unavailable right now, so the turn was not started. Retry in a few seconds with the same body (it reattaches if the turn did start).',
    {
      headers: { 'retry-after': '2' },
      internalMessage: `AgentRun call failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
    },
  )
}

async function answer(call: () => Promise<RunReply>): Promise<RunStatus> {
  let reply: RunReply
  try {
    reply = await call()
  } catch (err) {
    throw runStoreUnavailable(err)
  }
  if (!reply.ok) throw reviveAppError(reply.error)
  return reply.run
}

export function runStatus(namespace: AgentRunNamespace, owner: RunOwner, runId: string): Promise<RunStatus> {
  return answer(() => runObject(namespace, owner, runId).status(owner))
}

/** Running or waiting -> cancelled (404 for another owner's run, 409 when already terminal). */
export function cancelRun(
  namespace: AgentRunNamespace,
  owner: RunOwner,
  runId: string,
  reason: string,
): Promise<RunStatus> {
  return answer(() => runObject(namespace, owner, runId).cancel(owner, reason))
}
