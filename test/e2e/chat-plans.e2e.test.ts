/**
 * Plans, entitlements, rate limits and the usage ledger over HTTP: every upgrade reason a chat
 * completion can hit (body checked against the closed JSON Schema written from the spec's
 * tables), exact rate limits under concurrency, and the ledger in Postgres.
 */
import { Validator } from '@cfworker/json-schema'
import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { flushLedger } from '../../durable-objects/rate-limiter/metering-store.ts'
import { getPlan, PLAN_CATALOG } from '../../shared/plans/plan-catalog.ts'
import upgradeDecisionSchema from '../../shared/plans/upgrade-decision.schema.json'
import { UPGRADE_REASON_STATUS, type UpgradeReason } from '../../shared/plans/upgrade-decision.ts'
import { countPromptTokens } from '../../shared/providers/tokenizer.ts'
import {
  type BalancePreset,
  balanceOf,
  chat,
  createWorkspace,
  ledgerRows,
  stack,
  tag,
  waitForLedger,
  withDatabase,
} from './chat-fixtures.ts'

const validator = new Validator(upgradeDecisionSchema as object, '2020-12', false)
const user = (content: string) => [{ role: 'user' as const, content }]
const RATE_HEADERS = [
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-tokens',
]

interface Case {
  reason: UpgradeReason
  plan: string
  preset?: BalancePreset
  body: Record<string, unknown>
  requiredPlan: string | null
  param: string | null
}

const cases: Case[] = [
  {
    reason: 'model_access_required',
    plan: 'free',
    body: { model: 'svc-hive', messages: user('x') },
    requiredPlan: 'team',
    param: 'model',
  },
  {
    reason: 'feature_required',
    plan: 'free',
    body: { model: 'svc-cell', reasoning_effort: 'high', messages: user('x') },
    requiredPlan: 'pro',
    param: 'reasoning_effort',
  },
  {
    reason: 'context_limit_reached',
    plan: 'free',
    body: { model: 'svc-cell', max_tokens: 20_000, messages: user('x') },
    requiredPlan: 'pro',
    param: 'messages',
  },
  {
    reason: 'token_allowance_exhausted',
    plan: 'free',
    preset: { tokensUsed: 200_000 },
    body: { model: 'svc-cell', messages: user('x') },
    requiredPlan: 'pro',
    param: null,
  },
  {
    reason: 'tier_allowance_exhausted',
    plan: 'team',
    preset: { modelTokens: { 'svc-hive': 2_000_000 } },
    body: { model: 'svc-hive', messages: user('x') },
    // Enterprise has svc-hive without a per-model cap.
    requiredPlan: 'enterprise',
    param: null,
  },
  {
    reason: 'insufficient_credits',
    plan: 'pro',
    preset: { tokensUsed: 5_000_000, usageCreditsEnabled: true, creditsCents: '0' },
    body: { model: 'svc-cell', messages: user('x') },
    requiredPlan: null,
    param: null,
  },
  {
    reason: 'overage_cap_reached',
    plan: 'pro',
    preset: { tokensUsed: 5_000_000, usageCreditsEnabled: true, creditsCents: '1000', overageCents: '5000' },
    body: { model: 'svc-cell', messages: user('x') },
    requiredPlan: 'team',
    param: null,
  },
]

