/**
 * The reasoning-job response shapes as closed JSON Schemas written from spec 000's tables
 * ("Reasoning job", "Job envelope", "Job capabilities", "Job page"), independently of the zod
 * schemas the service validates with: every response of the e2e tests must fit them, and
 * `additionalProperties: false` everywhere makes any field the spec does not list a failure (but
 * `queue_position`, the one field the product adds to a waiting job).
 */
import Ajv2020 from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

const dateTime = { type: 'string', format: 'date-time' }
const nullable = (schema: object) => ({ anyOf: [schema, { type: 'null' }] })

export const reasoningJobSchema = {
  $id: 'reasoning-job',
  type: 'object',
  additionalProperties: false,
  required: [
    'id',
    'status',
    'model',
    'scoring_method',
    'requested_real',
    'used_real_qubits',
    'real_request_status',
    'usage',
    'attempt_count',
    'max_attempts',
    'outcome_state',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string', format: 'uuid' },
    status: {
      enum: [
        'queued',
        'generating_candidates',
        'scoring',
        'selecting',
        'awaiting_qpu',
        'completed',
        'classical_fallback',
        'failed',
        'cancelled',
      ],
    },
    model: { enum: ['svc-hive', 'svc-swarm'] },
    scoring_method: { enum: ['hive_logprob', 'swarm_judge'] },
    requested_real: { type: 'boolean' },
    prompt: { type: 'string' },
    candidates: { type: 'array', items: { type: 'object' } },
    selected_index: { type: 'integer', minimum: 0 },
    result: { type: 'string' },
    selector_backend: { type: 'string' },
    selector_confidence: { type: 'number', minimum: 0, maximum: 1 },
    used_real_qubits: { type: 'boolean' },
    quoted_credits: nullable({ type: 'number' }),
    fallback_reason: nullable({ enum: ['selector_unreachable', 'invalid_selection'] }),
    real_request_status: {
      enum: [
        'not_requested',
        'reserved',
        'executed',
        'provider_used_simulator',
        'quantum_not_enabled',
        'quantum_allowance_exhausted',
        'released_after_failure',
      ],
    },
    usage: { type: 'object', additionalProperties: { type: 'number' } },
    inference_receipt_id: nullable({ type: 'string', format: 'uuid' }),
    attempt_count: { type: 'integer', minimum: 0 },
    max_attempts: { type: 'integer', minimum: 1 },
    next_attempt_at: nullable(dateTime),
    outcome_state: { enum: ['not_started', 'in_progress', 'committed', 'outcome_unknown', 'reconciled'] },
    error: nullable({
      type: 'object',
      additionalProperties: false,
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    }),
    workspace_id: nullable({ type: 'string', format: 'uuid' }),
    // Not in the spec's table: the product's one addition, present only while the job waits for a
    // run slot of its workspace (docs/reasoning-jobs.md, "The run queue"). Every other field stays closed.
    queue_position: { type: 'integer', minimum: 1 },
    created_at: dateTime,
    updated_at: dateTime,
    completed_at: nullable(dateTime),
  },
} as const

export const jobEnvelopeSchema = {
  $id: 'job-envelope',
  type: 'object',
  additionalProperties: false,
  required: ['job'],
  properties: { job: { $ref: 'reasoning-job' } },
} as const

export const jobPageSchema = {
  $id: 'job-page',
  type: 'object',
  additionalProperties: false,
  required: ['jobs', 'next_cursor', 'capabilities'],
  properties: {
    jobs: { type: 'array', items: { $ref: 'reasoning-job' } },
    next_cursor: nullable({ type: 'string' }),
    capabilities: {
      type: 'object',
      additionalProperties: false,
      required: [
        'allowed_models',
        'real_enabled',
        'allowance_credits',
        'used_credits',
        'remaining_credits',
        'workspace_role',
        'can_run_real',
        'can_manage_jobs',
      ],
      properties: {
        allowed_models: { type: 'array', items: { enum: ['svc-hive', 'svc-swarm'] } },
        real_enabled: { type: 'boolean' },
        allowance_credits: { type: 'number' },
        used_credits: { type: 'number' },
        remaining_credits: { type: 'number' },
        workspace_role: { enum: ['owner', 'admin', 'member'] },
        can_run_real: { type: 'boolean' },
        can_manage_jobs: { type: 'boolean' },
      },
    },
  },
} as const

const ajv = new Ajv2020({ allErrors: true, strict: true })
addFormats.default(ajv)
ajv.addSchema(reasoningJobSchema)
const validators = {
  job: ajv.compile({ $ref: 'reasoning-job' }),
  envelope: ajv.compile(jobEnvelopeSchema),
  page: ajv.compile(jobPageSchema),
}

/** The errors of `value` against the named shape ([] when it fits). */
export function shapeErrors(shape: keyof typeof validators, value: unknown): string[] {
  const validate = validators[shape]
  if (validate(value)) return []
  return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`)
}
