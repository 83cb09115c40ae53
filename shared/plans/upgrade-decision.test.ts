import { Validator } from '@cfworker/json-schema'
import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import {
  checkChatEntitlements,
  checkContextLimit,
  checkDocumentAllowance,
  checkDomainAccess,
  checkFeatureAccess,
  checkModelAccess,
  checkModelAllowance,
  checkTokenAllowance,
  rateLimitedDecision,
} from './entitlements'
import {
  type BillingPlan,
  getPlan,
  PLAN_CATALOG,
  PLAN_CATALOG_CONFIG,
  parsePlanCatalog,
  planCatalogFromEnv,
} from './plan-catalog'
import {
  ActionRequiredBodySchema,
  actionRequiredError,
  UPGRADE_REASON_STATUS,
  UPGRADE_REASONS,
  type UpgradeDecision,
  type UpgradeReason,
} from './upgrade-decision'
import schema from './upgrade-decision.schema.json'

const o = { catalog: PLAN_CATALOG }
const plan = (id: string): BillingPlan => {
  const found = getPlan(id, PLAN_CATALOG)
  if (!found) throw new Error(`no plan ${id}`)
  return found
}
const free = plan('free')
const pro = plan('pro')
const team = plan('team')
const validator = new Validator(schema as object, '2020-12', false)
const resetsAt = '2026-09-01T00:00:00Z'
const exhausted = { usedTokens: 5_000_000, resetsAt, creditBalanceCents: 1_000, overageSpentCents: 0 }

/** One real decision per reason, each produced by the check that owns it. */
const decisions: Record<UpgradeReason, UpgradeDecision | null> = {
  model_access_required: checkModelAccess(free, 'svc-hive', o),
  domain_tier_required: checkDomainAccess(pro, 'security', o),
  feature_required: checkFeatureAccess(free, 'thinking', o),
  token_allowance_exhausted: checkTokenAllowance(pro, { ...exhausted, usageCreditsEnabled: false }, o),
  tier_allowance_exhausted: checkModelAllowance(team, 'svc-hive', { usedTokens: 2_000_000, resetsAt }, o),
  insufficient_credits: checkTokenAllowance(
    pro,
    {
      ...exhausted,
      usageCreditsEnabled: true,
      creditBalanceCents: 0,
    },
    o,
  ),
  overage_cap_reached: checkTokenAllowance(
    pro,
    {
      ...exhausted,
      usageCreditsEnabled: true,
      overageSpentCents: 5_000,
    },
    o,
  ),
  context_limit_reached: checkContextLimit(
    free,
    { model: 'svc-cell', promptTokens: 15_000, maxOutputTokens: 4_000 },
    o,
  ),
  rate_limited: rateLimitedDecision(
    free,
    {
      unit: 'requests',
      used: 21,
      retryAfterSeconds: 2.4,
      resetsAt: null,
    },
    o,
  ),
}

