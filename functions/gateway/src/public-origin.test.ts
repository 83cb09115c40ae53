import { describe, expect, it } from 'vitest'
import { AppError } from '../../../shared/http/errors'
import { isLoopbackHostname, publicOrigin } from './public-origin'

describe('the public origin', () => {
  it.each([
    ['http://localhost:8787/x', 'http://localhost:8787'],
    ['http://LOCALHOST:8787/x', 'http://localhost:8787'],
    ['http://127.0.0.1:8787/x', 'http://127.0.0.1:8787'],
    ['http://127.1.2.3/x', 'http://127.1.2.3'],
    ['http://[::1]:9000/x', 'http://[::1]:9000'],
    ['http://svc.localhost:8787/x', 'http://svc.localhost:8787'],
    // Other spellings of 127.0.0.1 are normalised by the URL parser before the check.
    ['http://2130706433:8787/x', 'http://127.0.0.1:8787'],
    ['http://0x7f.1:8787/x', 'http://127.0.0.1:8787'],
  ])('without PUBLIC_BASE_URL, a request to %s has the origin %s', (request, origin) => {
    expect(publicOrigin(new URL(request), undefined)).toBe(origin)
  })

  it.each([
    'http://evil.example:8787/x',
    'http://localhost.evil.example/x',
    'http://evil.example.localhost.com/x',
    'http://10.0.0.5:8787/x',
    'http://0.0.0.0:8787/x',
    'http://[::2]:8787/x',
    'http://[::ffff:7f00:1]:8787/x',
    'http://128.0.0.1/x',
  ])('without PUBLIC_BASE_URL, a request to %s is 421 misdirected_request naming the host', (request) => {
    let refusal: unknown
    try {
      publicOrigin(new URL(request), undefined)
    } catch (err) {
      refusal = err
    }
    expect(refusal).toBeInstanceOf(AppError)
    expect(refusal).toMatchObject({ status: 421, code: 'misdirected_request' })
    expect((refusal as AppError).message).toContain(new URL(request).host)
    expect((refusal as AppError).message).toContain('PUBLIC_BASE_URL')
  })

  it('with PUBLIC_BASE_URL, the Host never matters', () => {
    for (const request of ['http://evil.example/x', 'http://localhost:8787/x']) {
      expect(publicOrigin(new URL(request), 'https://api.example.com')).toBe('https://api.example.com')
    }
    expect(isLoopbackHostname('localhost')).toBe(true)
    expect(isLoopbackHostname('localhostx')).toBe(false)
  })
})
