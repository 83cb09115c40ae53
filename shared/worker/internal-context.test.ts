import { describe, expect, it } from 'vitest'
import { base64urlEncode } from '../crypto/encoding'
import {
  CONTEXT_HEADER,
  MAX_BODY_BYTES_CEILING,
  openContext,
  REQUEST_HEADER,
  sealContext,
} from './internal-context'
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
const sealed = async (c: RequestContext, secret = 's3cret') => new Headers(await sealContext(c, secret))
const withHeader = (headers: Headers, name: string, value: string) => {
  const copy = new Headers(headers)
  copy.set(name, value)
  return copy
}

describe('internal request context', () => {
  it('round-trips under the shared secret, with and without an identity', async () => {
    expect(await openContext(await sealed(context), 's3cret')).toEqual(context)
    const anonymous = { ...context, identity: null, requestId: 'req_2' }
    expect(await openContext(await sealed(anonymous), 's3cret')).toEqual(anonymous)
  })

  it('seals an identity once and carries each request its own id', async () => {
    const first = await sealed(context)
    const second = await sealed({ ...context, requestId: 'req_other' })
    expect(second.get(CONTEXT_HEADER)).toBe(first.get(CONTEXT_HEADER))
    expect((await openContext(second, 's3cret'))?.requestId).toBe('req_other')
  })

  it('refuses a missing, tampered or foreign-signed identity', async () => {
    const headers = await sealed(context)
    expect(await openContext(new Headers(), 's3cret')).toBeNull()
    expect(await openContext(withHeader(headers, CONTEXT_HEADER, 'garbage'), 's3cret')).toBeNull()
    expect(await openContext(withHeader(headers, CONTEXT_HEADER, 'a.b.c'), 's3cret')).toBeNull()
    expect(await openContext(headers, 'other secret')).toBeNull()
    const [, signature] = headers.get(CONTEXT_HEADER)!.split('.') as [string, string]
    const forged = encode({ ...context.identity!, tenantId: 'someone-else' })
    expect(
      await openContext(withHeader(headers, CONTEXT_HEADER, `${forged}.${signature}`), 's3cret'),
    ).toBeNull()
    const [identity] = headers.get(CONTEXT_HEADER)!.split('.') as [string]
    expect(
      await openContext(
        withHeader(headers, CONTEXT_HEADER, `${identity}.${signature.slice(0, -2)}`),
        's3cret',
      ),
    ).toBeNull()
    const noRequest = new Headers(headers)
    noRequest.delete(REQUEST_HEADER)
    expect(await openContext(noRequest, 's3cret')).toBeNull()
    expect(await openContext(withHeader(headers, REQUEST_HEADER, '{"requestId":1}'), 's3cret')).toBeNull()
    expect(await openContext(withHeader(headers, REQUEST_HEADER, 'not json'), 's3cret')).toBeNull()
  })

  it('never trusts a body limit above the ceiling', async () => {
    const headers = withHeader(
      await sealed(context),
      REQUEST_HEADER,
      JSON.stringify({ requestId: 'r', maxBodyBytes: 10 * MAX_BODY_BYTES_CEILING, baseUrl: 'https://x' }),
    )
    expect((await openContext(headers, 's3cret'))?.maxBodyBytes).toBe(MAX_BODY_BYTES_CEILING)
  })
})
