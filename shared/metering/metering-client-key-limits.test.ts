/**
 * What the metering client does for a key with limits of its own (docs/plans.md, "Per-key
 * limits"): the model list is checked before anything is sent; every other request of a key with
 * a spend limit or rates of its own goes to the object with the limits, never admitted from a
 * lease — not even one another credential of the tenant holds in this isolate. A key limited only
 * to a model list is admitted like any other.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { namespaceOf, RecordingLimiter, SNAPSHOT } from '../../test/unit/recording-limiter'
import type { KeyLimits } from '../auth/key-limits'
import { AppError } from '../http/errors'
import { PLAN_CATALOG } from '../plans/plan-catalog'
import type { Identity } from '../worker/request-context'
import type { AcquireInput, AcquireResult } from './metering.schemas'
import { openMeter, resetMeteringClientState } from './metering-client'

/** Grants a lease of 8 requests to whoever asks for one. */
class LeasingLimiter extends RecordingLimiter {
  override async acquire(input: AcquireInput): Promise<AcquireResult> {
    await super.acquire(input)
    return input.lease
      ? {
          kind: 'granted',
          snapshot: SNAPSHOT,
          lease: { leaseId: input.lease.leaseId, requests: 8, tokens: 8 * 100, ttlMs: 60_000 },
        }
      : { kind: 'granted', snapshot: SNAPSHOT }
  }
}

const TENANT = crypto.randomUUID()
const KEY_ID = crypto.randomUUID()
const identity = (limits?: KeyLimits): Identity => ({
  tenantId: TENANT,
  mode: 'live',
  principal: {
    kind: 'api_key',
    keyId: limits ? KEY_ID : crypto.randomUUID(),
    mode: 'live',
    ...(limits ? { limits } : {}),
  },
  role: 'member',
  planId: 'pro',
  scopes: [],
})
const LIMITS: KeyLimits = {
  allowedModels: ['svc-cell'],
  spendLimit: { amountUnits: 5_000_000, period: 'day' },
  requestsPerMinute: 30,
  tokensPerMinute: null,
}
const request = (i: number, model: 'svc-cell' | 'svc-brood' = 'svc-cell') => ({
  requestId: `req-${i}`,
  model,
  estimatedTokens: 100,
})

afterEach(() => resetMeteringClientState())

describe('metering client: a key with limits', () => {
  it("never admits from a lease, even one another key's request obtained; its limits travel with each acquire", async () => {
    const limiter = new LeasingLimiter()
    const open = openMeter(namespaceOf(limiter), identity(), 'chat.completions')
    await open.acquire(request(0), PLAN_CATALOG)
    await open.acquire(request(1), PLAN_CATALOG)
    // The unlimited key's second request was admitted from its lease, with no call.
    expect(limiter.acquireCalls).toHaveLength(1)

    const limited = openMeter(namespaceOf(limiter), identity(LIMITS), 'chat.completions')
    for (let i = 2; i < 5; i++) await limited.acquire(request(i), PLAN_CATALOG)
    const calls = limiter.acquireCalls.slice(1)
    expect(calls).toHaveLength(3)
    for (const call of calls) {
      expect(call.lease).toBeUndefined()
      expect(call.key).toEqual({
        keyId: KEY_ID,
        spendLimitUnits: 5_000_000,
        period: 'day',
        requestsPerMinute: 30,
      })
    }
  })

  it('a key limited only to a model list is admitted from leases like any other, with nothing for the object to count', async () => {
    const limiter = new LeasingLimiter()
    const modelsOnly = openMeter(
      namespaceOf(limiter),
      identity({
        allowedModels: ['svc-cell'],
        spendLimit: null,
        requestsPerMinute: null,
        tokensPerMinute: null,
      }),
      'chat.completions',
    )
    for (let i = 0; i < 4; i++) await modelsOnly.acquire(request(i), PLAN_CATALOG)
    expect(limiter.acquireCalls).toHaveLength(1)
    expect(limiter.acquireCalls[0]!.lease).toBeDefined()
    expect(limiter.acquireCalls[0]!.key).toBeUndefined()
    // The list still holds, before anything is sent.
    await expect(modelsOnly.acquire(request(9, 'svc-brood'), PLAN_CATALOG)).rejects.toMatchObject({
      status: 403,
      code: 'model_access_required',
    })
    expect(limiter.acquireCalls).toHaveLength(1)
  })

  it('a model outside allowed_models is refused before anything is sent', async () => {
    const limiter = new LeasingLimiter()
    const limited = openMeter(namespaceOf(limiter), identity(LIMITS), 'chat.completions')
    const refusal = await limited.acquire(request(0, 'svc-brood'), PLAN_CATALOG).catch((err: unknown) => err)
    expect(refusal).toBeInstanceOf(AppError)
    expect(refusal).toMatchObject({ status: 403, code: 'model_access_required' })
    expect((refusal as AppError).message).toContain("not in the key's allowed_models")
    expect(limiter.acquireCalls).toHaveLength(0)
  })
})
