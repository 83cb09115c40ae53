/**
 * What the gateway refuses in a JSON body before any family sees it (400, naming the field as
 * clients write it, OpenAI's `param`):
 *
 * - nesting deeper than MAX_JSON_DEPTH (64) objects and arrays (`json_too_deep`): recursive code
 *   downstream (JSON serialisers, Postgres's jsonb parser, validators) must never meet a depth
 *   that exhausts its stack;
 * - `\u0000` and unpaired UTF-16 surrogates in strings and field names (`invalid_character`):
 *   neither is valid text for Postgres (NUL cannot be stored, a lone surrogate is not Unicode),
 *   and without this check they surfaced as 503s that clients retried forever;
 * - numbers that do not survive `JSON.parse` (`number_out_of_range`): beyond the double range
 *   (1e400 would become Infinity, then null) or integers beyond ±(2^53 − 1), which would be
 *   silently rounded;
 * - the field names `__proto__`, `constructor` and `prototype` (`reserved_field_name`), which
 *   reach JavaScript object internals as soon as code merges objects.
 *
 * One linear scan of the text, cheap on the chat hot path: string contents are skipped with
 * native `indexOf` between escapes, and the field path is only worked out (by a second scan) once
 * something is refused. Raw lone surrogates cannot occur: the gateway decodes bodies as strict
 * UTF-8 (body.ts). Malformed JSON is left to the parser, which answers 400 `malformed_json`.
 */
import { AppError } from './errors'
import { issuePath } from './validation'

/** Deepest nesting of objects and arrays accepted in a JSON body (documented in README). */
export const MAX_JSON_DEPTH = 64

export const RESERVED_FIELD_NAMES: readonly string[] = ['__proto__', 'constructor', 'prototype']

type ProblemKind = 'depth' | 'nul' | 'surrogate' | 'number' | 'reserved'

interface Problem {
  kind: ProblemKind
  /** Index of the token the problem is in: a string, a number, or the bracket that opens too deep. */
  at: number
  /** The offending text: the escape, the number, or the field name. */
  detail: string
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const COLON = 0x3a
const COMMA = 0x2c

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30
  if (c >= 0x41 && c <= 0x46) return c - 0x37
  if (c >= 0x61 && c <= 0x66) return c - 0x57
  return -1
}

/** The code unit of a `\uXXXX` escape whose four hex digits start at `i`, or -1. */
function escapedUnit(text: string, i: number): number {
  let value = 0
  for (let k = i; k < i + 4; k++) {
    const digit = hexValue(text.charCodeAt(k))
    if (digit < 0) return -1
    value = value * 16 + digit
  }
  return value
}

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}

/** Whether the string token ending at `end` (its closing quote) is a field name. */
function isFieldName(text: string, end: number): boolean {
  let i = end + 1
  while (i < text.length && isWhitespace(text.charCodeAt(i))) i++
  return text.charCodeAt(i) === COLON
}

function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45
}

/**
 * Scans a string token starting at its opening quote. Returns the index after its closing quote
 * (-1 when unterminated) or the problem found in it.
 */
function scanString(text: string, start: number): number | Problem {
  let i = start + 1
  let backslash = text.indexOf('\\', i)
  let quote = text.indexOf('"', i)
  let escaped = false
  for (;;) {
    if (quote === -1) return -1
    if (backslash === -1 || backslash > quote) break
    escaped = true
    let next = backslash + 2
    if (text.charCodeAt(backslash + 1) === 0x75) {
      const unit = escapedUnit(text, backslash + 2)
      if (unit === 0) return { kind: 'nul', at: start, detail: '\\u0000' }
      if (unit >= 0xdc00 && unit <= 0xdfff) {
        return { kind: 'surrogate', at: start, detail: text.slice(backslash, backslash + 6) }
      }
      if (unit >= 0xd800 && unit <= 0xdbff) {
        const low =
          text.charCodeAt(backslash + 6) === BACKSLASH && text.charCodeAt(backslash + 7) === 0x75
            ? escapedUnit(text, backslash + 8)
            : -1
        if (low < 0xdc00 || low > 0xdfff) {
          return { kind: 'surrogate', at: start, detail: text.slice(backslash, backslash + 6) }
        }
        next = backslash + 12
      } else if (unit >= 0) {
        next = backslash + 6
      }
    }
    i = next
    backslash = text.indexOf('\\', i)
    if (quote < i) quote = text.indexOf('"', i)
  }
  const end = quote
  const length = end - start - 1
  // Field names are compared only when they could be one of the reserved ones.
  if ((escaped || length === 9 || length === 11 || length === 13) && isFieldName(text, end)) {
    const raw = text.slice(start, end + 1)
    let name: unknown = raw.slice(1, -1)
    if (escaped) {
      try {
        name = JSON.parse(raw)
      } catch {
        name = null
      }
    }
    if (typeof name === 'string' && RESERVED_FIELD_NAMES.includes(name)) {
      return { kind: 'reserved', at: start, detail: name }
    }
  }
  return end + 1
}

