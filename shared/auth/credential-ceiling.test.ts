import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import { ROUTES } from '../routing/route-table'
import type { Identity } from '../worker/request-context'
import {
  assertWithinCeiling,
  type CredentialPowers,
  exceedingParts,
  INCLUDED_SCOPES,
} from './credential-ceiling'
import { SCOPE_NAMES, scopesAllow, scopesFor } from './scopes'

const powers = (
  scopes: string[],
  role: CredentialPowers['role'] = 'owner',
  mode: CredentialPowers['mode'] = 'live',
): CredentialPowers => ({ scopes, role, mode })

describe('the credential ceiling', () => {
  const cases: [string, CredentialPowers, CredentialPowers, string[]][] = [
    ['an unscoped live owner mints anything', powers([]), powers([], 'owner', 'live'), []],
    [
      'a scoped creator mints a subset',
      powers(['chat:write', 'platform:write']),
      powers(['chat:write'], 'member'),
      [],
    ],
    [
      'the same scopes, in another order and repeated',
      powers(['a:b', 'c:d']),
      powers(['c:d', 'a:b', 'c:d']),
      [],
    ],
    ['a write scope holds its read scope', powers(['platform:write']), powers(['platform:read']), []],
    ['knowledge:write holds knowledge:read', powers(['knowledge:write']), powers(['knowledge:read']), []],
    ['reasoning:write holds reasoning:read', powers(['reasoning:write']), powers(['reasoning:read']), []],
    [
      'a read scope does not hold its write scope',
      powers(['platform:read']),
      powers(['platform:write']),
      ['scope platform:write'],
    ],
    [
      'mcp:tools does not hold mcp:resources',
      powers(['mcp:tools']),
      powers(['mcp:resources']),
      ['scope mcp:resources'],
    ],
    [
      'one scope too many is named, the held ones are not',
      powers(['platform:write']),
      powers(['platform:write', 'chat:write']),
      ['scope chat:write'],
    ],
    [
      'an unscoped request by a scoped creator names every scope it lacks',
      powers(['platform:write']),
      powers([]),
      SCOPE_NAMES.filter((s) => s !== 'platform:write' && s !== 'platform:read').map((s) => `scope ${s}`),
    ],
    ['an admin mints an admin', powers([], 'admin'), powers([], 'admin'), []],
    ['an admin mints a member', powers([], 'admin'), powers([], 'member'), []],
    ['an admin cannot mint an owner', powers([], 'admin'), powers([], 'owner'), ['role owner']],
    ['a member cannot mint an admin', powers([], 'member'), powers([], 'admin'), ['role admin']],
    ['a test credential mints test', powers([], 'owner', 'test'), powers([], 'owner', 'test'), []],
    [
      'a test credential cannot mint live',
      powers([], 'owner', 'test'),
      powers([], 'owner', 'live'),
      ['mode live'],
    ],
    ['a live credential mints test', powers([], 'owner', 'live'), powers([], 'owner', 'test'), []],
    [
      'every exceeding part is named, scopes first',
      powers(['platform:write'], 'admin', 'test'),
      powers(['platform:write', 'telemetry:write'], 'owner', 'live'),
      ['scope telemetry:write', 'role owner', 'mode live'],
    ],
    [
      'the issue: a platform:write key minting an unscoped admin live key from a test key',
      powers(['platform:write'], 'admin', 'test'),
      powers(['telemetry:write'], 'admin', 'live'),
      ['scope telemetry:write', 'mode live'],
    ],
  ]
  it.each(cases)('%s', (_name, creator, requested, expected) => {
    expect(exceedingParts(creator, requested)).toEqual(expected)
  })

  it('a scope it includes opens no route the including scope does not (the gateway agrees)', () => {
    for (const [holder, included] of Object.entries(INCLUDED_SCOPES)) {
      for (const scope of included) {
        for (const route of ROUTES.filter((r) => r.access === 'credential')) {
          const needed = scopesFor(route)
          if (scopesAllow([scope], needed)) {
            expect(
              scopesAllow([holder], needed),
              `${holder} ⊇ ${scope} on ${route.method} ${route.path}`,
            ).toBe(true)
          }
        }
      }
    }
  })

  it('refuses with 403 credential_ceiling_exceeded naming each part; the mode of an API key is its own', () => {
    const testKey: Identity = {
      tenantId: crypto.randomUUID(),
      mode: 'test',
      principal: { kind: 'api_key', keyId: crypto.randomUUID(), mode: 'test' },
      role: 'admin',
      planId: 'pro',
      scopes: ['platform:write'],
    }
    let refusal: unknown
    try {
      assertWithinCeiling(testKey, powers(['chat:write'], 'owner', 'live'), 'this API key')
    } catch (err) {
      refusal = err
    }
    expect(refusal).toBeInstanceOf(AppError)
    const error = refusal as AppError
    expect(error.status).toBe(403)
    expect(error.code).toBe('credential_ceiling_exceeded')
    expect(error.param).toBe('scopes')
    for (const part of ['scope chat:write', 'role owner', 'mode live', 'this API key']) {
      expect(error.message).toContain(part)
    }
    expect(() => assertWithinCeiling(testKey, powers(['platform:read'], 'member', 'test'), 'x')).not.toThrow()

    // A person's session (an access token) is live and unscoped: it mints what its role allows.
    const person: Identity = {
      ...testKey,
      mode: 'live',
      principal: {
        kind: 'access_token',
        subject: 'user:u',
        audience: 'platform',
        tokenId: 't',
        algorithm: 'EdDSA',
      },
      role: 'owner',
      scopes: [],
    }
    expect(() => assertWithinCeiling(person, powers([], 'owner', 'live'), 'x')).not.toThrow()
    // A person acting in test mode (the console's switch on Test) is still not a test credential.
    expect(() =>
      assertWithinCeiling({ ...person, mode: 'test' }, powers([], 'owner', 'live'), 'x'),
    ).not.toThrow()
    expect(() => assertWithinCeiling({ ...person, role: 'admin' }, powers([], 'owner', 'test'), 'x')).toThrow(
      /role owner/,
    )
  })
})
