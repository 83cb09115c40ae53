import { describe, expect, it } from 'vitest'
import { base64urlEncode } from '../crypto/encoding'
import { openContext, sealContext } from './internal-context'
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

describe('internal request context', () => {
  it('round-trips under the shared secret', async () => {
    expect(await openContext(await sealContext(context, 's3cret'), 's3cret')).toEqual(context)
  })

  it('refuses a missing, tampered or foreign-signed header', async () => {
    const sealed = await sealContext(context, 's3cret')
    expect(await openContext(null, 's3cret')).toBeNull()
    expect(await openContext('garbage', 's3cret')).toBeNull()
    expect(await openContext(sealed, 'other secret')).toBeNull()
    const [payload, signature] = sealed.split('.') as [string, string]
    const forged = base64urlEncode(
      new TextEncoder().encode(
        JSON.stringify({ ...context, identity: { ...context.identity!, tenantId: 'someone-else' } }),
      ),
    )
    expect(await openContext(`${forged}.${signature}`, 's3cret')).toBeNull()
    expect(await openContext(`${payload}.${signature.slice(0, -2)}`, 's3cret')).toBeNull()
  })
})