describe('upgrade decisions', () => {
  it.each(UPGRADE_REASONS)(
    '%s: the action-required body validates against the closed JSON Schema',
    (reason) => {
      const decision = decisions[reason]
      expect(decision?.reason).toBe(reason)
      if (!decision) return
      const err = actionRequiredError(decision, o)
      expect(err.status).toBe(UPGRADE_REASON_STATUS[reason])
      expect(err.code).toBe(reason)
      const body = JSON.parse(JSON.stringify(err.toBody())) as Record<string, unknown>
      const result = validator.validate(body)
      expect(result.errors).toEqual([])
      expect(result.valid).toBe(true)
      expect(ActionRequiredBodySchema.safeParse(body).success).toBe(true)
      expect(body.svc_upgrade).toEqual(decision)
    },
  )

  it('the JSON Schema is closed: an extra field on the decision, the limit or an action is rejected', () => {
    const decision = decisions.rate_limited
    if (!decision) throw new Error('missing decision')
    const body = { error: {}, svc_upgrade: decision, extra_top_level: true }
    expect(validator.validate(body).valid).toBe(true)
    expect(validator.validate({ ...body, svc_upgrade: { ...decision, surprise: 1 } }).valid).toBe(false)
    expect(
      validator.validate({
        ...body,
        svc_upgrade: { ...decision, binding_limit: { ...decision.binding_limit, x: 1 } },
      }).valid,
    ).toBe(false)
    const actions = decision.actions.map((a, i) => (i === 0 ? { ...a, x: 1 } : a))
    expect(validator.validate({ ...body, svc_upgrade: { ...decision, actions } }).valid).toBe(false)
    expect(
      validator.validate({ ...body, svc_upgrade: { ...decision, schema_version: '2026-01-01' } }).valid,
    ).toBe(false)
    expect(validator.validate({ ...body, svc_upgrade: { ...decision, reason: 'other' } }).valid).toBe(false)
    const { required_plan: _required, ...withoutRequired } = decision
    expect(validator.validate({ ...body, svc_upgrade: withoutRequired }).valid).toBe(false)
    expect(validator.validate({ svc_upgrade: decision }).valid).toBe(false)
    expect(() => actionRequiredError({ ...decision, surprise: 1 } as UpgradeDecision, o)).toThrow()
  })

  it('names the cheapest plan that would allow the request, or null', () => {
    expect(decisions.model_access_required?.required_plan).toBe('team')
    expect(decisions.feature_required?.required_plan).toBe('pro')
    expect(decisions.domain_tier_required?.required_plan).toBe('enterprise')
    expect(decisions.context_limit_reached?.required_plan).toBe('pro')
    expect(decisions.insufficient_credits?.required_plan).toBeNull()
    expect(checkModelAccess(team, 'svc-swarm', o)?.required_plan).toBe('enterprise')
    expect(
      checkContextLimit(plan('enterprise'), { model: 'svc-swarm', promptTokens: 2_000_000 }, o)
        ?.required_plan,
    ).toBeNull()
  })

  it('sends x-should-retry: false on 402/403 and allowance 429s, and Retry-After <= 60 s on transient 429s', () => {
    for (const reason of UPGRADE_REASONS) {
      const decision = decisions[reason]
      if (!decision) throw new Error(reason)
      const headers = actionRequiredError(decision, o).headers
      if (reason === 'rate_limited') {
        expect(headers['retry-after']).toBe('3')
        expect(headers['x-should-retry']).toBeUndefined()
      } else {
        expect(headers['x-should-retry']).toBe('false')
        expect(headers['retry-after']).toBeUndefined()
      }
    }
    const long = rateLimitedDecision(free, { unit: 'tokens', used: 50_000, retryAfterSeconds: 600 }, o)
    expect(actionRequiredError(long, o).headers['retry-after']).toBe('60')
  })

  it('mirrors the key facts in error.message, for clients that show only the message', async () => {
    const model = actionRequiredError(decisions.model_access_required!, o)
    expect(model.message).toBe(
      'Model svc-hive is not included in the Free plan. To continue: upgrade to the team plan at https://console.svc.example/billing/plans?plan=team, or contact sales.',
    )
    expect(model.type).toBe('permission_error')
    const allowance = actionRequiredError(decisions.token_allowance_exhausted!, o)
    expect(allowance.message).toContain(
      'monthly token allowance is used up (5000000 of 5000000 tokens); it resets at 2026-09-01T00:00:00Z',
    )
    expect(allowance.message).toContain('enable usage credits')
    expect(allowance.type).toBe('insufficient_quota')
    expect(actionRequiredError(decisions.rate_limited!, o).message).toContain(
      '20 requests per minute on the Free plan; retry in 3 s',
    )
    expect(actionRequiredError(decisions.context_limit_reached!, o).message).toContain(
      'needs 19000 context tokens but the Free plan allows 16000',
    )

    const response = actionRequiredError(decisions.insufficient_credits!, o).toResponse('req_1')
    expect(response.status).toBe(402)
    expect(response.headers.get('x-should-retry')).toBe('false')
    const body = (await response.json()) as { error: { code: string }; svc_upgrade: UpgradeDecision }
    expect(body.error.code).toBe('insufficient_credits')
    expect(body.svc_upgrade.actions.map((a) => a.kind)).toEqual(['add_credits', 'upgrade_plan'])
  })

  it("writes the reset time in the message as ISO 8601 exactly (only a label's first letter is lowered)", () => {
    const overage = actionRequiredError(decisions.overage_cap_reached!, o)
    expect(overage.status).toBe(402)
    expect(overage.message).toContain(`or retry after ${resetsAt}.`)
    expect(overage.message).toContain('or raise the spend cap')
    expect(overage.message).not.toMatch(/\d{2}t\d{2}:/)
  })

  it('carries the decision inside error as well, where the openai SDK keeps it', () => {
    for (const reason of UPGRADE_REASONS) {
      const decision = decisions[reason]!
      const body = actionRequiredError(decision, o).toBody() as {
        error: { svc_upgrade?: UpgradeDecision; code: string }
        svc_upgrade: UpgradeDecision
      }
      expect(body.svc_upgrade).toEqual(decision)
      expect(body.error.svc_upgrade).toEqual(decision)
      expect(body.error.code).toBe(reason)
    }
    const plain = new AppError(400, 'invalid_request', 'x').toBody() as { error: Record<string, unknown> }
    expect(Object.keys(plain.error).sort()).toEqual(['code', 'message', 'param', 'type'])
  })

  it('offers actions with honest availability', () => {
    const onFree = decisions.token_allowance_exhausted
    const freeExhausted = checkTokenAllowance(
      free,
      {
        ...exhausted,
        usedTokens: 200_000,
        usageCreditsEnabled: false,
      },
      o,
    )
    expect(freeExhausted?.actions.find((a) => a.kind === 'enable_usage_credits')?.available).toBe(false)
    expect(onFree?.actions.find((a) => a.kind === 'enable_usage_credits')?.available).toBe(true)
    const toEnterprise = decisions.domain_tier_required?.actions.find((a) => a.kind === 'upgrade_plan')
    expect(toEnterprise).toEqual({
      kind: 'upgrade_plan',
      label: 'Upgrade to Enterprise',
      available: false,
      url: null,
      plan_id: 'enterprise',
    })
    expect(decisions.rate_limited?.actions[0]).toEqual({
      kind: 'retry_later',
      label: 'Retry in 3 s',
      available: true,
      url: null,
    })
    expect(decisions.context_limit_reached?.actions.map((a) => a.kind)).toEqual([
      'compact_context',
      'new_conversation',
      'upgrade_plan',
    ])
  })
})

