/**
 * The one structured log line of every worker and Durable Object: a JSON object on one line whose
 * fixed fields come first (`level`, `event`, then `request_id`, `tenant_id`, `code`, `status`,
 * `detail` where known), so one log query filters on them across all workers. Context of the
 * event (`job_id`, `kind`, `log` …) follows as flat fields. Warnings and errors go to stderr
 * (`console.error`), the rest to stdout; Workers Logs and `wrangler tail` index both.
 * `detail` is for operators only: it may hold an AppError's internal message, never sent to clients.
 */
import { AppError, appErrorData, type Refused, toAppError } from '../http/errors'

export type LogLevel = 'info' | 'warn' | 'error'

export interface LogFields {
  request_id?: string | undefined
  tenant_id?: string | undefined
  /** The AppError code, when the event is an error the product names. */
  code?: string | undefined
  status?: number | undefined
  detail?: string | undefined
  [context: string]: string | number | boolean | null | undefined
}

/** An error and its causes on one line: drizzle and the driver wrap the reason a query or connection failed as `cause`. */
export function describeError(err: unknown): string {
  const parts: string[] = []
  let current: unknown = err
  for (let depth = 0; current !== undefined && current !== null && depth < 4; depth++) {
    parts.push(current instanceof Error ? current.message.split('\n')[0]! : String(current))
    current = current instanceof Error ? current.cause : undefined
  }
  return parts.join(' <- ')
}

/** Writes one line: `event` is snake_case and says what happened (`audit_append_failed`). */
export function log(level: LogLevel, event: string, fields: LogFields = {}): void {
  const line = JSON.stringify({ level, event, ...fields })
  if (level === 'info') console.log(line)
  else console.error(line)
}

/** The fields that describe a failure: an AppError's code, status and internal detail, or any other error's message and causes. */
export function errorFields(err: unknown): Pick<LogFields, 'code' | 'status' | 'detail'> {
  if (!(err instanceof AppError)) return { detail: describeError(err) }
  const detail = err.internalMessage ?? err.message
  return {
    code: err.code,
    status: err.status,
    detail: err.cause === undefined ? detail : `${detail} <- ${describeError(err.cause)}`,
  }
}

/** Logs an error the product answers with a 5xx (`server_error`); a 4xx is the client's to fix and is not logged. */
export function logServerError(err: AppError, fields: LogFields = {}): void {
  if (err.status >= 500) log('error', 'server_error', { ...fields, ...errorFields(err) })
}

/**
 * What an RPC method answers instead of throwing: the error as data (shared/http/errors.ts
 * `AppErrorData`, revived by the caller with `reviveAppError`). A 5xx is logged here, the one side
 * that still has its internal detail.
 */
export function refused(err: unknown, fields: LogFields = {}): Refused {
  const error = toAppError(err)
  logServerError(error, fields)
  return { ok: false, error: appErrorData(error) }
}
