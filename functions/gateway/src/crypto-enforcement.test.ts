import { afterEach, describe, expect, it } from 'vitest'
import { getPolicyPreset } from '../../../shared/crypto-policy'
import type { AppError } from '../../../shared/http/errors'
import type { Identity } from '../../../shared/worker/request-context'
import { enforceCryptoPolicy } from './crypto-enforcement'
import type { GatewayEnv } from './gateway.context'
import { clearTenantPolicies, rememberTenantPolicy } from './tenant-policies'

const TENANT = '4ea944f0-8111-43b6-ba0d-e9b3260311bb'
const env = {} as GatewayEnv

function identity(algorithm: string | null): Identity {
  return {
    tenantId: TENANT,
    role: 'owner',
    planId: 'team',
    scopes: [],
    principal: algorithm
      ? { kind: 'access_token', subject: 'user:x', audience: 'platform', tokenId: 'j', algorithm }
      : { kind: 'api_key', keyId: 'k', mode: 'live' },
  }
}

function run(id: Identity, headers: Record<string, string> = {}) {
  const pending: Promise<unknown>[] = []
  const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p) }
  const request = new Request('https://gw.test/svc/memories', { headers })
  const result = enforceCryptoPolicy(
    { request, identity: id, requestId: 'req_1', path: '/svc/memories' },
    env,
    ctx,
  )
  return { result, pending }
}

afterEach(() => clearTenantPolicies())

describe('crypto policy enforcement at the gateway', () => {
  it('API-key requests without declared algorithms never need the policy', async () => {
    const { result, pending } = run(identity(null))
    await expect(result).resolves.toBeUndefined()
    expect(pending).toHaveLength(0)
  })

  it('enforce mode: an EdDSA token under Strict is a 403 naming the algorithm and the rule', async () => {
    rememberTenantPolicy(TENANT, getPolicyPreset('strict'), 60_000)
    const { result, pending } = run(identity('EdDSA'))
    const error = (await result.catch((e: unknown) => e)) as AppError
    expect(error).toMatchObject({ status: 403, code: 'crypto_policy_violation' })
    expect(error.message).toContain('ed25519')
    const body = error.toBody() as {
      crypto_policy: { algorithm: string; mode: string; rules: { rule: string }[] }
    }
    expect(body.crypto_policy.algorithm).toBe('ed25519')
    expect(body.crypto_policy.mode).toBe('enforce')
    expect(body.crypto_policy.rules.map((r) => r.rule)).toEqual([
      'forbidden_list',
      'allow_list',
      'nist_final',
      'classical_fallback',
    ])
    expect(pending).toHaveLength(1) // the blocked attempt is recorded too
  })

  it('audit mode: the same request passes and the violation is recorded off the request path', async () => {
    rememberTenantPolicy(TENANT, { ...getPolicyPreset('strict'), mode: 'audit' }, 60_000)
    const { result, pending } = run(identity('EdDSA'))
    await expect(result).resolves.toBeUndefined()
    expect(pending).toHaveLength(1)
  })

  it('checks algorithms declared in x-svc-crypto-algorithms', async () => {
    rememberTenantPolicy(TENANT, getPolicyPreset('government'), 60_000)
    const ok = run(identity(null), { 'x-svc-crypto-algorithms': 'x25519+kyber-1024, aes-256-gcm' })
    await expect(ok.result).resolves.toBeUndefined()
    expect(ok.pending).toHaveLength(0)
    const lone = run(identity(null), { 'x-svc-crypto-algorithms': 'aes-256-gcm, kyber-1024' })
    const error = (await lone.result.catch((e: unknown) => e)) as AppError
    expect(error).toMatchObject({
      status: 403,
      code: 'crypto_policy_violation',
      param: 'x-svc-crypto-algorithms',
    })
    expect(error.message).toMatch(/kyber-1024.*hybrid_mode/)
  })

  it('an unknown declared algorithm is a 400 naming the header', async () => {
    rememberTenantPolicy(TENANT, getPolicyPreset('default'), 60_000)
    const { result } = run(identity(null), { 'x-svc-crypto-algorithms': 'rot13' })
    const error = (await result.catch((e: unknown) => e)) as AppError
    expect(error).toMatchObject({ status: 400, code: 'unknown_algorithm', param: 'x-svc-crypto-algorithms' })
    expect(error.message).toMatch(/^x-svc-crypto-algorithms: Unknown algorithm "rot13"/)
  })
})