/** Scans a number token; returns the index after it or the problem. */
function scanNumber(text: string, start: number): number | Problem {
  let i = start
  let exact = true
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (!isNumberChar(c)) break
    if (c === 0x2e || c === 0x65 || c === 0x45) exact = false
    i++
  }
  const hasExponent = !exact && /[eE]/.test(text.slice(start, i))
  if (i - start > 15 || hasExponent) {
    const token = text.slice(start, i)
    const value = Number(token)
    if (Number.isNaN(value)) return i // malformed: the parser's to report
    if (!Number.isFinite(value) || (exact && !Number.isSafeInteger(value))) {
      return { kind: 'number', at: start, detail: token }
    }
  }
  return i
}

/** The first problem in the text, or null. Never throws, whatever the text. */
export function findJsonInputProblem(text: string): Problem | null {
  let depth = 0
  let i = 0
  const n = text.length
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      const after = scanString(text, i)
      if (typeof after !== 'number') return after
      if (after === -1) return null
      i = after
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++
      if (depth > MAX_JSON_DEPTH) return { kind: 'depth', at: i, detail: String(MAX_JSON_DEPTH) }
      i++
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (depth > 0) depth--
      i++
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const after = scanNumber(text, i)
      if (typeof after !== 'number') return after
      i = after
    } else {
      i++
    }
  }
  return null
}

interface Frame {
  array: boolean
  /** The member being read: the array index, or the object key once read (null before it). */
  segment: string | number | null
}

/**
 * The path of the value (or field name) whose token starts at `target`, as segments. A second
 * scan, run only for a refusal; it follows the structure the first scan already walked.
 */
export function jsonPathAt(text: string, target: number): (string | number)[] {
  const frames: Frame[] = []
  const path = () => frames.map((f) => f.segment ?? '')
  let i = 0
  while (i < text.length && i <= target) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      let end = i + 1
      for (;;) {
        const q = text.indexOf('"', end)
        if (q === -1) return path()
        let slashes = 0
        while (text.charCodeAt(q - 1 - slashes) === BACKSLASH) slashes++
        end = q + 1
        if (slashes % 2 === 0) break
      }
      const top = frames[frames.length - 1]
      const isKey = top !== undefined && !top.array && top.segment === null && isFieldName(text, end - 1)
      if (isKey) {
        let key: string
        try {
          key = JSON.parse(text.slice(i, end)) as string
        } catch {
          key = text.slice(i + 1, end - 1)
        }
        if (i === target) return [...path().slice(0, -1), key]
        top.segment = key
      } else if (i === target) {
        return path()
      }
      i = end
      continue
    }
    if (i === target) return path()
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      frames.push({ array: c === OPEN_BRACKET, segment: c === OPEN_BRACKET ? 0 : null })
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      frames.pop()
    } else if (c === COMMA) {
      const top = frames[frames.length - 1]
      if (top) top.segment = top.array ? (top.segment as number) + 1 : null
    }
    i++
  }
  return path()
}

/** A path segment shown as text: control characters and lone surrogates JSON-escaped. */
function printable(segment: string | number): string | number {
  if (typeof segment === 'number') return segment
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are exactly the ones to escape
  return /[\u0000-\u001f\ud800-\udfff]/.test(segment) ? JSON.stringify(segment).slice(1, -1) : segment
}

const MAX_SHOWN_PATH = 60

function refusalFor(problem: Problem, text: string): AppError {
  const path = issuePath(jsonPathAt(text, problem.at).map(printable))
  const param = path === '' ? null : path
  const where = path === '' ? 'The body' : path
  const shown = path.length > MAX_SHOWN_PATH ? `${path.slice(0, MAX_SHOWN_PATH)}...` : path
  switch (problem.kind) {
    case 'depth':
      return new AppError(
        400,
        'json_too_deep',
        `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels of objects and arrays (at ${shown || 'the top'}); send a flatter structure.`,
        { param: param && param.length > MAX_SHOWN_PATH ? `${param.slice(0, MAX_SHOWN_PATH)}...` : param },
      )
    case 'nul':
      return new AppError(
        400,
        'invalid_character',
        `${where} contains a NUL character (\\u0000), which cannot be stored or processed; remove it (send binary data base64-encoded).`,
        { param },
      )
    case 'surrogate':
      return new AppError(
        400,
        'invalid_character',
        `${where} contains an unpaired UTF-16 surrogate (${problem.detail}), which is not valid Unicode; send whole characters (a high surrogate \\ud800-\\udbff followed by a low one \\udc00-\\udfff, or the character itself).`,
        { param },
      )
    case 'number':
      return new AppError(
        400,
        'number_out_of_range',
        `${where} is ${problem.detail.length > 40 ? `${problem.detail.slice(0, 40)}...` : problem.detail}, which a JSON number cannot carry exactly here (finite, and integers within ±9007199254740991); send it as a string.`,
        { param },
      )
    case 'reserved':
      return new AppError(
        400,
        'reserved_field_name',
        `${where}: the field name "${problem.detail}" is reserved (so are ${RESERVED_FIELD_NAMES.filter(
          (n) => n !== problem.detail,
        )
          .map((n) => `"${n}"`)
          .join(' and ')}); rename the field.`,
        { param },
      )
  }
}

/** Throws a 400 naming the field when the JSON text breaks one of the rules above. */
export function checkJsonText(text: string): void {
  const problem = findJsonInputProblem(text)
  if (problem) throw refusalFor(problem, text)
}
