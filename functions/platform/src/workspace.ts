/**
 * The workspace as its console shows it: who is calling (GET /platform/v1/workspace), the plan
 * catalog (GET /platform/v1/plans), this period's allowance, credits and spend cap
 * (GET /platform/v1/billing), the switches an owner or admin may change (PATCH /platform/v1/billing:
 * usage credits, spend cap; the RateLimiter re-reads them within RATE_LIMIT_BALANCE_REFRESH_MS),
 * and a self-serve plan change (POST /platform/v1/billing/plan, owners). This deployment has no
 * payment provider: a plan change takes effect as recorded, and contract plans are refused with
 * 409 `contact_sales_required`. Every change is in the audit log before the answer.
 */
import { createRoute, type OpenAPIHono, type z } from '@hono/zod-openapi'
import { eq, sql } from 'drizzle-orm'
import type { Context } from 'hono'
import { parseSubject } from '../../../shared/auth/subjects'
import { tenantBalances, tenants, users } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import {
  type BillingPlan,
  getPlan,
  planCatalogFromEnv,
  resolvePlan,
} from '../../../shared/plans/plan-catalog'
import { type FamilyEnv, identityOf, requireAdmin } from '../../../shared/worker/family-app'
import { actorOf, type Identity } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { recordAuditEvent } from './database'
import type { PlatformEnv } from './platform.context'
import { errorResponse } from './platform.schemas'
import {
  BillingPatchSchema,
  BillingSchema,
  PlanChangeSchema,
  PlanListSchema,
  type PlanSchema,
  WorkspaceSchema,
} from './workspace.schemas'

const TAGS = ['Workspace and billing']

export function renderPlan(plan: BillingPlan): z.infer<typeof PlanSchema> {
  return {
    id: plan.id,
    name: plan.name,
    rank: plan.rank,
    monthly_price_cents: plan.monthlyPriceCents,
    self_serve: plan.monthlyPriceCents !== null,
    models: plan.models,
    model_allowances: plan.modelAllowances as Record<string, number>,
    tool_allowances: plan.toolAllowances as Record<string, number>,
    features: plan.features,
    domains: plan.domains,
    monthly_token_allowance: plan.monthlyTokenAllowance,
    included_credits_cents: plan.includedCreditsCents,
    usage_credits: plan.usageCredits,
    overage_cap_cents: plan.overageCapCents,
    context_limit_tokens: plan.contextLimitTokens,
    requests_per_minute: plan.requestsPerMinute,
    tokens_per_minute: plan.tokensPerMinute,
    document_allowance: plan.documentAllowance,
  }
}

function periodAt(now: Date): { start: Date; end: Date } {
  return {
    start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)),
  }
}

type PlatformContext = Context<FamilyEnv<PlatformEnv>>

async function readWorkspace(c: PlatformContext, identity: Identity) {
  const subject = identity.principal.kind === 'access_token' ? parseSubject(identity.principal.subject) : null
  const { tenant, user } = await withRequestDatabase(c, 'platform', async (db) => {
    const [tenant] = await db
      .select({ name: tenants.name, planId: tenants.planId })
      .from(tenants)
      .where(eq(tenants.id, identity.tenantId))
    const [user] =
      subject?.kind === 'user'
        ? await db
            .select({ id: users.id, email: users.email, displayName: users.displayName })
            .from(users)
            .where(eq(users.id, subject.id))
        : []
    return { tenant, user }
  })
  if (!tenant) throw new AppError(404, 'workspace_not_found', 'This workspace no longer exists.')
  const plan = getPlan(tenant.planId, planCatalogFromEnv(c.env))
  return {
    object: 'workspace' as const,
    id: identity.tenantId,
    name: tenant.name,
    plan: { id: tenant.planId, name: plan?.name ?? tenant.planId },
    role: identity.role,
    principal: actorOf(identity),
    user: user ? { id: user.id, email: user.email, display_name: user.displayName } : null,
  }
}

