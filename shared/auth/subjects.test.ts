import { describe, expect, it } from 'vitest'
import { parseSubject, serviceAccountSubject, userSubject } from './subjects'

const ID = '2801e294-e86e-4719-a1e3-1539ee592c00'

describe('token subjects', () => {
  it('round-trips users and service accounts', () => {
    expect(parseSubject(userSubject(ID))).toEqual({ kind: 'user', id: ID })
    expect(parseSubject(serviceAccountSubject(ID))).toEqual({ kind: 'service_account', id: ID })
    expect(parseSubject(`user:${ID.toUpperCase()}`)).toEqual({ kind: 'user', id: ID.toUpperCase() })
  })

  it('refuses anything that does not name one of our principals exactly', () => {
    for (const sub of [
      ID,
      `admin:${ID}`,
      `key:${ID}`,
      `user:${ID}:extra`,
      `user:${ID.slice(0, -1)}`,
      `user: ${ID}`,
      `USER:${ID}`,
      'user:',
      ':',
      '',
    ]) {
      expect(parseSubject(sub), sub).toBeNull()
    }
  })
})
