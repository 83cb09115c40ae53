import { describe, expect, it } from 'vitest'
import {
  generateRefreshToken,
  generateServiceAccountSecret,
  isRefreshToken,
  isServiceAccountSecret,
} from './opaque-credentials'

describe('opaque credentials', () => {
  it('makes service-account secrets and refresh tokens recognisable by their prefix', () => {
    const secret = generateServiceAccountSecret()
    const refresh = generateRefreshToken()
    expect(secret).toMatch(/^svc_sa_[0-9A-Za-z]{43}$/)
    expect(refresh).toMatch(/^svc_rt_[0-9A-Za-z]{43}$/)
    expect(isServiceAccountSecret(secret)).toBe(true)
    expect(isRefreshToken(refresh)).toBe(true)
  })

  it('never takes one kind of credential for the other, or a near miss for either', () => {
    const secret = generateServiceAccountSecret()
    const refresh = generateRefreshToken()
    expect(isServiceAccountSecret(refresh)).toBe(false)
    expect(isRefreshToken(secret)).toBe(false)
    for (const nearMiss of [secret.slice(0, -1), `${secret}A`, `${secret.slice(0, -1)}_`, ` ${secret}`]) {
      expect(isServiceAccountSecret(nearMiss), nearMiss).toBe(false)
    }
    expect(isRefreshToken(`svc_sk_live_${refresh.slice(7)}`)).toBe(false)
  })

  it('draws every credential afresh', () => {
    const drawn = new Set(Array.from({ length: 100 }, () => generateRefreshToken()))
    expect(drawn.size).toBe(100)
  })
})
