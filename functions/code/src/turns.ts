/**
 * POST /svc/code/v1/turns: validates the turn (400), checks what the caller's plan allows
 * (403 with the action-required body) and that the runtime it needs exists (503), then hands the
 * turn to the run's AgentRun object and streams its NDJSON response through. The object decides
 * reattach vs new turn (409s), meters the turn (402/429) and runs it.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import type { Context } from 'hono'
import type { RunOwner } from '../../../durable-objects/agent-run/agent-run.do'
import { runObject, runStoreUnavailable } from '../../../durable-objects/agent-run/run-client'
import {
  assertThinkingSupported,
  parseTurnRequest,
  type TurnRequest,
  TurnRequestSchema,
  turnBodyHash,
} from '../../../durable-objects/agent-run/turn.schemas'
import { turnSettingsOf } from '../../../durable-objects/agent-run/turn-settings'
import { supportsThinking } from '../../../shared/catalog/model-catalog'
import { actionRequiredResponse, errorResponse } from '../../../shared/http/error-body'
import { AppError } from '../../../shared/http/errors'
import {
  actionRequiredError,
  checkFeatureAccess,
  checkModelAccess,
  type PlanFeature,
  type ResolvedPlan,
  resolvePlan,
} from '../../../shared/plans'
import { requireProvider } from '../../../shared/providers'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import {
  type Identity,
  isTestMode,
  principalId,
  requireIdentity,
} from '../../../shared/worker/request-context'
import type { CodeEnv } from './code.context'

/** The scope a restricted credential needs for the agent plane (advertised in the MCP metadata). */
export const AGENT_SCOPE = 'agents:write'

/**
 * The caller's identity (the gateway guarantees one on these routes). A credential that carries
 * scopes is restricted to them and needs `agents:write` here (403 `insufficient_scope`); one
 * without scopes is unrestricted within its role.
 */
export function callerOf(c: Context<FamilyEnv<CodeEnv>>): Identity {
  const identity = requireIdentity(c.get('request'))
  if (identity.scopes.length > 0 && !identity.scopes.includes(AGENT_SCOPE)) {
    throw new AppError(
      403,
      'insufficient_scope',
      `This credential is limited to the scopes ${identity.scopes.join(', ')}; the agent plane needs ${AGENT_SCOPE}. Use a credential with that scope.`,
    )
  }
  return identity
}

export function ownerOf(identity: Identity): RunOwner {
  return { tenantId: identity.tenantId, mode: identity.mode, principalId: principalId(identity) }
}

/** 403s from the plan: agent runs, the model, thinking. */
function checkEntitlements({ plan, catalog }: ResolvedPlan, request: TurnRequest): void {
  const agentRuns = checkFeatureAccess(plan, 'agent_runs', { catalog })
  if (agentRuns) throw actionRequiredError(agentRuns, { catalog })
  const model = checkModelAccess(plan, request.model, { catalog })
  if (model) throw actionRequiredError(model, { param: 'model', catalog })
  if (request.enable_thinking) {
    const thinking = checkFeatureAccess(plan, 'thinking', { catalog })
    if (thinking) {
      throw actionRequiredError(
        { ...thinking, requested_model: request.model },
        { param: 'enable_thinking', catalog },
      )
    }
  }
}

/**
 * 403 unless the caller's plan includes `feature` (web search, transcription): the action-required
 * body, decided with the deployment's catalog.
 */
export function requireFeature(env: CodeEnv, identity: Identity, feature: PlanFeature): ResolvedPlan {
  const resolved = resolvePlan(env, identity.planId)
  const denied = checkFeatureAccess(resolved.plan, feature, { catalog: resolved.catalog })
  if (denied) throw actionRequiredError(denied, { catalog: resolved.catalog })
  return resolved
}

/** 503 when a live turn has no model provider for its model (test keys use the built-in model). */
function checkRuntime(env: CodeEnv, request: TurnRequest, testMode: boolean): void {
  if (!testMode) requireProvider(env, request.model)
}

export function turnRoutes(app: OpenAPIHono<FamilyEnv<CodeEnv>>): void {
  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'post',
      path: '/svc/code/v1/turns',
      tags: ['Agent'],
      summary: 'Run one agent turn (svc.code.v1); the answer is an NDJSON event stream',
      description:
        'One JSON event per line (docs/agent-protocol.md). Re-posting the same run_id, turn_id and body reattaches, replaying events after `cursor`.',
      request: { body: { required: true, content: { 'application/json': { schema: TurnRequestSchema } } } },
      responses: {
        200: {
          description: 'application/x-ndjson event stream',
          content: { 'application/x-ndjson': { schema: { type: 'string' } } },
        },
        400: errorResponse(
          'Invalid protocol request: invalid_turn_request naming the field, thinking_not_supported, empty_request, cursor_out_of_range, or an approval or tool result the run is not waiting for',
        ),
        402: actionRequiredResponse(
          'insufficient_credits or overage_cap_reached: the hard plan allowance is reached',
        ),
        403: actionRequiredResponse(
          'feature_required (agent runs, thinking) or model_access_required: the plan does not include it; insufficient_scope (error body) for a credential without agents:write',
        ),
        404: errorResponse('run_not_found: run_id names no run of this account'),
        409: errorResponse(
          'turn_id_reused with another body, run_busy, run_awaiting_input, run_cancelled or run_budget_exhausted',
        ),
        429: actionRequiredResponse(
          'token_allowance_exhausted or tier_allowance_exhausted, or rate_limited (retry after Retry-After)',
        ),
        503: errorResponse(
          'provider_not_configured (no model provider for a live turn), run_store_unavailable (the durable run store) or metering_unavailable; retry after Retry-After',
        ),
      },
    }),
  )
  app.post('/svc/code/v1/turns', async (c) => {
    const identity = callerOf(c)
    const { requestId } = c.get('request')
    const request = parseTurnRequest(await c.req.json())
    assertThinkingSupported(request.model, request.enable_thinking, supportsThinking)
    const billing = resolvePlan(c.env, identity.planId)
    checkEntitlements(billing, request)
    const testMode = isTestMode(identity)
    checkRuntime(c.env, request, testMode)

    const runId = request.run_id ?? crypto.randomUUID()
    const owner = ownerOf(identity)
    const settings = turnSettingsOf(request, {
      testMode,
      billingPlanId: billing.plan.id,
      webSearch: billing.plan.features.includes('web_search'),
      requestId,
    })
    const bodyHash = await turnBodyHash(request, runId)
    let response: Response
    try {
      response = await runObject(c.env.AGENT_RUN, owner, runId).postTurn({
        owner,
        identity,
        runId,
        request,
        bodyHash,
        settings,
      })
    } catch (err) {
      throw runStoreUnavailable(err)
    }
    return new Response(response.body, response)
  })
}
