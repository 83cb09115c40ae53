import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { AppError } from './errors'
import { parseWith } from './validation'

const Schema = z
  .object({
    query: z.string().min(1),
    k: z.number().int().min(1).max(100).default(3),
    mode: z.enum(['a', 'b']).optional(),
    items: z
      .array(z.object({ name: z.string() }))
      .max(2)
      .optional(),
  })
  .strict()

function messageOf(input: unknown): { message: string; param: string | null } {
  try {
    parseWith(Schema, input)
  } catch (err) {
    if (err instanceof AppError) return { message: err.message, param: err.param }
  }
  throw new Error('expected a validation error')
}

describe('validation messages', () => {
  it('names the field, the rule and the value', () => {
    expect(messageOf({ query: 'x', k: 500 })).toEqual({ message: 'k must be <= 100 (got 500)', param: 'k' })
    expect(messageOf({ k: 1 }).message).toBe('query is required (expected string)')
    expect(messageOf({ query: 'x', mode: 'c' }).message).toBe('mode must be one of "a", "b" (got "c")')
    expect(messageOf({ query: 'x', extra: 1 }).message).toBe(
      'the body has unknown field(s) extra; remove them',
    )
    expect(messageOf({ query: 'x', items: [{ name: 1 }] })).toEqual({
      message: 'items[0].name must be string (got 1)',
      param: 'items[0].name',
    })
  })

  it('passes valid input through with defaults', () => {
    expect(parseWith(Schema, { query: 'q' })).toEqual({ query: 'q', k: 3 })
  })
})
