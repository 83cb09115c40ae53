/**
 * /svc/quantum-reasoning/jobs (spec 000; docs/reasoning-jobs.md):
 *
 *   POST   /jobs           Idempotency-Key (400), the lab switch (503), the body (400), the plan
 *                          (403), the provider connection of byopa_managed (400, 404), the
 *                          provider for live keys (503), the key claim (409, 429), then
 *                          the job's object (402/429 from metering) → 202 {job}, or 200 {job} for
 *                          a replay of the same request.
 *   GET    /jobs           a page of the tenant's jobs in the caller's mode, with its capabilities;
 *                          waiting jobs with their place in the run queue (`queue_position`).
 *   GET    /jobs/{jobId}   the job with its decrypted content (404 for another tenant's or mode's, or a non-uuid).
 *   GET    /jobs/{jobId}/receipt   the signed inference receipt and its audit-log entry (404 until issued).
 *   DELETE /jobs/{jobId}   queued → cancelled (its place in line freed); finished → content erased;
 *                          started → 409.
 */
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { InferenceReceiptResponseSchema } from '../../../durable-objects/reasoning-job/inference-receipt'
import {
  type JobCreateRequest,
  JobCreateRequestSchema,
  JobEnvelopeSchema,
  JobIdParamSchema,
  JobListQuerySchema,
  JobPageSchema,
  type ReasoningJob as JobRecord,
} from '../../../durable-objects/reasoning-job/job.schemas'
import {
  type JobCaller,
  type JobReply,
  jobNotFound,
  jobObjectName,
  type ReceiptReply,
} from '../../../durable-objects/reasoning-job/job-calls'
import { reasoningSettingsFromEnv } from '../../../durable-objects/reasoning-job/job-settings'
import { getConnection } from '../../../durable-objects/reasoning-job/quantum/providers/provider-connections.store'
import type { ReasoningJob } from '../../../durable-objects/reasoning-job/reasoning-job.do'
import { runQueueName } from '../../../durable-objects/reasoning-run-queue/run-queue.protocol'
import {
  actionRequiredOrErrorResponse,
  actionRequiredResponse,
  errorResponse,
} from '../../../shared/http/error-body'
import { AppError, reviveAppError } from '../../../shared/http/errors'
import { UUID } from '../../../shared/http/uuid'
import { parseWith } from '../../../shared/http/validation'
import {
  actionRequiredError,
  checkFeatureAccess,
  checkModelAccess,
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
  scopeOf,
} from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import {
  claimIdempotencyKey,
  IDEMPOTENCY_KEY_HEADER,
  idempotencyKeyOf,
  releaseIdempotencyKey,
  requestHash,
} from './idempotency'
import { readCapabilities, readJobPage } from './job-list'
import type { ReasoningEnv } from './reasoning.context'

type ReasoningContext = Context<FamilyEnv<ReasoningEnv>>

function callerOf(c: ReasoningContext): Identity {
  return requireIdentity(c.get('request'))
}

function jobCaller(identity: Identity): JobCaller {
  return {
    tenantId: identity.tenantId,
    mode: identity.mode,
    principal: principalId(identity),
    role: identity.role,
  }
}

/**
 * The job's object: named by tenant and id (ids are made here, one per job), so another tenant's id
 * never reaches it; the object answers another mode's caller as if the job did not exist.
 */
function jobObject(env: ReasoningEnv, tenantId: string, jobId: string): DurableObjectStub<ReasoningJob> {
  return env.REASONING_JOB.get(env.REASONING_JOB.idFromName(jobObjectName(tenantId, jobId)))
}

/**
 * The page's waiting jobs with their place in the workspace's run queue: the index row of a job is
 * written when its state changes, the place changes whenever a job ahead of it starts or leaves.
 */
async function withQueuePositions(
  env: ReasoningEnv,
  identity: Identity,
  jobs: JobRecord[],
): Promise<JobRecord[]> {
  if (!jobs.some((job) => job.status === 'queued')) return jobs
  const queues = env.REASONING_RUN_QUEUE
  const queue = queues.get(queues.idFromName(runQueueName(identity.tenantId, identity.mode)))
  const positions = await callJob(() => queue.positions())
  return jobs.map((job) => {
    const position = job.status === 'queued' ? positions[job.id] : undefined
    return position === undefined ? job : { ...job, queue_position: position }
  })
}

