import { describe, expect, it } from 'vitest'
import type { Identity } from '../../../shared/worker/request-context'
import { CredentialCache } from './opaque-credential-cache'

const identity = (tokenId: string): Identity => ({
  tenantId: '00000000-0000-4000-8000-000000000001',
  mode: 'live',
  principal: { kind: 'observability_token', tokenId, subject: `observability-token:${tokenId}` },
  role: 'member',
  planId: 'free',
  scopes: ['telemetry:write'],
})

describe('CredentialCache (API keys and observability tokens)', () => {
  it('serves an entry until it expires, then looks up again', () => {
    const cache = new CredentialCache<'unknown'>()
    cache.remember(
      'svc_ot_a',
      { identity: identity('a'), reason: null, expiresAt: 1_000, credentialExpiresAt: null },
      'a',
    )
    expect(cache.get('svc_ot_a', 999)?.identity?.tenantId).toBe('00000000-0000-4000-8000-000000000001')
    expect(cache.get('svc_ot_a', 1_000)).toBeNull()
  })

  it("invalidating a credential's id drops every value cached for it (old and new during a rotation), nothing else", () => {
    const cache = new CredentialCache<'unknown' | 'revoked'>()
    const entry = { identity: identity('a'), reason: null, expiresAt: 10_000, credentialExpiresAt: null }
    cache.remember('old', entry, 'a')
    cache.remember('new', entry, 'a')
    cache.remember('other', { ...entry, identity: identity('b') }, 'b')
    cache.remember(
      'guess',
      { identity: null, reason: 'unknown', expiresAt: 10_000, credentialExpiresAt: null },
      null,
    )
    cache.invalidate('a')
    expect(cache.get('old', 0)).toBeNull()
    expect(cache.get('new', 0)).toBeNull()
    expect(cache.get('other', 0)).not.toBeNull()
    expect(cache.get('guess', 0)?.reason).toBe('unknown')
  })

  it('last_used_at is due at most once a minute per credential', () => {
    const cache = new CredentialCache<'unknown'>()
    expect(cache.touchDue('a', 100_000)).toBe(true)
    expect(cache.touchDue('a', 159_999)).toBe(false)
    expect(cache.touchDue('b', 159_999)).toBe(true)
    expect(cache.touchDue('a', 160_000)).toBe(true)
  })
})
