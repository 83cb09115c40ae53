import { describe, expect, it } from 'vitest'
import { authSettings } from './auth.context'
import { clientAddress, lockedForSeconds, loginThrottleKeys } from './login-throttle'

describe('login throttling', () => {
  it('reads the client address from CF-Connecting-IP, then the first X-Forwarded-For entry', () => {
    const req = (headers: Record<string, string>) => new Request('https://x/auth/login', { headers })
    expect(clientAddress(req({ 'cf-connecting-ip': '203.0.113.7', 'x-forwarded-for': '198.51.100.1' }))).toBe(
      '203.0.113.7',
    )
    expect(clientAddress(req({ 'x-forwarded-for': '198.51.100.1, 10.0.0.1' }))).toBe('198.51.100.1')
    expect(clientAddress(req({}))).toBe('unknown')
  })

  it('counts per (account, address) with a per-account backstop and per address, with the configured limits', () => {
    const settings = authSettings({ AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT: '300' })
    expect(loginThrottleKeys(' Owner@Example.TEST ', '203.0.113.7', settings)).toEqual([
      { key: 'account-address:owner@example.test 203.0.113.7', limit: 5, scope: 'account_address' },
      { key: 'account:owner@example.test', limit: 300, scope: 'account' },
      { key: 'address:203.0.113.7', limit: 20, scope: 'address' },
    ])
  })

  it('reports the longest remaining lock in whole seconds, and 0 when the locks are over', () => {
    const now = new Date('2026-01-01T00:00:00Z')
    const at = (s: number) => ({ lockedUntil: new Date(now.getTime() + s * 1000) })
    expect(lockedForSeconds([at(-5), { lockedUntil: null }], now)).toBe(0)
    expect(lockedForSeconds([at(12.2), at(899)], now)).toBe(899)
  })

  it('refuses a setting that is not a positive integer, naming it, instead of using the default', () => {
    expect(() => authSettings({ AUTH_ACCESS_TOKEN_TTL_SECONDS: 'soon' })).toThrow(
      'AUTH_ACCESS_TOKEN_TTL_SECONDS must be a whole number at least 1',
    )
  })

  it('uses the defaults for settings left unset or blank', () => {
    expect(authSettings({ JWT_ISSUER: ' ' })).toMatchObject({
      issuer: 'svc',
      accessTokenTtlSeconds: 900,
      refreshTokenTtlSeconds: 2_592_000,
      maxFailuresPerAccountAddress: 5,
      maxFailuresPerAccount: 100,
      maxFailuresPerAddress: 20,
      windowSeconds: 900,
      lockoutSeconds: 900,
      registrationsPerAddress: 10,
      registrationWindowSeconds: 3600,
      unusedClientTtlSeconds: 86_400,
    })
  })
})
