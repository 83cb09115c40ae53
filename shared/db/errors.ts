/**
 * What a database failure means for the client. Most are outages (503 with Retry-After, the
 * driver's detail in logs only), but two kinds are not:
 *
 * - the request's own text that Postgres cannot store: NUL, invalid UTF-8, an unpaired surrogate in
 *   JSON (SQLSTATE 22021 character_not_in_repertoire, 22P05 untranslatable_character, and 22P02
 *   when it is about Unicode in JSON). A retry would fail the same way, so it is a 400
 *   `invalid_character` (the gateway refuses these in JSON bodies already; this covers whatever
 *   else reaches the database);
 * - a statement that ran out of time: the server's own cancellation (57014, from the
 *   statement_timeout every connection starts with) or the client's deadline when the server did
 *   not answer at all. Still a 503, but one that says so.
 */
import { AppError } from '../http/errors'
import { CLIENT_GRACE_MS, type DatabaseEnv, QUERY_READ_TIMEOUT, statementTimeoutMs } from './client'

interface DriverError {
  code?: unknown
  message?: unknown
  detail?: unknown
}

/** The driver's error inside drizzle's wrapper (DrizzleQueryError keeps it as `cause`). */
function driverErrors(err: unknown): DriverError[] {
  const chain: DriverError[] = []
  let current: unknown = err
  for (let i = 0; i < 5 && typeof current === 'object' && current !== null; i++) {
    chain.push(current as DriverError)
    current = (current as { cause?: unknown }).cause
  }
  return chain
}

const ENCODING_CODES = new Set(['22021', '22P05'])

function isEncodingError(e: DriverError): boolean {
  if (typeof e.code !== 'string') return false
  if (ENCODING_CODES.has(e.code)) return true
  // 22P02 is any "invalid input syntax"; only its Unicode-in-JSON cases are the client's text.
  return (
    e.code === '22P02' &&
    /unicode|surrogate|\\u0000/i.test(`${String(e.message ?? '')} ${String(e.detail ?? '')}`)
  )
}

export type DatabaseFailure = 'encoding' | 'statement_timeout' | 'client_timeout' | 'unavailable'

export function classifyDatabaseError(err: unknown): DatabaseFailure {
  for (const e of driverErrors(err)) {
    if (isEncodingError(e)) return 'encoding'
    if (e.code === '57014') return 'statement_timeout'
    if (
      e.message === QUERY_READ_TIMEOUT ||
      (typeof e.message === 'string' &&
        e.message.startsWith('Connection terminated due to connection timeout'))
    ) {
      return 'client_timeout'
    }
  }
  return 'unavailable'
}

function internalDetail(err: unknown): string {
  return driverErrors(err)
    .map((e) => [e.code, e.message, e.detail].filter((v) => v !== undefined).join(' '))
    .join(' <- ')
}

/**
 * The AppError for a database failure of `store` (`<store>_store_unavailable` for outages and
 * timeouts, 400 `invalid_character` for text Postgres cannot store).
 */
export function databaseFailure(
  err: unknown,
  store: string,
  env: Pick<DatabaseEnv, 'DATABASE_STATEMENT_TIMEOUT_MS'>,
): AppError {
  const kind = classifyDatabaseError(err)
  const options = { internalMessage: internalDetail(err), cause: err }
  if (kind === 'encoding') {
    return new AppError(
      400,
      'invalid_character',
      'The request contains text the database cannot store (a NUL character, invalid UTF-8, or an unpaired UTF-16 surrogate); remove it and send the request again.',
      options,
    )
  }
  const retry = { ...options, headers: { 'retry-after': '2' } }
  const timeout = statementTimeoutMs(env)
  if (kind === 'statement_timeout' || kind === 'client_timeout') {
    return new AppError(
      503,
      `${store}_store_unavailable`,
      kind === 'statement_timeout'
        ? `The ${store} store cancelled this request's query after ${timeout / 1000} s; retry shortly, and narrow the request if it keeps happening.`
        : `The ${store} store did not answer within ${(timeout + CLIENT_GRACE_MS) / 1000} s; retry shortly.`,
      retry,
    )
  }
  return new AppError(
    503,
    `${store}_store_unavailable`,
    `The ${store} store is unavailable; retry shortly.`,
    retry,
  )
}
