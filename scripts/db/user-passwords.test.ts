import { describe, expect, it } from 'vitest'
import { AppError } from '../../shared/http/errors'
import { checkNewPassword, generatePassword, MIN_PASSWORD_LENGTH } from './user-passwords'

function refusal(password: string): AppError {
  try {
    checkNewPassword(password)
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
  throw new Error(`${JSON.stringify(password)} was accepted`)
}

describe('new passwords', () => {
  it('needs at least 15 characters and says how many it got', () => {
    expect(MIN_PASSWORD_LENGTH).toBe(15)
    expect(() => checkNewPassword('a'.repeat(15))).not.toThrow()
    const short = refusal('a'.repeat(14))
    expect(short).toMatchObject({ status: 400, code: 'password_too_short', param: 'password' })
    expect(short.message).toContain('has 14 characters')
    expect(short.message).toContain('at least 15')
  })

  it('counts characters as a person sees them, not UTF-16 units or bytes', () => {
    // 15 emoji (30 UTF-16 units) and 15 accented letters are 15 characters.
    expect(() => checkNewPassword('🐝'.repeat(15))).not.toThrow()
    expect(() => checkNewPassword('é'.repeat(15))).not.toThrow()
    // 14 "e" + combining acute accents compose (NFKC) into 14 characters, not 28.
    expect(refusal('e\u0301'.repeat(14)).message).toContain('has 14 characters')
  })

  it('asks for no composition rules: a passphrase of plain words is enough', () => {
    expect(() => checkNewPassword('correct horse battery staple')).not.toThrow()
  })

  it('generates 24 base62 characters, different every time', () => {
    const passwords = Array.from({ length: 50 }, () => generatePassword())
    for (const password of passwords) expect(password).toMatch(/^[0-9A-Za-z]{24}$/)
    expect(new Set(passwords).size).toBe(50)
    expect(() => checkNewPassword(passwords[0]!)).not.toThrow()
  })
})
