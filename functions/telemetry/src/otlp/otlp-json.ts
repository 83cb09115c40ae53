/**
 * Validates an OTLP Export request in the OTLP JSON encoding (the proto3 JSON mapping with OTLP's
 * exceptions: trace and span ids as hex, enums as integers) and counts its items, from the same
 * table as the protobuf decoder (otlp-schema.ts). Keys are lowerCamelCase; the original
 * snake_case names are accepted too (proto3 JSON parsers accept both), unknown keys are ignored
 * (OTLP: "receivers MUST ignore unknown fields"), `null` stands for an absent field.
 */
import { OtlpDecodeError } from './otlp-protobuf'
import { type FieldSpec, jsonName, MAX_NESTING, type MessageName, OTLP_MESSAGES } from './otlp-schema'

interface JsonField {
  spec: FieldSpec
  key: string
}

/** Per message: both key spellings → the field. Built once. */
const JSON_FIELDS = new Map<MessageName, Map<string, JsonField>>()
for (const [name, fields] of Object.entries(OTLP_MESSAGES) as [MessageName, Record<number, FieldSpec>][]) {
  const byKey = new Map<string, JsonField>()
  for (const spec of Object.values(fields)) {
    byKey.set(jsonName(spec.name), { spec, key: spec.name })
    byKey.set(spec.name, { spec, key: spec.name })
  }
  JSON_FIELDS.set(name, byKey)
}

const HEX = /^[0-9a-fA-F]*$/
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/
const INTEGER_STRING = /^-?\d+$/

function typeOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`
}

function checkScalar(spec: FieldSpec, value: unknown, path: string): void {
  const fail = (expected: string) => {
    throw new OtlpDecodeError(`expected ${expected}, got ${typeOf(value)}`, path)
  }
  switch (spec.kind) {
    case 'string':
      if (typeof value !== 'string') fail('a string')
      return
    case 'trace_id':
    case 'span_id': {
      const hexLength = spec.kind === 'trace_id' ? 32 : 16
      if (typeof value !== 'string') fail(`a ${hexLength}-digit hex string`)
      const text = value as string
      if (text !== '' && (text.length !== hexLength || !HEX.test(text))) {
        throw new OtlpDecodeError(
          `a ${spec.kind === 'trace_id' ? 'trace' : 'span'} id must be ${hexLength} hex digits (got ${JSON.stringify(text.slice(0, 40))})`,
          path,
        )
      }
      return
    }
    case 'bytes':
      if (typeof value !== 'string' || !BASE64.test(value)) fail('a base64 string')
      return
    case 'double':
      if (typeof value === 'number') return
      if (typeof value === 'string' && ['NaN', 'Infinity', '-Infinity'].includes(value)) return
      if (typeof value === 'string' && Number.isFinite(Number(value)) && value.trim() !== '') return
      fail('a number')
      return
    case 'varint':
      // int32/int64/uint32/uint64/enum/bool: bools are JSON booleans; 64-bit integers may be strings.
      if (typeof value === 'boolean') return
      if (typeof value === 'number' && Number.isInteger(value)) return
      if (typeof value === 'string' && INTEGER_STRING.test(value)) return
      fail('an integer')
      return
    default:
      if (typeof value === 'number' && Number.isInteger(value)) return
      if (typeof value === 'string' && INTEGER_STRING.test(value)) return
      fail('an integer')
  }
}

function walk(value: unknown, name: MessageName, path: string, depth: number): number {
  if (depth > MAX_NESTING) {
    throw new OtlpDecodeError(`messages are nested more than ${MAX_NESTING} levels deep`, path)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new OtlpDecodeError(`expected an object, got ${typeOf(value)}`, path || '(top level)')
  }
  const fields = JSON_FIELDS.get(name)!
  let items = 0
  for (const [key, fieldValue] of Object.entries(value)) {
    const field = fields.get(key)
    if (!field || fieldValue === null) continue
    const { spec } = field
    const at = `${path}${path ? '.' : ''}${key}`
    if (spec.repeated) {
      if (!Array.isArray(fieldValue))
        throw new OtlpDecodeError(`expected an array, got ${typeOf(fieldValue)}`, at)
      if (spec.kind === 'message') {
        for (let i = 0; i < fieldValue.length; i++) {
          const inner = walk(fieldValue[i], spec.message!, `${at}[${i}]`, depth + 1)
          items += spec.counts ? 1 : inner
        }
      } else {
        for (let i = 0; i < fieldValue.length; i++) checkScalar(spec, fieldValue[i], `${at}[${i}]`)
      }
    } else if (spec.kind === 'message') {
      items += walk(fieldValue, spec.message!, at, depth + 1)
    } else {
      checkScalar(spec, fieldValue, at)
    }
  }
  return items
}

/** Validates parsed OTLP JSON as the Export request `message`; returns its item count. */
export function countJsonItems(value: unknown, message: MessageName): number {
  return walk(value, message, '', 0)
}

/** `partialSuccess.rejected*` of an Export response in JSON, 0 when absent or unreadable. */
export function rejectedInJsonResponse(text: string): { rejected: number; message: string } {
  try {
    const body = JSON.parse(text) as Record<string, unknown> | null
    const partial = (body?.partialSuccess ?? body?.partial_success) as Record<string, unknown> | undefined
    if (!partial || typeof partial !== 'object') return { rejected: 0, message: '' }
    let rejected = 0
    for (const [key, value] of Object.entries(partial)) {
      if (/^rejected/i.test(key)) rejected = Number(value) || 0
    }
    const message = partial.errorMessage ?? partial.error_message
    return { rejected, message: typeof message === 'string' ? message : '' }
  } catch {
    return { rejected: 0, message: '' }
  }
}
