import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import { hashPassword, MAX_PASSWORD_BYTES, needsRehash, verifyPassword } from './password'

/** Cheap parameters for behaviour tests; the production parameters are exercised once below. */
const FAST = { m: 64, t: 1, p: 1 }

describe('password hashing (Argon2id, PHC strings)', () => {
  it('hashes with the current OWASP parameters and verifies', async () => {
    const stored = await hashPassword('correct horse battery staple')
    const ok = await verifyPassword('correct horse battery staple', stored)
    expect(stored).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/)
    expect(ok).toBe(true)
    expect(await verifyPassword('correct horse battery stapler', stored)).toBe(false)
    expect(needsRehash(stored)).toBe(false)
  })

  it('salts every hash', async () => {
    const a = await hashPassword('same password', FAST)
    const b = await hashPassword('same password', FAST)
    expect(a).not.toBe(b)
    expect(await verifyPassword('same password', a)).toBe(true)
    expect(await verifyPassword('same password', b)).toBe(true)
  })

  it('normalises Unicode (NFKC) so equivalent spellings match', async () => {
    const stored = await hashPassword('caf\u00e9 \uff50\uff41\uff53\uff53', FAST)
    expect(await verifyPassword('cafe\u0301 pass', stored)).toBe(true)
    expect(await verifyPassword('cafe pass', stored)).toBe(false)
  })

  it('flags hashes made with other parameters for rehashing', async () => {
    const old = await hashPassword('pw', FAST)
    expect(needsRehash(old)).toBe(true)
    expect(needsRehash(old, FAST)).toBe(false)
    expect(needsRehash('$2b$12$abcdefghijklmnopqrstuv')).toBe(true)
    expect(needsRehash('plain text')).toBe(true)
  })

  it('refuses empty and over-long passwords when hashing, and never matches them', async () => {
    for (const password of ['', 'x'.repeat(MAX_PASSWORD_BYTES + 1)]) {
      const error = await hashPassword(password, FAST).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(AppError)
      expect(error).toMatchObject({ status: 400, code: 'password_invalid', param: 'password' })
    }
    const stored = await hashPassword('x'.repeat(MAX_PASSWORD_BYTES), FAST)
    expect(await verifyPassword('x'.repeat(MAX_PASSWORD_BYTES), stored)).toBe(true)
    expect(await verifyPassword('x'.repeat(MAX_PASSWORD_BYTES + 1), stored)).toBe(false)
    expect(await verifyPassword('', stored)).toBe(false)
  })

  it('treats an unreadable or too costly stored hash as a server-side error, not as a wrong password', async () => {
    const stored = await hashPassword('pw', FAST)
    const tooCostly = stored.replace('m=64,', 'm=4194304,')
    const bad = [
      tooCostly,
      stored.replace('v=19', 'v=16'),
      '$argon2i$v=19$m=64,t=1,p=1$c29tZXNhbHQ$AAAAAAAAAAAAAAAAAAAAAA',
      'garbage',
    ]
    for (const encoded of bad) {
      const error = await verifyPassword('pw', encoded).catch((e: unknown) => e)
      expect(error, encoded).toMatchObject({ status: 500, code: 'password_hash_unsupported' })
    }
  })

  it('detects a tampered stored hash', async () => {
    const stored = await hashPassword('pw', FAST)
    const at = stored.length - 10
    const tampered = stored.slice(0, at) + (stored[at] === 'A' ? 'B' : 'A') + stored.slice(at + 1)
    expect(await verifyPassword('pw', tampered)).toBe(false)
  })

  it('accepts only the canonical base64 spelling of a stored hash', async () => {
    const stored = await hashPassword('pw', FAST)
    // 32 bytes take 43 base64 characters; the last one carries 2 unused bits that must be zero.
    const last = stored.at(-1) ?? ''
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
    const sibling = alphabet[alphabet.indexOf(last) ^ 1] ?? ''
    const error = await verifyPassword('pw', stored.slice(0, -1) + sibling).catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 500, code: 'password_hash_unsupported' })
  })
})