describe('entitlement checks', () => {
  it('allow what the plan includes', () => {
    expect(checkModelAccess(free, 'svc-cell', o)).toBeNull()
    expect(checkFeatureAccess(pro, 'thinking', o)).toBeNull()
    expect(checkDomainAccess(team, 'research', o)).toBeNull()
    expect(
      checkContextLimit(free, { model: 'svc-cell', promptTokens: 12_000, maxOutputTokens: 4_000 }, o),
    ).toBeNull()
    expect(
      checkTokenAllowance(pro, { ...exhausted, usedTokens: 4_999_999, usageCreditsEnabled: false }, o),
    ).toBeNull()
    expect(checkTokenAllowance(pro, { ...exhausted, usageCreditsEnabled: true }, o)).toBeNull() // billed as overage
    expect(
      checkTokenAllowance(
        plan('enterprise'),
        {
          ...exhausted,
          usedTokens: 10 ** 12,
          usageCreditsEnabled: false,
        },
        o,
      ),
    ).toBeNull()
    expect(checkModelAllowance(team, 'svc-comb', { usedTokens: 10 ** 9, resetsAt }, o)).toBeNull()
    expect(checkDocumentAllowance(pro, 99, o)).toBeNull()
  })

  it('checks a chat request: model, then thinking for reasoning_effort, then context', () => {
    expect(
      checkChatEntitlements(free, { model: 'svc-comb', reasoning_effort: 'low', promptTokens: 10 ** 6 }, o)
        ?.reason,
    ).toBe('model_access_required')
    const thinking = checkChatEntitlements(
      free,
      {
        model: 'svc-cell',
        reasoning_effort: 'low',
        promptTokens: 10,
      },
      o,
    )
    expect(thinking).toMatchObject({
      reason: 'feature_required',
      requested_feature: 'thinking',
      requested_model: 'svc-cell',
    })
    expect(checkChatEntitlements(free, { model: 'svc-cell', promptTokens: 20_000 }, o)?.reason).toBe(
      'context_limit_reached',
    )
    expect(
      checkChatEntitlements(pro, { model: 'svc-comb', reasoning_effort: 'high', promptTokens: 20_000 }, o),
    ).toBeNull()
  })

  it("holds the context to the smaller of the plan's limit and the model's own window", () => {
    // svc-cell's window is 131,072 tokens; Team allows 256,000: the model binds, and no plan helps.
    const decision = checkChatEntitlements(team, { model: 'svc-cell', promptTokens: 150_000 }, o)
    expect(decision).toMatchObject({
      reason: 'context_limit_reached',
      current_plan: 'team',
      required_plan: null,
      requested_model: 'svc-cell',
      binding_limit: { kind: 'context', unit: 'tokens', used: 150_000, limit: 131_072, remaining: 0 },
    })
    expect(actionRequiredError(decision!, o).message).toContain(
      "needs 150000 context tokens but svc-cell's context window is 131072 tokens",
    )
    expect(decision?.actions.find((a) => a.kind === 'upgrade_plan')?.available).toBe(false)
    // Within the model's window the plan still decides, and names the plan that fits.
    expect(checkChatEntitlements(pro, { model: 'svc-comb', promptTokens: 200_000 }, o)).toMatchObject({
      reason: 'context_limit_reached',
      required_plan: 'team',
      binding_limit: { limit: 128_000 },
    })
    expect(checkChatEntitlements(team, { model: 'svc-cell', promptTokens: 131_072 }, o)).toBeNull()
  })

  it('checks the document allowance as a tier allowance in documents', () => {
    const decision = checkDocumentAllowance(pro, 100, o)
    expect(decision).toMatchObject({ reason: 'tier_allowance_exhausted', required_plan: 'team' })
    expect(decision?.binding_limit).toEqual({
      kind: 'documents',
      unit: 'documents',
      used: 100,
      limit: 100,
      remaining: 0,
    })
    expect(actionRequiredError(decision!, o).status).toBe(429)
  })
})

