import { describe, expect, it } from 'vitest'
import { allowedOrigin, preflight } from './cors'
import { requestIdFor } from './request-id'

describe('CORS', () => {
  it('allows any origin by default and only listed ones when configured', () => {
    expect(allowedOrigin('https://a.example', undefined)).toBe('*')
    expect(allowedOrigin('https://a.example', 'https://a.example, https://b.example')).toBe(
      'https://a.example',
    )
    expect(allowedOrigin('https://c.example', 'https://a.example')).toBeNull()
    expect(allowedOrigin(null, '*')).toBeNull()
  })

  it('reflects only accepted request headers in a preflight', () => {
    const req = new Request('https://api.example/svc/chat/completions', {
      method: 'OPTIONS',
      headers: { 'access-control-request-headers': 'Authorization, X-Stainless-Lang, Cookie' },
    })
    const res = preflight(req, '*', 'req_1')
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-headers')).toBe('Authorization, X-Stainless-Lang')
  })
})

describe('request ids', () => {
  it('echoes well-formed ids and mints new ones otherwise', () => {
    expect(requestIdFor('abc-123')).toBe('abc-123')
    expect(requestIdFor('a b')).toMatch(/^req_[0-9a-f]{32}$/)
    expect(requestIdFor('x'.repeat(200))).toMatch(/^req_/)
    expect(requestIdFor(null)).not.toBe(requestIdFor(null))
  })
})
