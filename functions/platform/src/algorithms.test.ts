/** GET /platform/v1/crypto/algorithms as the gateway calls it: the registry and its filters. */
import { env } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { ALGORITHM_REGISTRY } from '../../../shared/crypto-policy/registry'
import { apiKeyIdentity, callFamily, errorOf } from '../../../test/unit/family-call'
import PlatformWorker from './index'
import { AlgorithmListSchema } from './platform.schemas'

const registry = (query = '') =>
  callFamily(PlatformWorker, env as never, `/platform/v1/crypto/algorithms${query}`, {
    identity: apiKeyIdentity({ role: 'member' }),
  })

async function ids(query: string): Promise<string[]> {
  const res = await registry(query)
  expect(res.status, query).toBe(200)
  return AlgorithmListSchema.parse(await res.json()).data.map((a) => a.id)
}

describe('GET /platform/v1/crypto/algorithms', () => {
  it('lists the whole registry in its documented shape', async () => {
    expect(await ids('')).toEqual(ALGORITHM_REGISTRY.map((a) => a.id))
  })

  it('filters by type and by status, in any case and spelling, and by both at once', async () => {
    const kems = ALGORITHM_REGISTRY.filter((a) => a.type === 'kem').map((a) => a.id)
    expect(kems.length).toBeGreaterThan(0)
    expect(await ids('?type=kem')).toEqual(kems)
    expect(await ids('?type=KEM')).toEqual(kems)
    const final = ALGORITHM_REGISTRY.filter((a) => a.status === 'NIST_FINAL').map((a) => a.id)
    expect(await ids('?status=nist-final')).toEqual(final)
    expect(await ids('?status=NIST_FINAL')).toEqual(final)
    const deprecatedSignatures = ALGORITHM_REGISTRY.filter(
      (a) => a.status === 'DEPRECATED' && a.type === 'signature',
    ).map((a) => a.id)
    expect(await ids('?status=deprecated&type=signature')).toEqual(deprecatedSignatures)
  })

  it('answers an unknown filter value with 400 naming the parameter and the allowed values', async () => {
    const type = await registry('?type=cipher')
    expect(type.status).toBe(400)
    const typeError = await errorOf(type)
    expect(typeError.param).toBe('type')
    for (const allowed of ['kem', 'signature', 'symmetric', 'hash', 'mac'])
      expect(typeError.message).toContain(allowed)
    const status = await registry('?status=retired')
    expect(status.status).toBe(400)
    expect((await errorOf(status)).param).toBe('status')
  })
})
