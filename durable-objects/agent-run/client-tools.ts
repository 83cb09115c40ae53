/**
 * Client tools: tools registered by the calling host (IDE, CLI, MCP servers it runs) in the turn
 * request's `client_tools`. The plane never runs them; it offers the model's invocation to the
 * client, which runs it locally and returns the output in the next turn's `tool_results`.
 *
 * Two jobs live here, both on @cfworker/json-schema (no code generation, so it runs in workerd):
 * - `jsonSchemaProblems` checks, when the turn request arrives, that a tool's `input_schema` is a
 *   usable JSON Schema (meta-schema check for obvious mistakes, then a trial compile).
 * - `ClientToolRegistry.validateInvocation` checks a model-proposed invocation's arguments against
 *   that schema before it is offered to the client, listing every failing path.
 */
import { type OutputUnit, type Schema, type SchemaDraft, Validator } from '@cfworker/json-schema'
import type { ClientTool } from './turn.schemas'

const INSTANCE_TYPES = ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string']

const schemaRef = { $ref: '#' }
const schemaArray = { type: 'array', minItems: 1, items: schemaRef }
const schemaMap = { type: 'object', additionalProperties: schemaRef }
const nonNegativeInteger = { type: 'integer', minimum: 0 }
const stringArray = { type: 'array', items: { type: 'string' } }

/**
 * A meta-schema for the keywords a tool input schema commonly uses. It is deliberately narrower
 * than the official draft meta-schemas: it does not forbid unknown keywords (annotations such as
 * `title` or vendor `x-` keys are fine) but it rejects the mistakes that would make validation
 * silently wrong, such as `"type": "str"`, `"required": "path"` or `"properties": []`.
 */
export const TOOL_INPUT_META_SCHEMA = {
  type: ['object', 'boolean'],
  properties: {
    $schema: { type: 'string' },
    $id: { type: 'string' },
    $ref: { type: 'string' },
    $anchor: { type: 'string' },
    type: {
      anyOf: [
        { enum: INSTANCE_TYPES },
        { type: 'array', minItems: 1, uniqueItems: true, items: { enum: INSTANCE_TYPES } },
      ],
    },
    title: { type: 'string' },
    description: { type: 'string' },
    enum: { type: 'array' },
    required: { type: 'array', uniqueItems: true, items: { type: 'string' } },
    properties: schemaMap,
    patternProperties: schemaMap,
    $defs: schemaMap,
    definitions: schemaMap,
    dependentSchemas: schemaMap,
    dependentRequired: { type: 'object', additionalProperties: stringArray },
    additionalProperties: schemaRef,
    unevaluatedProperties: schemaRef,
    propertyNames: schemaRef,
    items: { anyOf: [schemaRef, { type: 'array', items: schemaRef }] },
    prefixItems: schemaArray,
    additionalItems: schemaRef,
    unevaluatedItems: schemaRef,
    contains: schemaRef,
    allOf: schemaArray,
    anyOf: schemaArray,
    oneOf: schemaArray,
    not: schemaRef,
    if: schemaRef,
    // biome-ignore lint/suspicious/noThenProperty: `then` is a JSON Schema keyword
    then: schemaRef,
    else: schemaRef,
    minimum: { type: 'number' },
    maximum: { type: 'number' },
    exclusiveMinimum: { type: ['number', 'boolean'] },
    exclusiveMaximum: { type: ['number', 'boolean'] },
    multipleOf: { type: 'number', exclusiveMinimum: 0 },
    minLength: nonNegativeInteger,
    maxLength: nonNegativeInteger,
    minItems: nonNegativeInteger,
    maxItems: nonNegativeInteger,
    minProperties: nonNegativeInteger,
    maxProperties: nonNegativeInteger,
    minContains: nonNegativeInteger,
    maxContains: nonNegativeInteger,
    uniqueItems: { type: 'boolean' },
    pattern: { type: 'string' },
    format: { type: 'string' },
  },
} as const

const SCHEMA_MAP_KEYWORDS = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
])
const SCHEMA_LIST_KEYWORDS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items'])
const META_RULES: Record<string, string> = {
  type: `must be one of ${INSTANCE_TYPES.map((t) => `"${t}"`).join(', ')} or a non-empty list of them without repeats`,
  required: 'must be a list of property names (strings) without repeats',
  enum: 'must be an array of allowed values',
  items: 'must be a JSON Schema (or, in older drafts, a list of them)',
  multipleOf: 'must be a number greater than 0',
  exclusiveMinimum: 'must be a number',
  exclusiveMaximum: 'must be a number',
  minimum: 'must be a number',
  maximum: 'must be a number',
  uniqueItems: 'must be true or false',
  dependentRequired: 'must map property names to lists of property names',
}
for (const k of SCHEMA_MAP_KEYWORDS) META_RULES[k] = 'must be an object whose values are JSON Schemas'
for (const k of ['allOf', 'anyOf', 'oneOf', 'prefixItems'])
  META_RULES[k] = 'must be a non-empty list of JSON Schemas'
