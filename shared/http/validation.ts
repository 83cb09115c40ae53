/**
 * Turns zod issues into one clear 400: the field path, the rule it broke and what was sent.
 * "temperature: must be <= 2 (got 3.5)" rather than "invalid request".
 */
import type { z } from 'zod'
import { AppError } from './errors'

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing'
  const text = JSON.stringify(value)
  if (text === undefined) return String(value)
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}

/** `messages[0].content` style: the path of a field as clients write it (OpenAI's `param`). */
export function issuePath(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('')
}

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let cur: unknown = input
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined
    cur = (cur as Record<PropertyKey, unknown>)[key]
  }
  return cur
}

export function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  const where = issuePath(issue.path) || 'body'
  const got = valueAt(input, issue.path)
  switch (issue.code) {
    case 'invalid_type':
      return got === undefined
        ? `${where} is required (expected ${issue.expected})`
        : `${where} must be ${issue.expected} (got ${describeValue(got)})`
    case 'too_small':
      return issue.origin === 'array'
        ? `${where} must have at least ${issue.minimum} element(s) (got ${Array.isArray(got) ? got.length : 0})`
        : issue.origin === 'string'
          ? `${where} must be at least ${issue.minimum} character(s) long`
          : `${where} must be ${issue.inclusive ? '>=' : '>'} ${issue.minimum} (got ${describeValue(got)})`
    case 'too_big':
      return issue.origin === 'array'
        ? `${where} must have at most ${issue.maximum} element(s) (got ${Array.isArray(got) ? got.length : '?'})`
        : issue.origin === 'string'
          ? `${where} must be at most ${issue.maximum} character(s) long`
          : `${where} must be ${issue.inclusive ? '<=' : '<'} ${issue.maximum} (got ${describeValue(got)})`
    case 'invalid_value':
      return `${where} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')} (got ${describeValue(got)})`
    case 'unrecognized_keys':
      return `${where === 'body' ? 'the body' : where} has unknown field(s) ${issue.keys.join(', ')}; remove them`
    case 'invalid_format':
      return `${where} must be a valid ${issue.format} (got ${describeValue(got)})`
    default:
      return `${where}: ${issue.message}`
  }
}

export function validationError(error: z.ZodError, input: unknown, code = 'invalid_request_body'): AppError {
  const issues = error.issues
  const first = issues[0]
  const message = issues
    .slice(0, 5)
    .map((i) => describeIssue(i, input))
    .join('; ')
  return new AppError(400, code, issues.length > 5 ? `${message}; and ${issues.length - 5} more` : message, {
    param: first ? issuePath(first.path) || null : null,
  })
}

/** Parses with a schema and throws the 400 above when the input does not fit. */
export function parseWith<T extends z.ZodType>(schema: T, input: unknown, code?: string): z.infer<T> {
  const result = schema.safeParse(input)
  if (!result.success) throw validationError(result.error, input, code)
  return result.data
}
