import { describe, expect, it } from 'vitest'
import { base64urlEncode } from '../crypto/encoding'
import { MAX_BODY_BYTES_CEILING, openContext, sealContext } from './internal-context'
import type { RequestContext } from './request-context'

const context: RequestContext = {
  requestId: 'req_1',
  identity: {
    tenantId: '6f1c1d7e-0000-4000-8000-000000000001',
    principal: { kind: 'api_key', keyId: 'k1', mode: 'live' },
    role: 'owner',
    planId: 'team',
    scopes: [],
  },
  maxBodyBytes: 1024,
  baseUrl: 'https://api.example',
}

const encode = (value: unknown) => base64urlEncode(new TextEncoder().encode(JSON.stringify(value)))

describe('internal request context', () => {
  it('round-trips under the shared secret, with and without an identity', async () => {
    expect(await openContext(await sealContext(context, 's3cret'), 's3cret')).toEqual(context)
    const anonymous = { ...context, identity: null, requestId: 'req_2' }
    expect(await openContext(await sealContext(anonymous, 's3cret'), 's3cret')).toEqual(anonymous)
  })

  it('seals an identity once and carries each request its own id', async () => {
    const first = await sealContext(context, 's3cret')
    const second = await sealContext({ ...context, requestId: 'req_other' }, 's3cret')
    const [identity1, signature1] = first.split('.')
    const [identity2, signature2] = second.split('.')
    expect([identity2, signature2]).toEqual([identity1, signature1])
    expect((await openContext(second, 's3cret'))?.requestId).toBe('req_other')
  })

  it('refuses a missing, tampered or foreign-signed identity', async () => {
    const sealed = await sealContext(context, 's3cret')
    expect(await openContext(null, 's3cret')).toBeNull()
    expect(await openContext('garbage', 's3cret')).toBeNull()
    expect(await openContext('a.b', 's3cret')).toBeNull()
    expect(await openContext(`${sealed}.extra`, 's3cret')).toBeNull()
    expect(await openContext(sealed, 'other secret')).toBeNull()
    const [identity, signature, request] = sealed.split('.') as [string, string, string]
    const forged = encode({ ...context.identity!, tenantId: 'someone-else' })
    expect(await openContext(`${forged}.${signature}.${request}`, 's3cret')).toBeNull()
    expect(await openContext(`${identity}.${signature.slice(0, -2)}.${request}`, 's3cret')).toBeNull()
    expect(await openContext(`${identity}.${signature}.${encode({ requestId: 1 })}`, 's3cret')).toBeNull()
  })

  it('never trusts a body limit above the ceiling', async () => {
    const sealed = await sealContext(context, 's3cret')
    const [identity, signature] = sealed.split('.') as [string, string, string]
    const request = encode({
      requestId: 'r',
      maxBodyBytes: 10 * MAX_BODY_BYTES_CEILING,
      baseUrl: 'https://x',
    })
    expect((await openContext(`${identity}.${signature}.${request}`, 's3cret'))?.maxBodyBytes).toBe(
      MAX_BODY_BYTES_CEILING,
    )
  })
})
