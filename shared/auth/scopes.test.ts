import { describe, expect, it } from 'vitest'
import { ROUTES } from '../routing/route-table'
import { SCOPE_NAMES, scopesAllow, scopesFor } from './scopes'

const route = (method: string, path: string) => {
  const found = ROUTES.find((r) => r.method === method && r.path === path)
  if (!found) throw new Error(`no route ${method} ${path}`)
  return found
}

describe('scopes', () => {
  it('every credential route needs a known scope; public-only families need none', () => {
    for (const r of ROUTES) {
      const needed = scopesFor(r)
      for (const s of needed) expect(SCOPE_NAMES).toContain(s)
      if (r.access === 'credential') expect(needed.length, `${r.method} ${r.path}`).toBeGreaterThan(0)
    }
  })

  it('a read scope reads, a write scope also reads; retrieval and search are reads', () => {
    expect(scopesFor(route('GET', '/platform/v1/api-keys'))).toEqual(['platform:read', 'platform:write'])
    expect(scopesFor(route('POST', '/platform/v1/api-keys'))).toEqual(['platform:write'])
    expect(scopesFor(route('POST', '/svc/documents/retrieve'))).toContain('knowledge:read')
    expect(scopesFor(route('POST', '/svc/documents/upload'))).toEqual(['knowledge:write'])
    expect(scopesFor(route('POST', '/svc/chat/completions'))).toEqual(['chat:write'])
  })

  it("any scope opens a key's usage statement (the route shows a scoped key its own only)", () => {
    const statement = scopesFor(route('GET', '/platform/v1/api-keys/:keyId/usage-statement'))
    expect(statement).toEqual(SCOPE_NAMES)
    expect(scopesAllow(['chat:write'], statement)).toBe(true)
    expect(scopesAllow(['chat:write'], scopesFor(route('GET', '/platform/v1/api-keys/:keyId')))).toBe(false)
  })

  it('no scopes = unrestricted; otherwise one of the needed scopes must be held', () => {
    expect(scopesAllow([], ['platform:write'])).toBe(true)
    expect(scopesAllow(['chat:write'], ['platform:write'])).toBe(false)
    expect(scopesAllow(['chat:write', 'platform:read'], ['platform:read', 'platform:write'])).toBe(true)
    expect(scopesAllow(['chat:write'], [])).toBe(true)
  })
})
