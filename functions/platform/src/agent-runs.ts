/**
 * The workspace's agent runs, from the run index (agent_runs, written by each run's AgentRun
 * object): a page newest first, one run with its live status, and the admin cancel. Owners and
 * admins see and cancel every run of the workspace; a member the runs it started, with its own
 * login or with a key it may see (api-key-store.ts), like the keys list. Every query is scoped by
 * the caller's tenant and mode, so another workspace's run, or a run of the other mode, is a 404
 * like one that does not exist.
 *
 * The cancel is the run's own (durable-objects/agent-run/run-client.ts, as DELETE
 * /svc/agents/runs/{runId}), addressed to the run's owner from the index row, and is in the
 * tenant's audit log (`agent_run.cancelled`) before it is acknowledged.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { and, desc, eq, inArray, or, type SQL } from 'drizzle-orm'
import type { RunOwner } from '../../../durable-objects/agent-run/agent-run.do'
import { type AgentRunNamespace, cancelRun, runStatus } from '../../../durable-objects/agent-run/run-client'
import { RunStatusSchema } from '../../../durable-objects/agent-run/run-status.schemas'
import type { Drizzle } from '../../../shared/db/client'
import { afterPageKey, decodePageCursor, encodePageCursor } from '../../../shared/db/page-cursor'
import { agentRuns, apiKeys } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import { actorOf, type Identity, principalId } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import {
  AgentRunDetailSchema,
  AgentRunListQuerySchema,
  AgentRunListSchema,
  AgentRunParamsSchema,
  AgentRunPickQuerySchema,
  type AgentRunSummary,
} from './agent-runs.schemas'
import { scopeFor as apiKeyScope, isAdministrator } from './api-key-store'
import { recordAuditEvent } from './database'
import type { PlatformEnv } from './platform.context'
import { errorResponse } from './platform.schemas'

const TAGS = ['Agent runs']
const BASE = '/platform/v1/agent-runs'
const notFound = errorResponse('run_not_found in this workspace (or not started by this member)')
const ambiguous = errorResponse(
  'run_id_ambiguous: two credentials started runs with this id; pass started_by',
)

type IndexRow = typeof agentRuns.$inferSelect

/** The runs the caller may see and cancel: of its tenant and mode, and its own unless an administrator. */
function visibleRuns(db: Drizzle, identity: Identity): SQL {
  const tenant = and(eq(agentRuns.tenantId, identity.tenantId), eq(agentRuns.mode, identity.mode))!
  if (isAdministrator(identity)) return tenant
  const ownKeys = db.select({ id: apiKeys.id }).from(apiKeys).where(apiKeyScope(identity))
  return and(
    tenant,
    or(eq(agentRuns.principal, principalId(identity)), inArray(agentRuns.apiKeyId, ownKeys)),
  )!
}