describe(`chat plans: upgrade decisions over HTTP (${stack.kind})`, () => {
  it.each(cases)('$reason: status, headers and the closed action-required body', async (c) => {
    const workspace = await createWorkspace(c.plan, c.preset)
    const res = await chat(workspace.liveKey, c.body)
    expect(res.status).toBe(UPGRADE_REASON_STATUS[c.reason])
    expect(res.headers.get('x-should-retry')).toBe('false')
    for (const name of RATE_HEADERS) expect(res.headers.get(name), name).not.toBeNull()
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe(
      String(getPlan(c.plan, PLAN_CATALOG)?.requestsPerMinute),
    )
    const body = (await res.json()) as {
      error: Record<string, unknown>
      svc_upgrade: Record<string, unknown>
    }
    const validation = validator.validate(body)
    expect(validation.errors).toEqual([])
    expect(body.error.code).toBe(c.reason)
    expect(body.error.param).toBe(c.param)
    expect(body.svc_upgrade).toMatchObject({
      schema_version: '2026-07-31',
      reason: c.reason,
      current_plan: c.plan,
      required_plan: c.requiredPlan,
    })
    // Clients that show only the message: it alone must say what happened and what to do.
    expect(String(body.error.message).length).toBeGreaterThan(40)
  })

  it('context_limit_reached counts the prompt with the real tokenizer and offers compact_context / new_conversation', async () => {
    const workspace = await createWorkspace('free')
    const messages = user('hello world '.repeat(9_000))
    const res = await chat(workspace.liveKey, { model: 'svc-cell', messages })
    expect(res.status).toBe(403)
    const body = await res.json()
    expect(body.svc_upgrade.binding_limit).toEqual({
      kind: 'context',
      unit: 'tokens',
      used: countPromptTokens(messages),
      limit: 16_000,
      remaining: 0,
    })
    const actions = body.svc_upgrade.actions as { kind: string; available: boolean }[]
    expect(actions.filter((a) => a.available).map((a) => a.kind)).toEqual([
      'compact_context',
      'new_conversation',
      'upgrade_plan',
    ])
  })

  it('the same refusal is not retried with a test key: test mode skips the allowance but keeps model access', async () => {
    const workspace = await createWorkspace('free', { tokensUsed: 200_000 })
    expect((await chat(workspace.testKey, { model: 'svc-cell', messages: user('x') })).status).toBe(200)
    expect((await chat(workspace.testKey, { model: 'svc-hive', messages: user('x') })).status).toBe(403)
  })
})

describe(`chat plans: rate limits under concurrency (${stack.kind})`, () => {
  it('30 parallel requests against 20 requests/min: exactly 20 succeed, each refusal is a retryable 429', async () => {
    const workspace = await createWorkspace('free')
    const t = tag()
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        chat(workspace.liveKey, { model: 'svc-cell', messages: user(`${i} ${t}`) }),
      ),
    )
    const ok = responses.filter((r) => r.status === 200)
    const refused = responses.filter((r) => r.status === 429)
    expect(ok).toHaveLength(20)
    expect(refused).toHaveLength(10)
    expect(
      ok.map((r) => Number(r.headers.get('x-ratelimit-remaining-requests'))).sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 20 }, (_, i) => i))
    for (const r of refused) {
      const body = await r.json()
      expect(body.error.code).toBe('rate_limited')
      expect(body.error.type).toBe('rate_limit_error')
      expect(validator.validate(body).valid).toBe(true)
      expect(r.headers.get('x-should-retry')).toBeNull()
      const retryAfter = Number(r.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(60)
      expect(body.svc_upgrade.binding_limit).toMatchObject({ kind: 'rate', unit: 'requests', limit: 20 })
    }

    // Every admitted request is in the ledger once, with its request id; refusals are not.
    const admitted = ok.map((r) => r.headers.get('x-request-id'))
    const rows = await waitForLedger(workspace.tenantId, (r) => r.length >= 20)
    expect(rows.map((r) => r.request_id).sort()).toEqual([...admitted].sort())
    expect(new Set(rows.map((r) => r.mode))).toEqual(new Set(['live']))
    const tokens = rows.reduce((sum, r) => sum + r.prompt_tokens + r.completion_tokens, 0)
    await expect.poll(async () => Number((await balanceOf(workspace.tenantId)).tokens_used)).toBe(tokens)
  })

  it('test keys are metered in the ledger with mode test and zero credits, and never touch the balance', async () => {
    const workspace = await createWorkspace('pro', {
      tokensUsed: 5_000_000,
      usageCreditsEnabled: true,
      creditsCents: '50',
    })
    const res = await chat(workspace.testKey, { model: 'svc-cell', messages: user('free of charge') })
    expect(res.status).toBe(200)
    const requestId = res.headers.get('x-request-id')
    const [row] = await waitForLedger(workspace.tenantId, (r) => r.length === 1)
    expect(row).toMatchObject({
      request_id: requestId,
      mode: 'test',
      provider: 'svc-test-mode',
      credits_cents: '0.0000',
    })
    expect(await balanceOf(workspace.tenantId)).toMatchObject({
      tokens_used: '5000000',
      credits_balance_cents: '50.0000',
    })
  })
})