/** A job id from the path; anything but a UUID is a job that does not exist here (404). */
function jobIdOf(raw: string): string {
  if (!UUID.test(raw)) throw jobNotFound()
  return raw.toLowerCase()
}

function jobStoreUnavailable(err: unknown): AppError {
  return new AppError(
    503,
    'job_store_unavailable',
    'The durable job store is unavailable right now. Retry in a few seconds (a create with the same Idempotency-Key is safe to retry).',
    {
      headers: { 'retry-after': '2' },
      internalMessage: `ReasoningJob call failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
    },
  )
}

async function callJob<R = JobReply>(work: () => Promise<R>): Promise<R> {
  try {
    return await work()
  } catch (err) {
    throw jobStoreUnavailable(err)
  }
}

function answer(reply: JobReply) {
  if (!reply.ok) throw reviveAppError(reply.error)
  return reply.job
}

/** The body, with a 400 naming the field (an unknown property is named in `param`). */
function parseCreateRequest(body: unknown): JobCreateRequest {
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const known = new Set(Object.keys(JobCreateRequestSchema.shape))
    const unknown = Object.keys(body).filter((k) => !known.has(k))
    if (unknown.length > 0) {
      throw new AppError(
        400,
        'invalid_request_body',
        `the body has unknown field(s) ${unknown.join(', ')}; a job request takes only prompt, model, product, provider_connection_id and workspace_id`,
        { param: unknown[0] },
      )
    }
  }
  return parseWith(JobCreateRequestSchema, body)
}

/** 403s from the plan and the caller's role: the model, real hardware. */
function checkEntitlements(
  { plan, catalog }: ResolvedPlan,
  identity: Identity,
  request: JobCreateRequest,
): void {
  const model = checkModelAccess(plan, request.model, { catalog })
  if (model) throw actionRequiredError(model, { param: 'model', catalog })
  if (request.product === 'simulation_cloud') return
  const real = checkFeatureAccess(plan, 'real_qpu', { catalog })
  if (real) throw actionRequiredError(real, { param: 'product', catalog })
  if (identity.role === 'member') {
    throw new AppError(
      403,
      'real_hardware_role_required',
      `Only workspace owners and admins can run jobs on real quantum hardware (${request.product}); your role is member. Use product simulation_cloud, or ask an owner or admin.`,
      { param: 'product' },
    )
  }
}

/**
 * byopa_managed runs on one of the tenant's own provider connections, named by
 * provider_connection_id (404 when it is not theirs); the other products take none.
 */
async function checkProviderConnection(
  c: ReasoningContext,
  identity: Identity,
  request: JobCreateRequest,
): Promise<void> {
  const id = request.provider_connection_id ?? null
  if (request.product !== 'byopa_managed') {
    if (id === null) return
    throw new AppError(
      400,
      'provider_connection_not_allowed',
      `provider_connection_id is only for product byopa_managed; ${request.product} jobs run on ${request.product === 'managed_qpu' ? "the platform's own provider account" : "the product's simulator"}. Remove it, or use byopa_managed.`,
      { param: 'provider_connection_id' },
    )
  }
  if (id === null) {
    throw new AppError(
      400,
      'provider_connection_required',
      'byopa_managed jobs run on your own provider account: set provider_connection_id to one of your provider connections (POST /svc/quantum-reasoning/provider-connections).',
      { param: 'provider_connection_id' },
    )
  }
  const found = await withRequestDatabase(c, 'reasoning', (db) => getConnection(db, scopeOf(identity), id))
  if (!found) {
    throw new AppError(
      404,
      'provider_connection_not_found',
      `No provider connection ${id} exists in your workspace. List yours with GET /svc/quantum-reasoning/provider-connections.`,
      { param: 'provider_connection_id' },
    )
  }
}

const jobStoreDown = errorResponse('job_store_unavailable: the job cannot be reached right now; retry')

export function jobRoutes(app: OpenAPIHono<FamilyEnv<ReasoningEnv>>): void {
  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'post',
      path: '/svc/quantum-reasoning/jobs',
      tags: ['Reasoning'],
      summary: 'Create a durable reasoning job (idempotent with the Idempotency-Key header)',
      request: {
        headers: z.object({
          [IDEMPOTENCY_KEY_HEADER]: z.string().min(16).max(160).openapi({
            description: 'Unique per job; resend it with a retry. Kept 24 hours.',
          }),
        }),
        body: { required: true, content: { 'application/json': { schema: JobCreateRequestSchema } } },
      },
      responses: {
        202: { description: 'Queued', content: { 'application/json': { schema: JobEnvelopeSchema } } },
        200: {
          description: 'The same key and request were already used: the job as it is now',
          content: { 'application/json': { schema: JobEnvelopeSchema } },
        },
        400: errorResponse(
          'The header or the body is invalid (byopa_managed without provider_connection_id, or one given for another product)',
        ),
        402: actionRequiredResponse('insufficient_credits or overage_cap_reached'),
        403: actionRequiredOrErrorResponse(
          'The plan lacks the model or real hardware (model_access_required, feature_required: action-required body); real_hardware_role_required or workspace_mismatch (error body)',
        ),
        404: errorResponse('provider_connection_id names no provider connection of your workspace'),
        409: errorResponse('The key was used with a different request'),
        429: actionRequiredResponse(
          'rate_limited: the per-tenant queue limit is reached (Retry-After); or the allowance is used up',
        ),
        503: errorResponse(
          'reasoning_lab_disabled, provider_not_configured (live keys), job_store_unavailable or metering_unavailable',
        ),
      },
    }),
  )
  app.post('/svc/quantum-reasoning/jobs', async (c) => {
    const identity = callerOf(c)
    const key = idempotencyKeyOf(c.req.header(IDEMPOTENCY_KEY_HEADER))
    const settings = reasoningSettingsFromEnv(c.env)
    if (!settings.labEnabled) {
      throw new AppError(
        503,
        'reasoning_lab_disabled',
        'The reasoning lab is switched off on this deployment (REASONING_LAB_ENABLED=false), so no new jobs are accepted. Existing jobs can still be read and deleted.',
        { headers: { 'retry-after': '3600' } },
      )
    }
    const request = parseCreateRequest(await c.req.json())
    const resolved = resolvePlan(c.env, identity.planId)
    checkEntitlements(resolved, identity, request)
    if (request.workspace_id && request.workspace_id.toLowerCase() !== identity.tenantId) {
      throw new AppError(
        403,
        'workspace_mismatch',
        `workspace_id must be your workspace (${identity.tenantId}) or null; your credential cannot create jobs in ${request.workspace_id}.`,
        { param: 'workspace_id' },
      )
    }
    await checkProviderConnection(c, identity, request)
    if (!isTestMode(identity)) requireProvider(c.env, request.model)
    const hash = requestHash(request, identity.mode)
    const claim = await withRequestDatabase(c, 'reasoning', (db) =>
      claimIdempotencyKey(db, { scope: scopeOf(identity), key, requestHash: hash, ...resolved }),
    )
    const reply = await callJob(() =>
      jobObject(c.env, identity.tenantId, claim.jobId).create({
        jobId: claim.jobId,
        identity,
        request,
        requestId: c.get('request').requestId,
      }),
    )
    if (!reply.ok && claim.kind === 'new' && reply.error.status < 500) {
      // Refused before the job existed (metering): the key is free for another try.
      await withRequestDatabase(c, 'reasoning', (db) =>
        releaseIdempotencyKey(db, scopeOf(identity), key, claim.jobId),
      )
    }
    const job = answer(reply)
    return c.json({ job }, claim.kind === 'new' ? 202 : 200)
  })

  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'get',
      path: '/svc/quantum-reasoning/jobs',
      tags: ['Reasoning'],
      summary: "A page of the workspace's reasoning jobs (newest first) with the caller's capabilities",
      request: { query: JobListQuerySchema },
      responses: {
        200: { description: 'The page', content: { 'application/json': { schema: JobPageSchema } } },
        400: errorResponse('A query parameter is invalid'),
        503: errorResponse('reasoning_store_unavailable: the database cannot be reached; retry shortly'),
      },
    }),
  )
  app.get('/svc/quantum-reasoning/jobs', async (c) => {
    const identity = callerOf(c)
    const query = parseWith(JobListQuerySchema, c.req.query(), {
      code: 'invalid_query',
      root: 'the query string',
    })
    const { plan } = resolvePlan(c.env, identity.planId)
    const page = await withRequestDatabase(c, 'reasoning', async (db) => ({
      ...(await readJobPage(db, scopeOf(identity), query)),
      capabilities: await readCapabilities(db, identity, plan),
    }))
    const jobs = await withQueuePositions(c.env, identity, page.jobs)
    return c.json({ jobs, next_cursor: page.nextCursor, capabilities: page.capabilities }, 200)
  })

  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'get',
      path: '/svc/quantum-reasoning/jobs/{jobId}',
      tags: ['Reasoning'],
      summary: 'A job with its candidates, selection evidence, result, usage and receipt id',
      request: { params: JobIdParamSchema },
      responses: {
        200: { description: 'The job', content: { 'application/json': { schema: JobEnvelopeSchema } } },
        404: errorResponse('No such job in your workspace'),
        503: jobStoreDown,
      },
    }),
  )
  app.get('/svc/quantum-reasoning/jobs/:jobId', async (c) => {
    const identity = callerOf(c)
    const jobId = jobIdOf(c.req.param('jobId'))
    const reply = await callJob(() => jobObject(c.env, identity.tenantId, jobId).get(jobCaller(identity)))
    return c.json({ job: answer(reply) }, 200)
  })

  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'get',
      path: '/svc/quantum-reasoning/jobs/{jobId}/receipt',
      tags: ['Reasoning'],
      summary:
        "The job's signed inference receipt (DSSE, ML-DSA-65 with the token keys: verify with the JWKS) and its audit-log entry",
      request: { params: JobIdParamSchema },
      responses: {
        200: {
          description: 'The receipt',
          content: { 'application/json': { schema: InferenceReceiptResponseSchema } },
        },
        404: errorResponse('No such job in your workspace, or no receipt issued yet (receipt_not_issued)'),
        503: jobStoreDown,
      },
    }),
  )
  app.get('/svc/quantum-reasoning/jobs/:jobId/receipt', async (c) => {
    const identity = callerOf(c)
    const jobId = jobIdOf(c.req.param('jobId'))
    const jwksUrl = `${c.get('request').baseUrl}/.well-known/jwks.json`
    const reply = await callJob<ReceiptReply>(
      async () =>
        (await jobObject(c.env, identity.tenantId, jobId).receipt(
          jobCaller(identity),
          jwksUrl,
        )) as ReceiptReply,
    )
    if (!reply.ok) throw reviveAppError(reply.error)
    return c.json(reply.receipt, 200)
  })

  app.openAPIRegistry.registerPath(
    createRoute({
      method: 'delete',
      path: '/svc/quantum-reasoning/jobs/{jobId}',
      tags: ['Reasoning'],
      summary:
        'Cancel a queued job (its place in the run queue goes to the jobs behind it), or erase the content of a finished one',
      request: { params: JobIdParamSchema },
      responses: {
        200: {
          description: 'Cancelled or erased',
          content: { 'application/json': { schema: JobEnvelopeSchema } },
        },
        403: errorResponse("A member deleting another member's job"),
        404: errorResponse('No such job in your workspace'),
        409: errorResponse('Execution has started; cancellation is no longer safe'),
        503: jobStoreDown,
      },
    }),
  )
  app.delete('/svc/quantum-reasoning/jobs/:jobId', async (c) => {
    const identity = callerOf(c)
    const jobId = jobIdOf(c.req.param('jobId'))
    const reply = await callJob(() => jobObject(c.env, identity.tenantId, jobId).remove(jobCaller(identity)))
    return c.json({ job: answer(reply) }, 200)
  })
}
