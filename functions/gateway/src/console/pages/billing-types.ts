/**
 * The shapes the console reads from the workspace, billing and usage API. They are the platform
 * family's (functions/platform/src/workspace.schemas.ts) as JSON: the console is a client of the API
 * and imports only their inferred types, never the family's code.
 */
import type { z } from '@hono/zod-openapi'
import type {
  BillingSchema,
  PlanListSchema,
  UsageRequestListSchema,
  UsageSchema,
} from '../../../../platform/src/workspace.schemas'

export type Billing = z.infer<typeof BillingSchema>
export type PlanList = z.infer<typeof PlanListSchema>
export type Plan = PlanList['data'][number]
export type UsageReport = z.infer<typeof UsageSchema>
export type UsageRequests = z.infer<typeof UsageRequestListSchema>
