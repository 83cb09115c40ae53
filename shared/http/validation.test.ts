import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { AppError } from './errors'
import { MAX_ISSUES, parseWith, validationError } from './validation'

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
    expect(messageOf({ k: 1 }).message).toBe('query is required')
    expect(messageOf({ query: 'x', mode: 'c' }).message).toBe('mode must be one of "a", "b" (got "c")')
    expect(messageOf({ query: 'x', extra: 1 }).message).toBe(
      'the request body has unknown field extra; remove it',
    )
    expect(messageOf({ query: 'x', items: [{ name: 1 }] })).toEqual({
      message: 'items[0].name must be a string (got 1)',
      param: 'items[0].name',
    })
  })

  it('names at most MAX_ISSUES problems, then how many more', () => {
    const { message, param } = messageOf({ k: 0, mode: 'c', items: [{}, {}, {}], extra: true })
    expect(MAX_ISSUES).toBe(3)
    expect(message.split('; ')).toHaveLength(MAX_ISSUES + 1)
    expect(message).toMatch(/; and 2 more$/)
    expect(param).toBe('query')
  })

  it("reads the same when the issues come from a parse that did not report input (the OpenAPI layer's)", () => {
    const input = { query: 'x', k: 500 }
    const result = Schema.safeParse(input)
    if (result.success) throw new Error('expected a failure')
    expect(
      validationError(result.error, input, { code: 'invalid_query', root: 'the query string' }),
    ).toMatchObject({
      code: 'invalid_query',
      message: 'k must be <= 100 (got 500)',
      param: 'k',
    })
  })

  it("uses a schema's own rule phrase after the field name, and says a missing field is required", () => {
    const Rule = z.object({
      t: z.number().max(2, { error: 'must be between 0 and 2' }),
      list: z.array(z.string(), { error: 'must be a list' }),
    })
    expect(() => parseWith(Rule, { t: 3.5 })).toThrow('t must be between 0 and 2 (got 3.5); list is required')
  })

  it("puts a schema's sentence that is not a rule phrase after a colon, without the value", () => {
    const Unique = z.object({ ids: z.array(z.string()) }).superRefine((v, ctx) => {
      if (new Set(v.ids).size < v.ids.length)
        ctx.addIssue({ code: 'custom', path: ['ids', 1], message: 'duplicate id "a"' })
    })
    expect(() => parseWith(Unique, { ids: ['a', 'a'] })).toThrow(/^ids\[1\]: duplicate id "a"$/)
  })

  it('keeps values out of the message when told to (secrets)', () => {
    const Key = z.object({ key: z.string().length(4) })
    expect(() => parseWith(Key, { key: 'secret-value' }, { showValues: false })).toThrow(
      /^key must be at most 4 characters long$/,
    )
  })

  it('passes valid input through with defaults', () => {
    expect(parseWith(Schema, { query: 'q' })).toEqual({ query: 'q', k: 3 })
  })
})