describe(`chat plans: the ledger in Postgres (${stack.kind})`, () => {
  it('a replayed flush inserts nothing and adds nothing to the balance (alarms are at-least-once)', async () => {
    const workspace = await createWorkspace('pro', {
      tokensUsed: 5_000_000,
      usageCreditsEnabled: true,
      creditsCents: '100',
    })
    const pro = getPlan('pro', PLAN_CATALOG)!
    const now = Date.now()
    const entries = [1, 2].map((i) => ({
      reservationId: crypto.randomUUID(),
      requestId: `replay-${i}-${crypto.randomUUID()}`,
      createdAt: now,
      principal: 'key:replay',
      mode: 'live' as const,
      endpoint: 'chat.completions',
      model: 'svc-cell' as const,
      provider: 'fake',
      promptTokens: 100 * i,
      completionTokens: 10,
      cachedTokens: 0,
      reasoningTokens: 0,
      unit: 'tokens' as const,
      quantity: 100 * i + 10,
      creditsUnits: 12_345 * i,
      estimated: false,
      status: 200,
      latencyMs: 100 * i,
    }))
    const first = await withDatabase((db) => flushLedger(db, workspace.tenantId, 'live', entries, pro, now))
    const replay = await withDatabase((db) => flushLedger(db, workspace.tenantId, 'live', entries, pro, now))
    expect(replay).toEqual(first)
    expect(first).toMatchObject({
      tokensUsed: 5_000_000 + 320,
      overageUnits: 37_035,
      creditsUnits: 1_000_000 - 37_035,
    })
    const rows = await ledgerRows(workspace.tenantId)
    expect(rows.map((r) => r.credits_cents)).toEqual(['1.2345', '2.4690'])

    // The same request id at another time is another request (ids are the caller's x-request-id).
    const later = { ...entries[0]!, reservationId: crypto.randomUUID(), createdAt: now + 5_000 }
    const reused = await withDatabase((db) => flushLedger(db, workspace.tenantId, 'live', [later], pro, now))
    expect(reused?.tokensUsed).toBe(5_000_000 + 320 + 110)
    expect((await ledgerRows(workspace.tenantId)).map((r) => r.request_id)).toContain(
      `${later.requestId}~${later.createdAt}`,
    )
    // Status and latency reach Postgres on both paths, the renamed row's included.
    const logged = await withDatabase((db) =>
      db.execute<{ request_id: string; status: number | null; latency_ms: number | null }>(
        sql`select request_id, status, latency_ms from usage_ledger where tenant_id = ${workspace.tenantId}::uuid and principal <> 'seed' order by latency_ms, request_id`,
      ),
    )
    expect(logged.rows.map((r) => [r.request_id, r.status, r.latency_ms])).toEqual([
      [entries[0]!.requestId, 200, 100],
      [`${later.requestId}~${later.createdAt}`, 200, 100],
      [entries[1]!.requestId, 200, 200],
    ])
  })

  it('two requests sent with the same x-request-id are both metered', async () => {
    const workspace = await createWorkspace('team')
    const requestId = `client-${crypto.randomUUID()}`
    for (const text of ['first', 'second']) {
      const res = await chat(
        workspace.liveKey,
        { model: 'svc-cell', messages: user(text) },
        { 'x-request-id': requestId },
      )
      expect(res.status).toBe(200)
      expect(res.headers.get('x-request-id')).toBe(requestId)
    }
    const rows = await waitForLedger(workspace.tenantId, (r) => r.length === 2)
    expect(rows[0]?.request_id).toBe(requestId)
    expect(rows[1]?.request_id).toMatch(new RegExp(`^${requestId}~[0-9a-f]{8}$`))
    const tokens = rows.reduce((sum, r) => sum + r.prompt_tokens + r.completion_tokens, 0)
    await expect.poll(async () => Number((await balanceOf(workspace.tenantId)).tokens_used)).toBe(tokens)
  })
})
