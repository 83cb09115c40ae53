/**
 * The public error body as a schema: the one definition OpenAPI documents (component `Error`) for
 * what `AppError.toResponse()` sends. Every family's routes refer to it through `errorResponse`.
 */
import { z } from '@hono/zod-openapi'

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

export type ErrorBody = z.infer<typeof ErrorBodySchema>

/** An OpenAPI response whose body is the public error body. */
export const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ErrorBodySchema } },
})