describe('plan catalog', () => {
  it('is validated at isolate start and rejects inconsistent configuration', () => {
    expect(PLAN_CATALOG.plans.map((p) => p.id)).toEqual(['free', 'pro', 'team', 'enterprise'])
    const duplicateRank = {
      ...PLAN_CATALOG_CONFIG,
      plans: PLAN_CATALOG_CONFIG.plans.map((p) => ({ ...p, rank: 1 })),
    }
    expect(() => parsePlanCatalog(duplicateRank)).toThrow(/duplicate rank/)
    const stray = {
      ...PLAN_CATALOG_CONFIG,
      plans: PLAN_CATALOG_CONFIG.plans.map((p) =>
        p.id === 'free' ? { ...p, modelAllowances: { 'svc-swarm': 5 } } : p,
      ),
    }
    expect(() => parsePlanCatalog(stray)).toThrow(/not in models/)
    expect(() =>
      parsePlanCatalog({ ...PLAN_CATALOG_CONFIG, plans: [{ ...PLAN_CATALOG_CONFIG.plans[0], seats: 3 }] }),
    ).toThrow()
  })

  it('returns AppError instances usable by every worker', () => {
    expect(actionRequiredError(decisions.feature_required!, o)).toBeInstanceOf(AppError)
  })
})

describe('upgrade links point at the deployment console (CONSOLE_URL)', () => {
  it("every action URL of every reason starts with the deployment's console", () => {
    const catalog = planCatalogFromEnv({ CONSOLE_URL: 'https://api.example.com/console/' })
    expect(catalog.consoleUrl).toBe('https://api.example.com/console')
    const paths = new Set<string>()
    for (const decision of [
      checkModelAccess(free, 'svc-hive', { catalog })!,
      checkTokenAllowance(
        free,
        {
          usedTokens: 200_000,
          resetsAt: '2026-12-01T00:00:00Z',
          usageCreditsEnabled: false,
          creditBalanceCents: 0,
          overageSpentCents: 0,
        },
        { catalog },
      )!,
      checkModelAllowance(
        pro,
        'svc-buzz',
        { usedTokens: 1_000_000, resetsAt: '2026-12-01T00:00:00Z', usageCreditsEnabled: false },
        { catalog },
      )!,
    ]) {
      for (const action of decision.actions) {
        if (action.url === null) continue
        expect(action.url.startsWith('https://api.example.com/console/')).toBe(true)
        paths.add(new URL(action.url).pathname)
      }
    }
    // The console serves each of these (functions/console/src/pages/plans.tsx).
    for (const path of paths) {
      expect([
        '/console/billing/plans',
        '/console/billing/usage-credits',
        '/console/billing/add-ons',
        '/console/contact-sales',
      ]).toContain(path)
    }
    expect(planCatalogFromEnv({})).toBe(PLAN_CATALOG)
  })

  it('refuses a CONSOLE_URL that is not an http(s) URL, as a misconfiguration', () => {
    expect(() => planCatalogFromEnv({ CONSOLE_URL: 'console.example.com' })).toThrowError(
      expect.objectContaining({ status: 503, code: 'plan_catalog_invalid' }),
    )
  })
})
