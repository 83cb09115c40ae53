import { describe, expect, it } from 'vitest'
import { KeyRateLimitSchema } from './api-keys.schemas'

describe('API key limits: what the schema takes', () => {
  it('refuses a rate larger than its Postgres integer column holds, naming the field (a plan may allow more)', () => {
    const huge = KeyRateLimitSchema.safeParse({ tokens_per_minute: 100_000_000_000 })
    expect(huge.success).toBe(false)
    expect(huge.error?.issues[0]?.path).toEqual(['tokens_per_minute'])
    expect(KeyRateLimitSchema.safeParse({ requests_per_minute: 2 ** 31 }).success).toBe(false)
    expect(KeyRateLimitSchema.safeParse({ tokens_per_minute: 2 ** 31 - 1 }).success).toBe(true)
  })
})
