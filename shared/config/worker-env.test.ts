import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { AppError } from '../http/errors'
import { decimalVar, envReader, listVar, textVar, urlVar, wholeNumberVar } from './worker-env'

const schema = z.object({
  TTL_SECONDS: wholeNumberVar(30, { min: 0, max: 300 }),
  COST: decimalVar(25),
  ISSUER: textVar('svc'),
  BASE_URL: urlVar(),
  ORIGINS: listVar(['*']),
})

function refusal(read: () => unknown): AppError {
  try {
    read()
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
  throw new Error('expected the env to be refused')
}

describe('envReader', () => {
  it('unset or blank values take the documented defaults', () => {
    const read = envReader('test', schema)
    expect(read({ TTL_SECONDS: ' ', ISSUER: '' })).toEqual({
      TTL_SECONDS: 30,
      COST: 25,
      ISSUER: 'svc',
      BASE_URL: undefined,
      ORIGINS: ['*'],
    })
  })

  it('parses set values', () => {
    const read = envReader('test', schema)
    expect(
      read({ TTL_SECONDS: '0', COST: '2.5', ISSUER: ' me ', BASE_URL: 'https://a.test/', ORIGINS: 'a, b,,' }),
    ).toEqual({ TTL_SECONDS: 0, COST: 2.5, ISSUER: 'me', BASE_URL: 'https://a.test', ORIGINS: ['a', 'b'] })
  })

  it('an invalid value is a 503 naming the variable and the rule, never the default', () => {
    const read = envReader('gateway', schema)
    const env = { TTL_SECONDS: '301', COST: 'lots', BASE_URL: 'ftp://x' }
    const err = refusal(() => read(env))
    expect(err).toMatchObject({ status: 503, code: 'service_misconfigured' })
    expect(err.message).toContain('TTL_SECONDS must be a whole number from 0 to 300')
    expect(err.message).toContain('COST must be a decimal number')
    expect(err.message).toContain('BASE_URL must be an absolute http(s) URL')
    expect(err.message).not.toContain('301')
    expect(err.internalMessage).toContain('TTL_SECONDS="301"')
    // The same env object keeps failing the same way: parsed once, not retried into a default.
    expect(refusal(() => read(env))).toBe(err)
  })

  it('parses an env once, and again only when one of its variables changed', () => {
    const read = envReader('test', schema)
    const env: Record<string, string> = { TTL_SECONDS: '5' }
    const first = read(env)
    expect(read(env)).toBe(first)
    expect(read({ ...env })).toEqual(first)
    env.TTL_SECONDS = '7'
    expect(read(env)).toMatchObject({ TTL_SECONDS: 7 })
    env.TTL_SECONDS = 'x'
    expect(refusal(() => read(env))).toMatchObject({ status: 503 })
  })
})
