import { describe, expect, it } from 'vitest'
import {
  checkSameOrigin,
  cookieValue,
  csrfMatches,
  csrfTokenFor,
  isSessionSecret,
  newSessionSecret,
  openTokens,
  sealTokens,
  sessionCookie,
} from './session'

const tokens = { accessToken: 'eyJ.a.b', refreshToken: 'svc_rt_x', accessExpiresAt: 1_800_000_000_000 }

describe('console sessions', () => {
  it('seals tokens so that only the same secret and session open them, and tampering is detected', async () => {
    const secret = newSessionSecret()
    expect(isSessionSecret(secret)).toBe(true)
    const sealed = await sealTokens(secret, 'session-1', tokens)
    expect(sealed).not.toContain('svc_rt_x')
    expect(await openTokens(secret, 'session-1', sealed)).toEqual(tokens)
    expect(await openTokens(newSessionSecret(), 'session-1', sealed)).toBeNull()
    expect(await openTokens(secret, 'session-2', sealed)).toBeNull()
    const [v, iv, data] = sealed.split('.')
    const flipped = `${v}.${iv}.${data!.slice(0, -2)}${data!.endsWith('AA') ? 'AB' : 'AA'}`
    expect(await openTokens(secret, 'session-1', flipped)).toBeNull()
    expect(await openTokens(secret, 'session-1', '')).toBeNull()
  })

  it("derives the CSRF token from the session's secret", async () => {
    const secret = newSessionSecret()
    const token = await csrfTokenFor(secret)
    expect(token).toBe(await csrfTokenFor(secret))
    expect(await csrfMatches(secret, token)).toBe(true)
    expect(await csrfMatches(newSessionSecret(), token)).toBe(false)
    expect(await csrfMatches(secret, undefined)).toBe(false)
    expect(await csrfMatches(secret, `${token}x`)).toBe(false)
  })

  it('sets the cookie HttpOnly, Secure, SameSite=Strict on the whole host, and reads it back', () => {
    expect(sessionCookie('svc_cs_abc', 60)).toBe(
      '__Host-svc_console=svc_cs_abc; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=60',
    )
    expect(cookieValue('a=1; __Host-svc_console=svc_cs_abc; b=2', '__Host-svc_console')).toBe('svc_cs_abc')
    expect(cookieValue('x__Host-svc_console=evil', '__Host-svc_console')).toBeUndefined()
    expect(isSessionSecret('svc_cs_short')).toBe(false)
  })

  it('accepts a state change only from the console origin', () => {
    const at = (headers: Record<string, string>) =>
      new Request('https://api.example.com/console/x', { headers })
    expect(() =>
      checkSameOrigin(at({ origin: 'https://api.example.com' }), 'https://api.example.com'),
    ).not.toThrow()
    expect(() =>
      checkSameOrigin(at({ 'sec-fetch-site': 'same-origin' }), 'https://api.example.com'),
    ).not.toThrow()
    const refused: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site', origin: 'https://api.example.com' },
    ]
    for (const headers of refused) {
      expect(
        () => checkSameOrigin(at(headers), 'https://api.example.com'),
        JSON.stringify(headers),
      ).toThrowError(expect.objectContaining({ status: 403, code: 'csrf_origin_mismatch' }))
    }
  })
})
