import { describe, expect, it } from 'vitest'
import { ClientToolRegistry, findClientTool, jsonSchemaProblems, schemaDraftOf } from './client-tools'
import type { ClientTool } from './turn.schemas'

const writeFile: ClientTool = {
  name: 'write_file',
  description: 'Writes a file',
  tags: ['edit'],
  input_schema: {
    type: 'object',
    additionalProperties: false,
    required: ['path', 'content'],
    properties: {
      path: { type: 'string', minLength: 1, pattern: '^[^/]' },
      content: { type: 'string' },
      mode: { enum: ['overwrite', 'append'] },
      lines: { type: 'array', items: { type: 'integer', minimum: 1 } },
      options: { $ref: '#/$defs/options' },
    },
    $defs: { options: { type: 'object', properties: { backup: { type: 'boolean' } } } },
  },
}

describe('jsonSchemaProblems', () => {
  it('accepts ordinary tool schemas of several drafts', () => {
    expect(jsonSchemaProblems(writeFile.input_schema)).toEqual([])
    expect(jsonSchemaProblems({})).toEqual([])
    expect(
      jsonSchemaProblems({
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        definitions: { n: { type: 'number', exclusiveMinimum: 0 } },
        properties: { n: { $ref: '#/definitions/n' }, tree: { $ref: '#' } },
        'x-vendor': true,
      }),
    ).toEqual([])
    expect(schemaDraftOf({ $schema: 'http://json-schema.org/draft-04/schema#' })).toBe('4')
    expect(schemaDraftOf({})).toBe('2020-12')
  })

  it.each([
    [{ type: 'object', properties: { a: { type: 'str' } } }, '/properties/a/type'],
    [{ type: 'object', required: 'path' }, '/required'],
    [{ type: 'object', required: ['a', 'a'] }, '/required'],
    [{ type: 'object', properties: [] }, '/properties'],
    [{ type: 'object', properties: { a: { minLength: -1 } } }, '/properties/a/minLength'],
    [{ type: 'object', properties: { a: { minLength: 1.5 } } }, '/properties/a/minLength'],
    [{ type: 'object', anyOf: [] }, '/anyOf'],
    [{ type: 'object', properties: { a: 7 } }, '/properties/a'],
    [{ type: 'string' }, '/type: must be "object"'],
    [{ type: 'object', properties: { a: { type: 'string', pattern: '([a-z' } } }, '/properties/a/pattern'],
    [{ type: 'object', patternProperties: { '(': {} } }, '/patternProperties/('],
    [{ type: 'object', properties: { a: { $ref: '#/$defs/missing' } } }, 'does not resolve'],
    [{ type: 'object', properties: { a: { $ref: 'https://example.com/schema.json' } } }, 'does not resolve'],
  ])('reports %j at %s', (schema, where) => {
    const problems = jsonSchemaProblems(schema)
    expect(problems.length).toBeGreaterThan(0)
    expect(problems.join('\n')).toContain(where)
  })

  it('rejects non-objects', () => {
    expect(jsonSchemaProblems([])).toHaveLength(1)
    expect(jsonSchemaProblems(true)).toHaveLength(1)
  })

  it('does not mutate the schema it checks', () => {
    const schema = {
      type: 'object',
      properties: { a: { $ref: '#/$defs/a' } },
      $defs: { a: { type: 'string' } },
    }
    const before = JSON.stringify(schema)
    jsonSchemaProblems(schema)
    expect(JSON.stringify(schema)).toBe(before)
    expect(Object.getOwnPropertyNames(schema)).not.toContain('__absolute_uri__')
  })
})

describe('ClientToolRegistry.validateInvocation', () => {
  const registry = new ClientToolRegistry([writeFile])

  it('accepts valid arguments, as an object or as the JSON text a model produced', () => {
    const a = registry.validateInvocation('write_file', {
      path: 'a.txt',
      content: 'x',
      options: { backup: true },
    })
    expect(a.ok).toBe(true)
    const b = registry.validateInvocation('write_file', '{"path":"b.txt","content":"","lines":[1,2]}')
    expect(b).toMatchObject({ ok: true, arguments: { path: 'b.txt', lines: [1, 2] } })
  })

  it('lists every failing path', () => {
    const r = registry.validateInvocation('write_file', {
      path: '/abs',
      lines: [1, 0, 'x'],
      mode: 'truncate',
      extra: 1,
      options: { backup: 'yes' },
    })
    expect(r.ok).toBe(false)
    if (r.ok) return
    expect(r.code).toBe('invalid_arguments')
    const paths = r.violations.map((v) => v.path)
    expect(paths).toEqual(
      expect.arrayContaining(['', '/path', '/lines/1', '/lines/2', '/mode', '/extra', '/options/backup']),
    )
    // wrappers such as "Property x does not match schema" are dropped in favour of the leaves
    expect(r.violations.some((v) => v.message.includes('does not match schema'))).toBe(false)
    expect(r.violations.find((v) => v.path === '/extra')?.message).toBe('is not allowed by the schema')
    expect(r.violations.find((v) => v.path === '')?.message).toContain('content')
    expect(r.message).toContain('/lines/1')
  })

  it('reports unknown tools, non-JSON text and non-object arguments', () => {
    expect(registry.validateInvocation('rm_rf', {})).toMatchObject({ ok: false, code: 'unknown_tool' })
    const unknown = registry.validateInvocation('rm_rf', {})
    expect(!unknown.ok && unknown.message).toContain('registered: write_file')
    expect(registry.validateInvocation('write_file', '{"path":')).toMatchObject({
      ok: false,
      code: 'invalid_json',
    })
    expect(registry.validateInvocation('write_file', [1])).toMatchObject({
      ok: false,
      code: 'invalid_arguments',
    })
    expect(new ClientToolRegistry().validateInvocation('x', {})).toMatchObject({
      ok: false,
      code: 'unknown_tool',
    })
  })

  it('looks tools up by exact name', () => {
    expect(registry.get('write_file')?.tags).toEqual(['edit'])
    expect(registry.has('Write_File')).toBe(false)
    expect(findClientTool([writeFile], 'write_file')).toBe(writeFile)
    expect(findClientTool(undefined, 'write_file')).toBeUndefined()
    expect(registry.size).toBe(1)
  })
})
