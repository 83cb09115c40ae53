/**
 * Generates the fast validators that hot paths run before zod, from the zod schemas themselves
 * (one definition per wire shape): `z.toJSONSchema` → Ajv's standalone code, written as plain
 * functions ahead of time, because inside workerd neither zod nor Ajv may compile a validator at
 * run time (code generation from strings is disallowed there) and zod's generic path was a
 * tenth of the chat worker's own time.
 *
 * A generated validator accepts a subset of what its schema accepts, for which the schema's
 * output equals the input:
 * - every object is closed (`additionalProperties: false`): zod strips unknown fields, so a body
 *   with any goes to zod;
 * - a refinement (`refine`, `superRefine`) or a transform the generator is not told about makes
 *   its part `{ not: {} }`, so any value there goes to zod; the refinements a target lists in
 *   `checkedAfter` are run by the caller after the validator passes (the same functions the schema
 *   refines with);
 * - a default is refused at generation time (the output would differ from the input);
 * - string lengths count UTF-16 code units and patterns run without the `u` flag, as in zod.
 *
 *   every bundle (scripts/workers.ts: npm start, the tests' stack, deploy) first rewrites any that
 *   is out of date; npm run generate:validators does it alone; scripts/generate-validators.test.ts
 *   fails when a committed file is out of date
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv2020 } from 'ajv/dist/2020.js'
import standaloneCode from 'ajv/dist/standalone/index.js'
import { z } from 'zod'
import {
  CHAT_REQUEST_CHECKED_AFTER,
  ChatCompletionRequestSchema,
} from '../functions/chat/src/chat.schemas.ts'
import {
  LeaseReturnsSchema,
  LedgerEntrySchema,
  SettleBatchSchema,
} from '../shared/metering/metering.schemas.ts'
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  WireUsageSchema,
} from '../shared/providers/chat-wire.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

interface Target {
  /** Repository-relative path of the generated module. */
  file: string
  /** Export name → the schema it validates. */
  validators: Record<string, z.ZodType>
  /** Refined (or transformed) schemas whose refinement the caller applies after the validator. */
  checkedAfter?: readonly z.ZodType[]
}

export const TARGETS: readonly Target[] = [
  {
    file: 'functions/chat/src/chat-request.validator.generated.ts',
    validators: { isClosedChatCompletionRequest: ChatCompletionRequestSchema },
    checkedAfter: CHAT_REQUEST_CHECKED_AFTER,
  },
  {
    file: 'shared/providers/chat-wire.validator.generated.ts',
    validators: {
      isChatCompletion: ChatCompletionSchema,
      isChatCompletionChunk: ChatCompletionChunkSchema,
      isWireUsage: WireUsageSchema,
    },
  },
  {
    file: 'durable-objects/rate-limiter/metering.validator.generated.ts',
    validators: {
      isSettleBatch: SettleBatchSchema,
      isLeaseReturns: LeaseReturnsSchema,
      isLedgerEntry: LedgerEntrySchema,
    },
  },
]

type Internals = {
  _zod: {
    def: {
      type: string
      checks?: { _zod: { def: { check: string } } }[]
      in?: z.ZodType
      out?: z.ZodType
    }
  }
}
const defOf = (schema: unknown) => (schema as Internals)._zod.def

function jsonSchemaFor(schema: z.ZodType, checkedAfter: ReadonlySet<unknown>): Record<string, unknown> {
  return z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => {
      const def = defOf(ctx.zodSchema)
      if (def.type === 'default' || def.type === 'prefault') {
        throw new Error('a default makes the output differ from the input; the generator refuses it')
      }
      const refined = def.checks?.some((c) => c._zod.def.check === 'custom') ?? false
      const transformed = def.type === 'pipe' && def.out !== undefined && defOf(def.out).type === 'transform'
      const handled =
        checkedAfter.has(ctx.zodSchema) || (transformed && def.in !== undefined && checkedAfter.has(def.in))
      if ((refined || transformed) && !handled) {
        for (const key of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as Record<string, unknown>)[key]
        Object.assign(ctx.jsonSchema, { not: {} })
      }
    },
  }) as Record<string, unknown>
}

/** Closes every object that lists its properties (records keep their additionalProperties schema). */
function closeObjects(node: unknown): void {
  if (Array.isArray(node)) {
    node.forEach(closeObjects)
    return
  }
  if (node === null || typeof node !== 'object') return
  const schema = node as Record<string, unknown>
  if (schema.type === 'object' && 'properties' in schema && !('additionalProperties' in schema)) {
    schema.additionalProperties = false
  }
  Object.values(schema).forEach(closeObjects)
}

/**
 * Ajv's own log, minus one notice. `unicode: false` makes minLength/maxLength count UTF-16 code
 * units, as zod does; Ajv 8 still honours the option but calls it deprecated on every
 * construction, which printed "DEPRECATED: option unicode" three times on every `npm start`.
 */
const AJV_LOGGER = {
  log: console.log,
  warn: (...args: unknown[]) => {
    if (args.some((a) => typeof a === 'string' && a.startsWith('DEPRECATED: option unicode'))) return
    console.warn(...args)
  },
  error: console.error,
}

export function generate(target: Target): string {
  const ajv = new Ajv2020({
    code: { source: true, esm: true, lines: false },
    logger: AJV_LOGGER,
    strict: false,
    unicode: false,
    unicodeRegExp: false,
    allErrors: false,
    validateFormats: false,
  })
  const checkedAfter = new Set<unknown>(target.checkedAfter ?? [])
  const refs: Record<string, string> = {}
  for (const [name, schema] of Object.entries(target.validators)) {
    const json = jsonSchemaFor(schema, checkedAfter)
    delete json.$schema
    closeObjects(json)
    ajv.addSchema(json, name)
    refs[name] = name
  }
  const code = standaloneCode(ajv, refs)
  if (/\brequire\(/.test(code)) throw new Error(`${target.file}: the generated code needs a runtime import`)
  const signatures = Object.keys(target.validators)
    .map((name) => `export declare const ${name}: (data: unknown) => boolean`)
    .join('\n')
  return `// @ts-nocheck
// Generated by scripts/generate-validators.ts from the zod schemas; do not edit.
// ${signatures.replaceAll('\n', '\n// ')}
${code}
`
}

/** Writes every target whose committed text differs from what its schemas generate now. */
export function writeValidators(log: (line: string) => void = () => {}): void {
  for (const target of TARGETS) {
    const file = path.resolve(ROOT, target.file)
    const text = generate(target)
    if (existsSync(file) && readFileSync(file, 'utf8') === text) continue
    writeFileSync(file, text)
    log(`wrote ${target.file}`)
  }
}

if (import.meta.url === `file://${process.argv[1]}`) writeValidators(console.log)
