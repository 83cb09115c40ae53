/**
 * Enforcement at the gateway with the real AuditLog object (this file runs in the do-platform
 * project, beside the platform worker that hosts it): every violation is on the tenant's log before
 * the request goes on or the 403 leaves, and without the log nothing goes through.
 */
import { env as testEnv } from 'cloudflare:test'
import { afterEach, describe, expect, it } from 'vitest'
import { type AuditLogNamespace, auditLogOf } from '../../../durable-objects/audit-log/audit-client'
import { getPolicyPreset } from '../../../shared/crypto-policy'
import type { AppError } from '../../../shared/http/errors'
import type { Identity } from '../../../shared/worker/request-context'
import { enforceCryptoPolicy } from './crypto-enforcement'
import type { GatewayEnv } from './gateway.context'
import { clearTenantPolicies, rememberTenantPolicy } from './tenant-policies'

let TENANT = crypto.randomUUID()
const AUDIT_LOG = (testEnv as unknown as { AUDIT_LOG: AuditLogNamespace }).AUDIT_LOG
let env = { AUDIT_LOG } as GatewayEnv

/** The decisions on the tenant's log, oldest first. */
async function logged(): Promise<{ outcome: string; algorithm: string; request_id: string }[]> {
  const answer = await auditLogOf(AUDIT_LOG, TENANT).entries({ tenantId: TENANT, start: 0, end: 100 })
  if (!answer.ok) throw new Error(answer.error.message)
  return answer.entries.map((e) => JSON.parse(e.entry).event)
}

function identity(algorithm: string | null): Identity {
  return {
    tenantId: TENANT,
    mode: 'live',
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

afterEach(() => {
  clearTenantPolicies()
  TENANT = crypto.randomUUID()
  env = { AUDIT_LOG } as GatewayEnv
})

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
    expect(pending).toHaveLength(1) // the Postgres copy, after the response
    // The block was on the log before the 403 was thrown.
    expect(await logged()).toMatchObject([{ outcome: 'blocked', algorithm: 'ed25519', request_id: 'req_1' }])
  })

  it('audit mode: the same request passes once the violation is on the log', async () => {
    rememberTenantPolicy(TENANT, { ...getPolicyPreset('strict'), mode: 'audit' }, 60_000)
    const { result, pending } = run(identity('EdDSA'))
    await expect(result).resolves.toBeUndefined()
    expect(pending).toHaveLength(1)
    expect(await logged()).toMatchObject([{ outcome: 'logged', algorithm: 'ed25519' }])
  })

  it('without the audit log nothing passes and nothing is blocked unlogged: 503, in both modes', async () => {
    env = {} as GatewayEnv
    for (const mode of ['audit', 'enforce'] as const) {
      rememberTenantPolicy(TENANT, { ...getPolicyPreset('strict'), mode }, 60_000)
      const error = (await run(identity('EdDSA')).result.catch((e: unknown) => e)) as AppError
      expect(error).toMatchObject({ status: 503, code: 'audit_log_unavailable' })
      clearTenantPolicies()
    }
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
    expect((await logged()).map((d) => d.algorithm)).toEqual(['kyber-1024'])
  })

  it('an unknown declared algorithm is a 400 naming the header', async () => {
    rememberTenantPolicy(TENANT, getPolicyPreset('default'), 60_000)
    const { result } = run(identity(null), { 'x-svc-crypto-algorithms': 'rot13' })
    const error = (await result.catch((e: unknown) => e)) as AppError
    expect(error).toMatchObject({ status: 400, code: 'unknown_algorithm', param: 'x-svc-crypto-algorithms' })
    expect(error.message).toMatch(/^x-svc-crypto-algorithms: Unknown algorithm "rot13"/)
  })
})