for (const k of [
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'minContains',
  'maxContains',
]) {
  META_RULES[k] = 'must be an integer >= 0'
}
for (const k of ['$schema', '$id', '$ref', '$anchor', 'title', 'description', 'pattern', 'format'])
  META_RULES[k] = 'must be a string'

/** The rule broken at a JSON Pointer inside a tool schema, in words. */
function metaRule(path: string): string {
  const segments = path.split('/').slice(1)
  const last = segments.at(-1) ?? ''
  const parent = segments.at(-2) ?? ''
  const isSubschema =
    SCHEMA_MAP_KEYWORDS.has(parent) || (SCHEMA_LIST_KEYWORDS.has(parent) && /^\d+$/.test(last))
  if (segments.length === 0 || isSubschema) return 'must be a JSON Schema (an object or true/false)'
  return META_RULES[last] ?? 'must be a JSON Schema (an object or true/false)'
}

const metaValidator = new Validator(TOOL_INPUT_META_SCHEMA as unknown as Schema, '2020-12', false)

/** Keywords whose errors only say "a subschema failed"; the nested errors say what and where. */
const WRAPPER_KEYWORDS = new Set([
  'properties',
  'patternProperties',
  'additionalProperties',
  'unevaluatedProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'unevaluatedItems',
  'contains',
  'dependentSchemas',
  '$ref',
  '$recursiveRef',
  'allOf',
  'if',
  'then',
  'else',
])

export interface SchemaViolation {
  /** JSON Pointer (RFC 6901) into the validated value; '' is the value itself. */
  path: string
  message: string
}

