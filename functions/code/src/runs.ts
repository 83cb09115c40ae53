/**
 * GET and DELETE /svc/agents/runs/{runId}: the run's status (account-scoped: another account's run
 * and a run that does not exist are the same 404) and cancellation (200 with the cancelled status;
 * 409 when the run is already completed, failed or cancelled).
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { cancelRun, runStatus } from '../../../durable-objects/agent-run/run-client'
import { RunIdParamSchema, RunStatusSchema } from '../../../durable-objects/agent-run/run-status.schemas'
import { errorResponse } from '../../../shared/http/error-body'
import { AppError } from '../../../shared/http/errors'
import { UUID } from '../../../shared/http/uuid'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import type { CodeEnv } from './code.context'
import { callerOf, ownerOf } from './turns'

function runIdOf(raw: string): string {
  if (!UUID.test(raw)) {
    throw new AppError(
      400,
      'invalid_run_id',
      `runId must be a UUID such as 0b6f3c52-8f0e-4d3e-9a55-2f1f0c7f8e11 (got ${JSON.stringify(raw.slice(0, 60))}); it is the run_id of the run's events`,
      { param: 'runId' },
    )
  }
  return raw.toLowerCase()
}

export function runRoutes(app: OpenAPIHono<FamilyEnv<CodeEnv>>): void {
  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'get',
      path: '/svc/agents/runs/{runId}',
      tags: ['Agent'],
      summary: "An agent run's status: state, last seq, pending approvals and tool calls, usage and its caps",
      request: { params: RunIdParamSchema },
      responses: {
        200: { description: 'The run', content: { 'application/json': { schema: RunStatusSchema } } },
        400: errorResponse('invalid_run_id: runId is not a UUID'),
        403: errorResponse('insufficient_scope: the credential lacks agents:write'),
        404: errorResponse('No such run for this account'),
        503: errorResponse('run_store_unavailable: the durable run store cannot be reached; retry'),
      },
    }),
  )
  app.get('/svc/agents/runs/:runId', async (c) => {
    const identity = callerOf(c)
    const runId = runIdOf(c.req.param('runId'))
    return c.json(await runStatus(c.env.AGENT_RUN, ownerOf(identity), runId), 200)
  })

  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'delete',
      path: '/svc/agents/runs/{runId}',
      tags: ['Agent'],
      summary: 'Cancel a running or waiting run; its live turn ends with turn.cancelled',
      request: { params: RunIdParamSchema },
      responses: {
        200: { description: 'Cancelled', content: { 'application/json': { schema: RunStatusSchema } } },
        400: errorResponse('invalid_run_id: runId is not a UUID'),
        403: errorResponse('insufficient_scope: the credential lacks agents:write'),
        404: errorResponse('No such run for this account'),
        409: errorResponse('The run is already terminal'),
        503: errorResponse('run_store_unavailable: the durable run store cannot be reached; retry'),
      },
    }),
  )
  app.delete('/svc/agents/runs/:runId', async (c) => {
    const identity = callerOf(c)
    const runId = runIdOf(c.req.param('runId'))
    const reason = 'cancelled with DELETE /svc/agents/runs/{runId}'
    return c.json(await cancelRun(c.env.AGENT_RUN, ownerOf(identity), runId, reason), 200)
  })
}
