/**
 * The reasoning-job wire shapes, written from spec 000's tables (Reasoning job create request,
 * Reasoning job, Job envelope, Job capabilities, Job page): one definition each, used by the
 * routes to validate, by the object to build what it answers, and by the OpenAPI document. Every
 * object is closed (`.strict()`), as the spec says "no other properties"; the job has one field the
 * spec does not list, `queue_position`, present only while the job waits for a run slot.
 */
import { z } from '@hono/zod-openapi'

export const REASONING_MODELS = ['svc-hive', 'svc-swarm'] as const
export type ReasoningModel = (typeof REASONING_MODELS)[number]

export const REASONING_PRODUCTS = ['simulation_cloud', 'managed_qpu', 'byopa_managed'] as const

export const JOB_STATUSES = [
  'queued',
  'generating_candidates',
  'scoring',
  'selecting',
  'awaiting_qpu',
  'completed',
  'classical_fallback',
  'failed',
  'cancelled',
] as const
export type JobStatus = (typeof JOB_STATUSES)[number]

export const TERMINAL_STATUSES: readonly JobStatus[] = [
  'completed',
  'classical_fallback',
  'failed',
  'cancelled',
]
/** Started and not finished: a DELETE is refused (409). */
export const RUNNING_STATUSES: readonly JobStatus[] = [
  'generating_candidates',
  'scoring',
  'selecting',
  'awaiting_qpu',
]

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status)
}

export const SCORING_METHODS = ['hive_logprob', 'swarm_judge'] as const
export type ScoringMethod = (typeof SCORING_METHODS)[number]

/** Each model has one scoring method (docs/reasoning-jobs.md). */
export const SCORING_METHOD_OF: Readonly<Record<ReasoningModel, ScoringMethod>> = {
  'svc-hive': 'hive_logprob',
  'svc-swarm': 'swarm_judge',
}

export const FALLBACK_REASONS = ['selector_unreachable', 'invalid_selection'] as const

export const REAL_REQUEST_STATUSES = [
  'not_requested',
  'reserved',
  'executed',
  'provider_used_simulator',
  'quantum_not_enabled',
  'quantum_allowance_exhausted',
  'released_after_failure',
] as const

export const OUTCOME_STATES = [
  'not_started',
  'in_progress',
  'committed',
  'outcome_unknown',
  'reconciled',
] as const

export const WORKSPACE_ROLES = ['owner', 'admin', 'member'] as const

export const JobCreateRequestSchema = z
  .object({
    prompt: z
      .string()
      .min(1)
      .max(64_000)
      .openapi({ description: 'What to reason about (1 to 64,000 characters)' }),
    model: z.enum(REASONING_MODELS),
    product: z.enum(REASONING_PRODUCTS).openapi({
      description:
        '`simulation_cloud` runs the selector in the cloud; `managed_qpu` and `byopa_managed` ask for real quantum hardware (the `real_qpu` plan feature)',
    }),
    provider_connection_id: z.uuid().nullable().optional(),
    workspace_id: z
      .uuid()
      .nullable()
      .optional()
      .openapi({ description: "The caller's workspace (its tenant id) or null" }),
  })
  .strict()
  .openapi('ReasoningJobCreateRequest')
export type JobCreateRequest = z.infer<typeof JobCreateRequestSchema>

export const JobErrorSchema = z.object({ code: z.string(), message: z.string() }).strict()

export const ReasoningJobSchema = z
  .object({
    id: z.uuid(),
    status: z.enum(JOB_STATUSES),
    model: z.enum(REASONING_MODELS),
    scoring_method: z.enum(SCORING_METHODS),
    requested_real: z.boolean(),
    prompt: z
      .string()
      .optional()
      .openapi({ description: 'Decrypted for the owning tenant; absent in lists and after erasure' }),
    candidates: z.array(z.record(z.string(), z.unknown())).optional().openapi({
      description: 'The candidates with their scores: the selection evidence (docs/reasoning-jobs.md)',
    }),
    selected_index: z.int().min(0).optional(),
    result: z.string().optional(),
    selector_backend: z.string().optional(),
    selector_confidence: z.number().min(0).max(1).optional(),
    used_real_qubits: z.boolean(),
    quoted_credits: z
      .number()
      .nullable()
      .optional()
      .openapi({ description: 'Upper bound at list price, in credits (1 credit = 1 US cent)' }),
    fallback_reason: z.enum(FALLBACK_REASONS).nullable().optional(),
    real_request_status: z.enum(REAL_REQUEST_STATUSES),
    usage: z.record(z.string(), z.number()),
    inference_receipt_id: z.uuid().nullable().optional(),
    attempt_count: z.int().min(0),
    max_attempts: z.int().min(1),
    next_attempt_at: z.iso.datetime().nullable().optional(),
    outcome_state: z.enum(OUTCOME_STATES),
    error: JobErrorSchema.nullable().optional(),
    workspace_id: z.uuid().nullable().optional(),
    queue_position: z.int().min(1).optional().openapi({
      description:
        "While the job waits for a run slot of its workspace (status queued): its place among the workspace's waiting jobs of its mode, 1 = next to start. Absent once it has a slot. This product's one addition to the spec's closed job object (docs/reasoning-jobs.md, \"The run queue\").",
    }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    completed_at: z.iso.datetime().nullable().optional(),
  })
  .strict()
  .openapi('ReasoningJob')
export type ReasoningJob = z.infer<typeof ReasoningJobSchema>

export const JobEnvelopeSchema = z
  .object({ job: ReasoningJobSchema })
  .strict()
  .openapi('ReasoningJobEnvelope')

export const JobCapabilitiesSchema = z
  .object({
    allowed_models: z.array(z.enum(REASONING_MODELS)),
    real_enabled: z.boolean(),
    allowance_credits: z.number(),
    used_credits: z.number(),
    remaining_credits: z.number(),
    workspace_role: z.enum(WORKSPACE_ROLES),
    can_run_real: z.boolean(),
    can_manage_jobs: z.boolean(),
  })
  .strict()
  .openapi('ReasoningJobCapabilities')
export type JobCapabilities = z.infer<typeof JobCapabilitiesSchema>

export const JobPageSchema = z
  .object({
    jobs: z.array(ReasoningJobSchema),
    next_cursor: z.string().nullable(),
    capabilities: JobCapabilitiesSchema,
  })
  .strict()
  .openapi('ReasoningJobPage')
export type JobPage = z.infer<typeof JobPageSchema>

export const JobListQuerySchema = z.object({
  cursor: z.string().min(1).max(200).optional().openapi({ description: 'next_cursor of the previous page' }),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  status: z.enum(JOB_STATUSES).optional(),
  model: z.enum(REASONING_MODELS).optional(),
})

export const JobIdParamSchema = z.object({
  jobId: z.string().openapi({ param: { name: 'jobId', in: 'path' }, description: 'The job id (a UUID)' }),
})