async function readBilling(c: PlatformContext, identity: Identity) {
  const now = new Date()
  const period = periodAt(now)
  const { planId, balance } = await withRequestDatabase(c, 'platform', async (db) => {
    const [tenant] = await db
      .select({ planId: tenants.planId })
      .from(tenants)
      .where(eq(tenants.id, identity.tenantId))
    const [balance] = await db
      .select()
      .from(tenantBalances)
      .where(eq(tenantBalances.tenantId, identity.tenantId))
    return { planId: tenant?.planId ?? identity.planId, balance }
  })
  const { plan } = resolvePlan(c.env, planId)
  // A row of an earlier month is rolled over by the metering on the next request: show it as such.
  const current = balance !== undefined && balance.periodStart >= period.start
  const used = current ? balance.tokensUsed : 0
  const credits = balance ? Number(balance.creditsBalanceCents) : plan.includedCreditsCents
  const spendCap = balance?.spendCapCents ?? null
  return {
    object: 'billing' as const,
    plan: renderPlan(plan),
    period: { start: period.start.toISOString(), end: period.end.toISOString() },
    tokens_used: used,
    tokens_remaining:
      plan.monthlyTokenAllowance === null ? null : Math.max(0, plan.monthlyTokenAllowance - used),
    credits_balance_cents: current ? credits : Math.max(credits, plan.includedCreditsCents),
    overage_cents: current ? Number(balance.overageCents) : 0,
    usage_credits_enabled: balance?.usageCreditsEnabled ?? false,
    spend_cap_cents: spendCap,
    effective_spend_cap_cents: spendCap ?? plan.overageCapCents,
    updated_at: balance?.updatedAt.toISOString() ?? null,
  }
}