function summaryOf(row: IndexRow): AgentRunSummary {
  return {
    object: 'agent_run',
    id: row.runId,
    state: row.state as AgentRunSummary['state'],
    mode: row.mode,
    agent_mode: row.agentMode as AgentRunSummary['agent_mode'],
    model: row.model,
    started_by: { principal: row.principal, api_key_id: row.apiKeyId, user_id: row.userId },
    turn_count: row.turnCount,
    usage: {
      input_tokens: row.inputTokens,
      output_tokens: row.outputTokens,
      total_tokens: row.totalTokens,
      cost_usd: Number(row.costUsd),
    },
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}

function runNotFound(): AppError {
  return new AppError(
    404,
    'run_not_found',
    "No agent run with this id in this workspace (a member sees only the runs it started). Check the run id: it is the run_id of the run's events.",
    { param: 'runId' },
  )
}

/** The one visible run with this id (two credentials may have picked the same client-chosen id). */
async function findRun(
  db: Drizzle,
  identity: Identity,
  runId: string,
  startedBy: string | undefined,
): Promise<IndexRow> {
  const rows = await db
    .select()
    .from(agentRuns)
    .where(
      and(
        visibleRuns(db, identity),
        eq(agentRuns.runId, runId),
        startedBy === undefined ? undefined : eq(agentRuns.principal, startedBy),
      ),
    )
    .limit(2)
  if (rows.length === 0) throw runNotFound()
  if (rows.length > 1) {
    throw new AppError(
      409,
      'run_id_ambiguous',
      `Two runs of this workspace have the id ${runId}, started by ${rows.map((r) => r.principal).join(' and ')}; pass started_by with the one you mean.`,
      { param: 'started_by' },
    )
  }
  return rows[0]!
}

function agentRunsOf(env: PlatformEnv): AgentRunNamespace {
  if (env.AGENT_RUN) return env.AGENT_RUN
  throw new AppError(
    503,
    'run_store_unavailable',
    'The agent run store is not reachable from here right now; retry later.',
    {
      headers: { 'retry-after': '5' },
      internalMessage: 'the platform worker has no AGENT_RUN binding',
    },
  )
}

const ownerOf = (row: IndexRow): RunOwner => ({
  tenantId: row.tenantId,
  mode: row.mode,
  principalId: row.principal,
})

export function agentRunRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: BASE,
      tags: TAGS,
      summary: "The workspace's agent runs, newest first (a member: the runs it started)",
      description:
        'From the run index each run writes after every change (state, turns, usage); a page is a consistent cut in (created_at, id) order, filters apply per page.',
      request: { query: AgentRunListQuerySchema },
      responses: {
        200: { description: 'Runs', content: { 'application/json': { schema: AgentRunListSchema } } },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const query = c.req.valid('query')
      const after = query.cursor === undefined ? null : decodePageCursor(query.cursor, 'cursor')
      const rows = await withRequestDatabase(c, 'platform', (db) =>
        db
          .select()
          .from(agentRuns)
          .where(
            and(
              visibleRuns(db, identity),
              query.state ? eq(agentRuns.state, query.state) : undefined,
              // The caller's mode only (visibleRuns): naming the other one finds nothing.
              query.mode ? eq(agentRuns.mode, query.mode) : undefined,
              query.agent_mode ? eq(agentRuns.agentMode, query.agent_mode) : undefined,
              after ? afterPageKey(agentRuns.createdAt, agentRuns.id, after) : undefined,
            ),
          )
          .orderBy(desc(agentRuns.createdAt), desc(agentRuns.id))
          .limit(query.limit + 1),
      )
      const page = rows.slice(0, query.limit)
      const last = page.at(-1)
      const nextCursor =
        rows.length > query.limit && last
          ? encodePageCursor({ createdAt: last.createdAt.toISOString(), id: last.id })
          : null
      return c.json({ object: 'list' as const, data: page.map(summaryOf), next_cursor: nextCursor }, 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: `${BASE}/{runId}`,
      tags: TAGS,
      summary: 'One run: its index row and its live status (state, pending approvals, usage and caps)',
      request: { params: AgentRunParamsSchema, query: AgentRunPickQuerySchema },
      responses: {
        200: { description: 'The run', content: { 'application/json': { schema: AgentRunDetailSchema } } },
        404: notFound,
        409: ambiguous,
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const { runId } = c.req.valid('param')
      const { started_by } = c.req.valid('query')
      const row = await withRequestDatabase(c, 'platform', (db) => findRun(db, identity, runId, started_by))
      const status = await runStatus(agentRunsOf(c.env), ownerOf(row), row.runId)
      return c.json({ ...summaryOf(row), state: status.state, status }, 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: `${BASE}/{runId}/cancel`,
      tags: TAGS,
      summary: 'Cancel a running or waiting run of the workspace (a member: one it started)',
      description:
        'The same cancel as DELETE /svc/agents/runs/{runId} by the credential that started the run: its live turn ends with `turn.cancelled`, pending approvals are cancelled. Recorded in the audit log (`agent_run.cancelled`) before the answer, which is the run status.',
      request: { params: AgentRunParamsSchema, query: AgentRunPickQuerySchema },
      responses: {
        200: { description: 'Cancelled', content: { 'application/json': { schema: RunStatusSchema } } },
        404: notFound,
        409: errorResponse('run_terminal: the run already ended; run_id_ambiguous: pass started_by'),
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const { runId } = c.req.valid('param')
      const { started_by } = c.req.valid('query')
      const row = await withRequestDatabase(c, 'platform', (db) => findRun(db, identity, runId, started_by))
      const actor = actorOf(identity)
      const status = await cancelRun(
        agentRunsOf(c.env),
        ownerOf(row),
        row.runId,
        `cancelled by ${actor} with POST /platform/v1/agent-runs/{runId}/cancel`,
      )
      await recordAuditEvent(c, {
        kind: 'agent_run.cancelled',
        run_id: row.runId,
        started_by: row.principal,
        actor,
        request_id: c.get('request').requestId,
      })
      return c.json(status, 200)
    },
  )
}
