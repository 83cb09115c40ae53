import { describe, expect, it } from 'vitest'
import { AppError } from './errors'
import { checkJsonText, MAX_JSON_DEPTH } from './json-input'

function refusal(text: string): { code: string; message: string; param: string | null } {
  try {
    checkJsonText(text)
  } catch (err) {
    if (err instanceof AppError) {
      expect(err.status).toBe(400)
      return { code: err.code, message: err.message, param: err.param }
    }
    throw err
  }
  throw new Error(`expected ${text.slice(0, 80)} to be refused`)
}

const nested = (levels: number, leaf = '1') => '{"a":'.repeat(levels) + leaf + '}'.repeat(levels)

describe('checkJsonText', () => {
  it('lets ordinary JSON through, escapes, pairs and numbers included', () => {
    const ok = [
      '{"model":"svc-cell","messages":[{"role":"user","content":"Hello\\n\\"quoted\\" \\\\u0000 and \\u00e9"}]}',
      '{"emoji":"\\ud83d\\ude00","raw":"😀","max_tokens":9007199254740991,"t":0.7,"e":1e300,"neg":-12.5e-3}',
      '[1,2,3]',
      '"just a string"',
      '{"constructors":1,"proto":2,"__proto":3,"prototypes":4}',
      nested(MAX_JSON_DEPTH),
      // Brackets inside strings do not count as nesting.
      `{"text":"${'['.repeat(500)}"}`,
    ]
    for (const text of ok) expect(() => checkJsonText(text), text.slice(0, 60)).not.toThrow()
  })

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels, naming the limit and where`, () => {
    const deep = refusal(`{"text":"m","z":${nested(8000)}}`)
    expect(deep.code).toBe('json_too_deep')
    expect(deep.message).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`)
    expect(deep.message).toContain('(at z.a.a.a')
    expect(deep.param?.startsWith('z.a.a.a')).toBe(true)
    expect(refusal(nested(MAX_JSON_DEPTH + 1)).code).toBe('json_too_deep')
    expect(refusal('['.repeat(MAX_JSON_DEPTH + 1)).code).toBe('json_too_deep')
    expect(refusal(`{"list":[${'['.repeat(70)}1${']'.repeat(70)}]}`).param?.startsWith('list[0][0][0]')).toBe(
      true,
    )
  })

  it('refuses NUL and lone surrogates in strings, naming the field as clients write it', () => {
    expect(refusal('{"text":"m","z":"\\ud800"}')).toMatchObject({ code: 'invalid_character', param: 'z' })
    expect(refusal('{"messages":[{"role":"user","content":"a\\u0000b"}]}')).toMatchObject({
      code: 'invalid_character',
      param: 'messages[0].content',
    })
    const nul = refusal('{"a":{"b":["x","\\u0000"]}}')
    expect(nul.param).toBe('a.b[1]')
    expect(nul.message).toContain('a.b[1] contains a NUL character')
    // A low surrogate alone, a high one followed by something else, one at the very end.
    expect(refusal('{"s":"\\udc00"}').param).toBe('s')
    expect(refusal('{"s":"\\uD800\\u0041"}').param).toBe('s')
    expect(refusal('{"s":"x\\uDBFF"}').message).toContain('unpaired UTF-16 surrogate')
    expect(refusal('"\\u0000"')).toMatchObject({ param: null })
    expect(refusal('"\\u0000"').message).toMatch(/^The body contains a NUL character/)
    // In a field name: the member is named.
    expect(refusal('{"a":{"k\\u0000":1}}').param).toBe('a.k\\u0000')
  })

  it('refuses numbers JSON cannot carry exactly here', () => {
    expect(refusal('{"n":1e400}')).toMatchObject({ code: 'number_out_of_range', param: 'n' })
    expect(refusal('{"n":-1E+999}').param).toBe('n')
    expect(refusal('{"seed":123456789012345678901234567890}')).toMatchObject({
      code: 'number_out_of_range',
      param: 'seed',
    })
    expect(refusal('[9007199254740993]').param).toBe('[0]')
    expect(refusal('{"n":1e400}').message).toContain('send it as a string')
  })

  it('refuses the field names that reach JavaScript object internals', () => {
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      expect(refusal(`{"a":[{"${key}":{"polluted":true}}]}`)).toMatchObject({
        code: 'reserved_field_name',
        param: `a[0].${key}`,
      })
    }
    expect(refusal('{"__pro\\u0074o__":1}').param).toBe('__proto__')
    expect(refusal('{ "constructor" : 1 }').message).toContain('"constructor" is reserved')
    // As a string value it is just text.
    expect(() => checkJsonText('{"name":"__proto__","list":["constructor"]}')).not.toThrow()
  })

  it('leaves malformed JSON to the parser (no throw, no hang)', () => {
    for (const text of ['{"a":"unterminated', '{"a":\\u0000}', '}}}]]]', '{"a":1e', '"\\u12', '"\\']) {
      expect(() => checkJsonText(text)).not.toThrow()
    }
  })
})
