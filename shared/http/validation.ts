/**
 * The one renderer of zod issues for clients: every route, the agent turn request and the chat
 * request say a problem the same way, "<field> <rule> (got <value>)", e.g.
 * "temperature must be between 0 and 2 (got 3.5)", with the first field as `param` and at most
 * MAX_ISSUES problems per message (then "and N more").
 *
 * A schema may give its own rule with `{ error: 'must be between 0 and 2' }`: a rule phrase that
 * starts lower-case ("must …", "is …", "has …") and leaves out the field name, which the renderer
 * puts in front (and the value after, unless the rule already says "(got …)"); any other
 * lower-case sentence of a schema follows the field name and a colon, as it is. zod's own
 * English messages start with a capital ("Too big: …"); for those the rule is derived from the
 * issue instead, so routes validated by the OpenAPI layer read the same as hand-parsed bodies.
 */
import type { z } from 'zod'
import { AppError } from './errors'

/** Problems named in one message: enough to fix several at once, short enough to read. */
export const MAX_ISSUES = 3

type Issue = z.core.$ZodIssue

/** `messages[0].content` style: the path of a field as clients write it (OpenAI's `param`). */
export function issuePath(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('')
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = input
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined
    cur = (cur as Record<PropertyKey, unknown>)[key]
  }
  return cur
}

/** What was sent, briefly: counts for arrays and long strings rather than their content. */
export function describeValue(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : `an array of ${value.length} items`
  if (value !== null && typeof value === 'object') return 'an object'
  if (typeof value === 'string' && value.length > 60) return `a ${value.length}-character string`
  return JSON.stringify(value) ?? String(value)
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`
const quoted = (values: readonly unknown[]) => values.map((v) => JSON.stringify(v)).join(', ')

/** A schema's own rule phrase: lower-case, and says what the field must be or is. */
const RULE_PHRASE = /^(must|is|are|has|have|requires|does|may|can|should|needs)\b/

/** The rule an issue states, as a phrase that follows the field name. */
function ruleOf(issue: Issue, received: unknown): string {
  if (issue.code === 'invalid_type' && received === undefined) return 'is required'
  if (/^[a-z]/.test(issue.message)) return issue.message
  switch (issue.code) {
    case 'invalid_type': {
      const expected = String(issue.expected)
      if (expected === 'int') return 'must be an integer'
      if (expected === 'object' || expected === 'record') return 'must be a JSON object'
      if (expected === 'boolean') return 'must be a boolean (true or false)'
      return `must be ${/^[aeiou]/.test(expected) ? 'an' : 'a'} ${expected}`
    }
    case 'too_small': {
      const min = Number(issue.minimum)
      if (issue.origin === 'array' || issue.origin === 'set')
        return `must contain at least ${plural(min, 'item')}`
      if (issue.origin === 'string')
        return min === 1 ? 'must be a non-empty string' : `must be at least ${plural(min, 'character')} long`
      return `must be ${issue.inclusive === false ? '>' : '>='} ${min}`
    }
    case 'too_big': {
      const max = Number(issue.maximum)
      if (issue.origin === 'array' || issue.origin === 'set')
        return `must contain at most ${plural(max, 'item')}`
      if (issue.origin === 'string') return `must be at most ${plural(max, 'character')} long`
      return `must be ${issue.inclusive === false ? '<' : '<='} ${max}`
    }
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${quoted(issue.values)}`
    case 'invalid_format':
      if (issue.format === 'regex') return `must match ${String(issue.pattern)}`
      return `must be a valid ${issue.format === 'uuid' ? 'UUID' : issue.format}`
    case 'unrecognized_keys':
      return `has unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.join(', ')}; remove ${issue.keys.length === 1 ? 'it' : 'them'}`
    case 'invalid_union': {
      // A discriminated union's issue carries the discriminator's values (zod copies them from the raw issue).
      const options = (issue as { options?: unknown }).options
      return issue.discriminator && Array.isArray(options)
        ? `must be one of ${quoted(options)}`
        : 'does not match any allowed form'
    }
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`
    default:
      return 'is invalid'
  }
}

/** Follows a union error into the branch the value was meant for (e.g. a bad content part). */
function innermost(issue: Issue, basePath: readonly PropertyKey[]): { issue: Issue; path: PropertyKey[] } {
  const path = [...basePath, ...issue.path]
  if (issue.code !== 'invalid_union' || issue.discriminator || issue.errors.length === 0)
    return { issue, path }
  const meant = issue.errors.find(
    (branch) => branch.length > 0 && !branch.every((i) => i.code === 'invalid_type' && i.path.length === 0),
  )
  const first = meant?.[0]
  return first ? innermost(first, path) : { issue, path }
}

interface Described {
  text: string
  param: string | null
}

export interface DescribeOptions {
  /** What the whole input is called when the problem is the input itself. */
  root?: string
  /** False where the input may hold secrets (private keys, provider credentials): rules only. */
  showValues?: boolean
}

/**
 * One issue as "<field> <rule> (got <value>)". The value is the issue's own input when the parse
 * reported it (`reportInput: true`), else read from `input` at the issue's path.
 */
function describe(first: Issue, input: unknown, options: DescribeOptions = {}): Described {
  const { issue, path } = innermost(first, [])
  // A refinement's issue carries the refined value (a whole array, say), not the field it names.
  // What the client sent at that path (before any transform such as trim); a refinement's issue
  // carries the refined value (a whole array, say), not the field it names.
  let received = valueAt(input, path)
  if (received === undefined && 'input' in issue && issue.code !== 'custom') received = issue.input
  if (issue.code === 'invalid_union' && issue.discriminator && received && typeof received === 'object') {
    received = (received as Record<string, unknown>)[issue.discriminator]
  }
  const param = path.length === 0 ? null : issuePath(path)
  const rule = ruleOf(issue, received)
  // A schema's sentence that is not a rule phrase ("duplicate provider id …") follows a colon.
  if (/^[a-z]/.test(rule) && !RULE_PHRASE.test(rule))
    return { text: `${param ?? options.root ?? 'the request body'}: ${rule}`, param }
  const showValue =
    options.showValues !== false &&
    received !== undefined &&
    issue.code !== 'unrecognized_keys' &&
    !rule.includes('(got ')
  const root = options.root ?? 'the request body'
  return { text: `${param ?? root} ${rule}${showValue ? ` (got ${describeValue(received)})` : ''}`, param }
}

/** Up to MAX_ISSUES issues joined with "; ", then "and N more". */
export function describeIssues(error: z.ZodError, input: unknown, options: DescribeOptions = {}): string {
  const issues = error.issues
  const shown = issues.slice(0, MAX_ISSUES).map((i) => describe(i, input, options).text)
  const more = issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : ''
  return shown.join('; ') + more
}

/** The client's 400 for input that does not fit a schema; `param` is the first problem's field. */
export function validationError(
  error: z.ZodError,
  input: unknown,
  options: DescribeOptions & { code?: string } = {},
): AppError {
  const first = error.issues[0]
  const code = options.code ?? 'invalid_request_body'
  if (!first) return new AppError(400, code, `${options.root ?? 'the request body'} is invalid`)
  return new AppError(400, code, describeIssues(error, input, options), {
    param: describe(first, input).param,
  })
}

/** Parses with a schema and throws the 400 above when the input does not fit. */
export function parseWith<T extends z.ZodType>(
  schema: T,
  input: unknown,
  options: DescribeOptions & { code?: string } = {},
): z.infer<T> {
  const result = schema.safeParse(input, { reportInput: true })
  if (!result.success) throw validationError(result.error, input, options)
  return result.data
}