/** Drops wrapper errors that merely announce a nested failure, keeps the nested ones. */
function leafViolations(errors: readonly OutputUnit[]): SchemaViolation[] {
  const kept = errors.filter((err, index) => {
    if (!WRAPPER_KEYWORDS.has(err.keyword)) return true
    return !errors.some(
      (other, otherIndex) =>
        otherIndex !== index &&
        !WRAPPER_KEYWORDS.has(other.keyword) &&
        (other.instanceLocation === err.instanceLocation ||
          other.instanceLocation.startsWith(`${err.instanceLocation}/`)),
    )
  })
  const seen = new Set<string>()
  const out: SchemaViolation[] = []
  for (const err of kept) {
    const path = err.instanceLocation.replace(/^#/, '')
    const message = err.keyword === 'false' ? 'is not allowed by the schema' : err.error
    const key = `${path}\u0000${message}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push({ path, message })
  }
  return out
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The draft named by `$schema`, defaulting to 2020-12 (what MCP and most model APIs emit). */
export function schemaDraftOf(schema: Record<string, unknown>): SchemaDraft {
  const declared = typeof schema.$schema === 'string' ? schema.$schema : ''
  if (declared.includes('draft-04')) return '4'
  if (declared.includes('draft-07') || declared.includes('draft-06')) return '7'
  if (declared.includes('2019-09')) return '2019-09'
  return '2020-12'
}

/** Every regular expression a schema carries, with the JSON Pointer of where it is. */
function collectPatterns(node: unknown, pointer: string, out: Array<{ at: string; source: string }>): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => {
      collectPatterns(item, `${pointer}/${i}`, out)
    })
    return
  }
  if (!isPlainObject(node)) return
  for (const [key, value] of Object.entries(node)) {
    const at = `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`
    if (key === 'pattern' && typeof value === 'string') out.push({ at, source: value })
    if (key === 'patternProperties' && isPlainObject(value)) {
      for (const source of Object.keys(value)) out.push({ at: `${at}/${source}`, source })
    }
    // enum/const/default/examples hold data, not schemas
    if (key === 'enum' || key === 'const' || key === 'default' || key === 'examples') continue
    collectPatterns(value, at, out)
  }
}

function compile(schema: Record<string, unknown>, shortCircuit: boolean): Validator {
  // dereference() annotates the schema objects it walks; keep the caller's copy untouched.
  return new Validator(structuredClone(schema) as Schema, schemaDraftOf(schema), shortCircuit)
}

/**
 * What is wrong with a tool's `input_schema`, as readable sentences naming the JSON Pointer inside
 * the schema; an empty list means the schema is usable. Rules, in order:
 * 1. it is a JSON object;
 * 2. it passes `TOOL_INPUT_META_SCHEMA` (keyword types: `type` names JSON types, `required` is a
 *    list of strings, `properties` maps names to schemas, lengths are non-negative integers, ...);
 * 3. a top-level `type`, when present, allows `object` (tool arguments are always a JSON object);
 * 4. every `pattern` / `patternProperties` key is a valid (Unicode) regular expression;
 * 5. it compiles with @cfworker/json-schema and every `$ref` resolves inside the schema (no remote
 *    references: the plane never fetches schemas).
 */
export function jsonSchemaProblems(schema: unknown): string[] {
  if (!isPlainObject(schema)) return ['must be a JSON object (a JSON Schema describing the tool arguments)']
  const meta = metaValidator.validate(schema)
  if (!meta.valid) {
    const paths = [...new Set(leafViolations(meta.errors).map((v) => v.path))]
    return paths.map((path) => `${path || '(root)'}: ${metaRule(path)}`)
  }
  const problems: string[] = []
  const type = schema.type
  if (type !== undefined && type !== 'object' && !(Array.isArray(type) && type.includes('object'))) {
    problems.push(
      `/type: must be "object" because tool arguments are a JSON object (got ${JSON.stringify(type)})`,
    )
  }
  const patterns: Array<{ at: string; source: string }> = []
  collectPatterns(schema, '', patterns)
  for (const { at, source } of patterns) {
    try {
      new RegExp(source, 'u')
    } catch {
      problems.push(`${at}: ${JSON.stringify(source)} is not a valid regular expression`)
    }
  }
  if (problems.length > 0) return problems
  let validator: Validator
  try {
    validator = compile(schema, true)
  } catch (err) {
    return [`does not compile: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`]
  }
  // Unresolved references only throw when validation reaches them; walk every one now.
  const lookup = (validator as unknown as { lookup: Record<string, unknown> }).lookup
  for (const node of Object.values(lookup)) {
    if (!isPlainObject(node)) continue
    const ref = (node as { __absolute_ref__?: unknown }).__absolute_ref__
    if (typeof ref === 'string' && lookup[ref] === undefined) {
      problems.push(`$ref ${JSON.stringify(node.$ref)} does not resolve to a schema inside input_schema`)
    }
  }
  return problems
}

export type InvocationCheck =
  | { ok: true; tool: ClientTool; arguments: Record<string, unknown> }
  | {
      ok: false
      code: 'unknown_tool' | 'invalid_json' | 'invalid_arguments'
      message: string
      violations: SchemaViolation[]
    }

/**
 * The client tools of one turn, indexed by name, with each input schema compiled once.
 * Names are unique (the turn request schema rejects duplicates).
 */
export class ClientToolRegistry {
  private readonly tools = new Map<string, ClientTool>()
  private readonly validators = new Map<string, Validator>()

  constructor(tools: readonly ClientTool[] = []) {
    for (const tool of tools) this.tools.set(tool.name, tool)
  }

  get size(): number {
    return this.tools.size
  }

  get(name: string): ClientTool | undefined {
    return this.tools.get(name)
  }

  has(name: string): boolean {
    return this.tools.has(name)
  }

  list(): ClientTool[] {
    return [...this.tools.values()]
  }

  private validatorFor(tool: ClientTool): Validator {
    let validator = this.validators.get(tool.name)
    if (!validator) {
      validator = compile(tool.input_schema, false)
      this.validators.set(tool.name, validator)
    }
    return validator
  }

  /**
   * Checks a model-proposed invocation before it is offered to the client. `rawArguments` is either
   * the decoded arguments or the JSON text the model produced. A failed check is not an HTTP error:
   * the plane reports it on the tool call (`tool_call.updated` status `failed`) and feeds the message
   * back to the model so it can correct the call.
   */
  validateInvocation(name: string, rawArguments: unknown): InvocationCheck {
    const tool = this.tools.get(name)
    if (!tool) {
      const known = [...this.tools.keys()]
      return {
        ok: false,
        code: 'unknown_tool',
        message: `no client tool named ${JSON.stringify(name)} is registered for this turn${
          known.length > 0 ? ` (registered: ${known.join(', ')})` : ' (the turn registered no client tools)'
        }`,
        violations: [],
      }
    }
    let args: unknown = rawArguments
    if (typeof rawArguments === 'string') {
      try {
        args = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments)
      } catch (err) {
        return {
          ok: false,
          code: 'invalid_json',
          message: `arguments for ${name} are not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
          violations: [],
        }
      }
    }
    if (!isPlainObject(args)) {
      return {
        ok: false,
        code: 'invalid_arguments',
        message: `arguments for ${name} must be a JSON object (got ${args === null ? 'null' : Array.isArray(args) ? 'an array' : typeof args})`,
        violations: [{ path: '', message: 'must be a JSON object' }],
      }
    }
    let result: ReturnType<Validator['validate']>
    try {
      result = this.validatorFor(tool).validate(args)
    } catch (err) {
      // Only reachable for schemas that slipped past jsonSchemaProblems (e.g. registered directly).
      return {
        ok: false,
        code: 'invalid_arguments',
        message: `the input_schema of ${name} could not be evaluated: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
        violations: [],
      }
    }
    if (result.valid) return { ok: true, tool, arguments: args }
    const violations = leafViolations(result.errors)
    return {
      ok: false,
      code: 'invalid_arguments',
      message: `arguments for ${name} do not match its input_schema: ${violations
        .map((v) => `${v.path || '(root)'} ${v.message}`)
        .join('; ')}`,
      violations,
    }
  }
}

/** Finds a client tool by exact name. */
export function findClientTool(
  tools: readonly ClientTool[] | undefined,
  name: string,
): ClientTool | undefined {
  return tools?.find((tool) => tool.name === name)
}
