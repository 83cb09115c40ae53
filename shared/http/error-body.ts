/**
 * The public error bodies as schemas, for OpenAPI: `Error`, what `AppError.toResponse()` sends,
 * and `ActionRequiredError`, the spec's body of a refusal by the plan (defined once beside the
 * upgrade decision, shared/plans/upgrade-decision.ts). Every family's routes document their
 * refusals with these helpers, so each status of each operation names its body.
 */
import { z } from '@hono/zod-openapi'
import { ActionRequiredBodySchema } from '../plans/upgrade-decision'

export const ErrorBodySchema = z
  .object({
    error: z.object({
      message: z.string().openapi({ description: 'What was wrong and what to do about it' }),
      type: z.string().openapi({ description: 'The class of error, derived from the status' }),
      param: z.string().nullable().openapi({ description: 'The request field or header at fault, if any' }),
      code: z.string().openapi({ description: 'A stable machine-readable code' }),
    }),
  })
  .openapi('Error')

/** An OpenAPI response whose body is the public error body. */
export const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ErrorBodySchema } },
})

/** An OpenAPI response whose body is the action-required body (`error` and `svc_upgrade`). */
export const actionRequiredResponse = (description: string) => ({
  description: `${description} (action-required body: the upgrade decision in svc_upgrade and in error.svc_upgrade)`,
  content: { 'application/json': { schema: ActionRequiredBodySchema } },
})

/**
 * A status a route answers with either body: the action-required one when the plan refuses, the
 * error body for its other refusals (e.g. 403 for the plan, or for the caller's role).
 */
export const actionRequiredOrErrorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: z.union([ActionRequiredBodySchema, ErrorBodySchema]) } },
})
