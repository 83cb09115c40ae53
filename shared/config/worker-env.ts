/**
 * Each worker's configuration is one zod schema over its env, parsed once per isolate (per env
 * object and its values) by `envReader`. Vars and secrets arrive as strings; an unset or blank one takes the
 * documented default (README's configuration table), and any other value must satisfy its rule:
 * a value that does not is an operator error answered 503 `service_misconfigured`, naming the
 * variable and the rule, on every request until it is fixed. Never a silent fallback to the default.
 */
import { z } from 'zod'
import { AppError } from '../http/errors'

const blank = (v: string | undefined): v is undefined => v === undefined || v.trim() === ''

/** A whole number from `min` to `max`; unset or blank: `fallback`. */
export function wholeNumberVar(fallback: number, { min = 1, max = Number.MAX_SAFE_INTEGER } = {}) {
  return z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (blank(v)) return fallback
      const n = Number(v.trim())
      if (!/^\d+$/.test(v.trim()) || n < min || n > max) {
        const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`
        ctx.addIssue({ code: 'custom', message: `must be a whole number ${range}` })
        return z.NEVER
      }
      return n
    })
}

/** A non-negative decimal number; unset or blank: `fallback`. */
export function decimalVar(fallback: number) {
  return z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (blank(v)) return fallback
      if (!/^\d+(\.\d+)?$/.test(v.trim())) {
        ctx.addIssue({ code: 'custom', message: 'must be a decimal number such as 25 or 2.5' })
        return z.NEVER
      }
      return Number(v.trim())
    })
}

/** Trimmed text; unset or blank: `fallback`. */
export function textVar<T extends string | undefined>(fallback: T) {
  return z
    .string()
    .optional()
    .transform((v) => (blank(v) ? fallback : v.trim()))
}

/** An absolute http(s) URL without a trailing slash; unset or blank: undefined. */
export function urlVar() {
  return z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (blank(v)) return undefined
      const text = v.trim().replace(/\/+$/, '')
      if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol)) {
        ctx.addIssue({ code: 'custom', message: 'must be an absolute http(s) URL' })
        return z.NEVER
      }
      return text
    })
}

/** Comma-separated items, trimmed, blanks dropped; unset or blank: `fallback`. */
export function listVar(fallback: readonly string[] = []) {
  return z
    .string()
    .optional()
    .transform((v) =>
      blank(v)
        ? [...fallback]
        : v
            .split(',')
            .map((item) => item.trim())
            .filter((item) => item !== ''),
    )
}

/**
 * A reader for one worker's settings: `read(env)` parses the env once per distinct values of the
 * schema's variables (the result, or the error, is kept per env object together with those raw
 * values, so a deployment parses once per isolate while an env changed in place, as tests do, is
 * read afresh) and returns the typed settings, or throws the 503 naming the first bad variable.
 */
export function envReader<S extends z.ZodType>(worker: string, schema: S): (env: object) => z.output<S> {
  const names = schema instanceof z.ZodObject ? Object.keys(schema.shape) : []
  const parsed = new WeakMap<
    object,
    { raw: unknown[]; result: { settings: z.output<S> } | { error: AppError } }
  >()
  return (env) => {
    const vars = env as Record<string, unknown>
    let entry = parsed.get(env)
    if (!entry || names.some((name, i) => vars[name] !== entry!.raw[i])) {
      const raw = names.map((name) => vars[name])
      const result = schema.safeParse(env)
      entry = {
        raw,
        result: result.success
          ? { settings: result.data }
          : { error: misconfigured(worker, result.error, env) },
      }
      parsed.set(env, entry)
    }
    if ('error' in entry.result) throw entry.result.error
    return entry.result.settings
  }
}

function misconfigured(worker: string, error: z.ZodError, env: object): AppError {
  const problems = error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`)
  // The values go to logs only: a misconfigured secret must not reach a client.
  const values = error.issues.map((issue) => {
    const name = String(issue.path[0])
    return `${name}=${JSON.stringify((env as Record<string, unknown>)[name])}`
  })
  return new AppError(
    503,
    'service_misconfigured',
    `The ${worker} service is misconfigured on this deployment: ${problems.join('; ')}. The operator must fix it; retrying will not help until then.`,
    { internalMessage: `${worker} env: ${problems.join('; ')} (${values.join(', ')})` },
  )
}
