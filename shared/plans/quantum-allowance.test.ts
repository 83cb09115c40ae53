/** The quantum allowance: `real_qpu` jobs per month, a paid tool gated by the feature of that name. */
import { describe, expect, it } from 'vitest'
import { toolCostUnits } from '../metering/pricing'
import { checkToolAllowance } from './entitlements'
import { getPlan, PLAN_CATALOG } from './plan-catalog'

const o = { catalog: PLAN_CATALOG }
const enterprise = getPlan('enterprise', PLAN_CATALOG)!

describe('the quantum allowance (real_qpu)', () => {
  it('admits real-hardware jobs within the plan allowance', () => {
    expect(enterprise.features).toContain('real_qpu')
    expect(
      checkToolAllowance(
        enterprise,
        'real_qpu',
        { used: 99, resetsAt: null, usageCreditsEnabled: false, creditBalanceCents: 0, overageSpentCents: 0 },
        o,
      ),
    ).toBeNull()
  })
  it('refuses once used up without usage credits: tier_allowance_exhausted counted in QPU jobs', () => {
    const decision = checkToolAllowance(
      enterprise,
      'real_qpu',
      {
        used: 100,
        resetsAt: '2026-12-01T00:00:00.000Z',
        usageCreditsEnabled: false,
        creditBalanceCents: 0,
        overageSpentCents: 0,
      },
      o,
    )
    expect(decision).toMatchObject({
      reason: 'tier_allowance_exhausted',
      requested_feature: 'real_qpu',
      binding_limit: { kind: 'requests', unit: 'requests', used: 100, limit: 100, remaining: 0 },
    })
  })
  it('a QPU job beyond the allowance is priced at the list price', () => {
    expect(toolCostUnits(PLAN_CATALOG, 'real_qpu', 1)).toBe(toolCostUnits(PLAN_CATALOG, 'web_search', 660))
  })
})