export function workspaceRoutes(app: OpenAPIHono<FamilyEnv<PlatformEnv>>): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/workspace',
      tags: TAGS,
      summary: 'The workspace of the credential, its plan, and who is calling with which role',
      responses: {
        200: { description: 'Workspace', content: { 'application/json': { schema: WorkspaceSchema } } },
      },
    }),
    async (c) => c.json(await readWorkspace(c, identityOf(c)), 200),
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/plans',
      tags: TAGS,
      summary: "The deployment's plan catalog, cheapest first, and the workspace's current plan",
      responses: {
        200: { description: 'Plans', content: { 'application/json': { schema: PlanListSchema } } },
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      const catalog = planCatalogFromEnv(c.env)
      const plans = [...catalog.plans].sort((a, b) => a.rank - b.rank)
      return c.json(
        {
          object: 'list' as const,
          catalog_version: catalog.version,
          current_plan: identity.planId,
          data: plans.map(renderPlan),
        },
        200,
      )
    },
  )

  app.openapi(
    createRoute({
      method: 'get',
      path: '/platform/v1/billing',
      tags: TAGS,
      summary: "This period's allowance used and remaining, credits, overage and spend cap",
      description:
        'Figures are those the metering flushed to Postgres (within RATE_LIMIT_LEDGER_FLUSH_MS of each request). Test-mode usage is never billed and not counted here.',
      responses: {
        200: { description: 'Billing', content: { 'application/json': { schema: BillingSchema } } },
      },
    }),
    async (c) => c.json(await readBilling(c, identityOf(c)), 200),
  )

  app.openapi(
    createRoute({
      method: 'patch',
      path: '/platform/v1/billing',
      tags: TAGS,
      summary: 'Switch usage credits on or off, set the spend cap (owners and admins)',
      request: { body: { required: true, content: { 'application/json': { schema: BillingPatchSchema } } } },
      responses: {
        200: { description: 'Updated', content: { 'application/json': { schema: BillingSchema } } },
        403: errorResponse('insufficient_role'),
        409: errorResponse('usage_credits_unavailable: the plan has no usage credits'),
      },
    }),
    async (c) => {
      const identity = requireAdmin(c, 'change billing settings')
      const body = c.req.valid('json')
      const { plan } = resolvePlan(c.env, identity.planId)
      if (body.usage_credits_enabled === true && !plan.usageCredits) {
        throw new AppError(
          409,
          'usage_credits_unavailable',
          `The ${plan.name} plan has no usage credits; upgrade to a plan that has them first.`,
          { param: 'usage_credits_enabled' },
        )
      }
      const set: Partial<typeof tenantBalances.$inferInsert> = { updatedAt: new Date() }
      if (body.usage_credits_enabled !== undefined) set.usageCreditsEnabled = body.usage_credits_enabled
      if (body.spend_cap_cents !== undefined) set.spendCapCents = body.spend_cap_cents
      const period = periodAt(new Date())
      await withRequestDatabase(c, 'platform', (db) =>
        db
          .insert(tenantBalances)
          .values({
            tenantId: identity.tenantId,
            periodStart: period.start,
            creditsBalanceCents: String(plan.includedCreditsCents),
            ...set,
          })
          .onConflictDoUpdate({ target: tenantBalances.tenantId, set }),
      )
      await recordAuditEvent(c, {
        kind: 'billing.changed',
        ...(body.usage_credits_enabled === undefined
          ? {}
          : { usage_credits_enabled: body.usage_credits_enabled }),
        ...(body.spend_cap_cents === undefined ? {} : { spend_cap_cents: body.spend_cap_cents }),
        actor: actorOf(identity),
        request_id: c.get('request').requestId,
      })
      return c.json(await readBilling(c, identity), 200)
    },
  )

  app.openapi(
    createRoute({
      method: 'post',
      path: '/platform/v1/billing/plan',
      tags: TAGS,
      summary: 'Switch the workspace to another self-serve plan (owners)',
      description:
        'Takes effect for new requests within API_KEY_CACHE_TTL_SECONDS (the gateway caches each credential with its plan). Contract-priced plans: 409 contact_sales_required.',
      request: { body: { required: true, content: { 'application/json': { schema: PlanChangeSchema } } } },
      responses: {
        200: { description: 'Changed', content: { 'application/json': { schema: WorkspaceSchema } } },
        403: errorResponse('insufficient_role: owners only'),
        404: errorResponse('plan_not_found'),
        409: errorResponse('contact_sales_required'),
      },
    }),
    async (c) => {
      const identity = identityOf(c)
      if (identity.role !== 'owner') {
        throw new AppError(
          403,
          'insufficient_role',
          `Only workspace owners may change the plan; this credential has role "${identity.role}".`,
        )
      }
      const { plan_id: planId } = c.req.valid('json')
      const target = getPlan(planId, planCatalogFromEnv(c.env))
      if (!target) {
        throw new AppError(
          404,
          'plan_not_found',
          `There is no plan "${planId}"; see GET /platform/v1/plans.`,
          {
            param: 'plan_id',
          },
        )
      }
      if (target.monthlyPriceCents === null) {
        throw new AppError(
          409,
          'contact_sales_required',
          `The ${target.name} plan is priced by contract; contact sales to move to it.`,
          { param: 'plan_id' },
        )
      }
      const previous = await withRequestDatabase(c, 'platform', async (db) => {
        const [row] = await db
          .select({ planId: tenants.planId })
          .from(tenants)
          .where(eq(tenants.id, identity.tenantId))
        await db.update(tenants).set({ planId: target.id }).where(eq(tenants.id, identity.tenantId))
        // The new plan's included credits are available at once (never lowering a balance).
        await db.execute(sql`
          update tenant_balances set credits_balance_cents = greatest(credits_balance_cents, ${target.includedCreditsCents}::numeric)
          where tenant_id = ${identity.tenantId}::uuid`)
        return row?.planId ?? identity.planId
      })
      await recordAuditEvent(c, {
        kind: 'billing.changed',
        plan_id: target.id,
        previous_plan_id: previous,
        actor: actorOf(identity),
        request_id: c.get('request').requestId,
      })
      return c.json(await readWorkspace(c, { ...identity, planId: target.id }), 200)
    },
  )
}
