/**
 * The Postgres run index (`agent_runs`): one row per run with what a list shows (who started it,
 * test or live, agent mode, model, state, turns, usage), written by the run's object after each change (the due work
 * `index_sync`), read by the platform worker for GET /platform/v1/agent-runs. A write carries the
 * run's `index_version` and never replaces a newer one, so retries and reordered writes are harmless.
 */
import { sql } from 'drizzle-orm'
import type { Drizzle } from '../../shared/db/client'
import { agentRuns } from '../../shared/db/schema'
import { UUID } from '../../shared/http/uuid'
import type { RunRow } from './agent-run.store'

/** The API key and the person behind a run owner's principal id (`key:<id>`, `sub:user:<id>`). */
export function startedBy(principal: string): { apiKeyId: string | null; userId: string | null } {
  const keyId = principal.startsWith('key:') ? principal.slice(4) : ''
  const userId = principal.startsWith('sub:user:') ? principal.slice(9) : ''
  return { apiKeyId: UUID.test(keyId) ? keyId : null, userId: UUID.test(userId) ? userId : null }
}

export async function writeRunIndex(db: Drizzle, run: RunRow, turnCount: number): Promise<void> {
  const row = {
    tenantId: run.tenant_id,
    runId: run.run_id,
    principal: run.principal_id,
    ...startedBy(run.principal_id),
    mode: run.test_mode ? ('test' as const) : ('live' as const),
    agentMode: run.mode,
    model: run.model,
    state: run.state,
    turnCount,
    inputTokens: run.usage_json.input_tokens,
    outputTokens: run.usage_json.output_tokens,
    totalTokens: run.usage_json.total_tokens,
    costUsd: run.cost_usd.toFixed(6),
    version: run.index_version,
    createdAt: new Date(run.created_at),
    updatedAt: new Date(run.updated_at),
  }
  await db
    .insert(agentRuns)
    .values(row)
    .onConflictDoUpdate({
      target: [agentRuns.tenantId, agentRuns.mode, agentRuns.principal, agentRuns.runId],
      set: {
        agentMode: row.agentMode,
        model: row.model,
        state: row.state,
        turnCount: row.turnCount,
        inputTokens: row.inputTokens,
        outputTokens: row.outputTokens,
        totalTokens: row.totalTokens,
        costUsd: row.costUsd,
        version: row.version,
        updatedAt: row.updatedAt,
      },
      setWhere: sql`${agentRuns.version} < ${row.version}`,
    })
}
