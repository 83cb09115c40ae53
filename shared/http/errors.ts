/**
 * One error type for every worker. `AppError` carries the public status, a stable
 * machine code and a message that tells the caller what was wrong and how to fix it.
 * `internalMessage` is for logs only and never reaches a client.
 *
 * Public body (OpenAI shape, used on every route family):
 *   {"error":{"message","type","param","code"}}
 * Routes that must answer with the spec's action-required shape (402/403/429 with
 * `svc_upgrade`) pass `extraBody`, which is merged beside `error`. The upgrade decision is also
 * copied into `error` (the spec leaves `error` free-form): the openai SDK keeps only `body.error`
 * on its error object, so `err.error.svc_upgrade` is how its users read the decision.
 */

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'request_too_large'
  | 'unsupported_media_type'
  | 'insufficient_quota'
  | 'rate_limit_error'
  | 'upstream_error'
  | 'service_unavailable'
  | 'api_error'

const TYPE_BY_STATUS: Record<number, ErrorType> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'insufficient_quota',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  409: 'conflict_error',
  413: 'request_too_large',
  415: 'unsupported_media_type',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  502: 'upstream_error',
  503: 'service_unavailable',
  504: 'upstream_error',
}

export function errorTypeFor(status: number): ErrorType {
  return TYPE_BY_STATUS[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error')
}

export interface AppErrorOptions {
  /** The request field the error is about (OpenAI's `param`). */
  param?: string | null
  /** Overrides the type derived from the status. */
  type?: ErrorType
  /** For logs only; never sent to a client. */
  internalMessage?: string
  cause?: unknown
  headers?: Record<string, string>
  /** Properties placed beside `error` in the body (e.g. `svc_upgrade`). */
  extraBody?: Record<string, unknown>
}

export class AppError extends Error {
  readonly status: number
  readonly code: string
  readonly param: string | null
  readonly type: ErrorType
  readonly internalMessage: string | undefined
  readonly headers: Record<string, string>
  readonly extraBody: Record<string, unknown> | undefined

  constructor(status: number, code: string, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'AppError'
    this.status = status
    this.code = code
    this.param = options.param ?? null
    this.type = options.type ?? errorTypeFor(status)
    this.internalMessage = options.internalMessage
    this.headers = options.headers ?? {}
    this.extraBody = options.extraBody
  }

  toBody(): Record<string, unknown> {
    const upgrade = this.extraBody?.svc_upgrade
    return {
      error: {
        message: this.message,
        type: this.type,
        param: this.param,
        code: this.code,
        ...(upgrade === undefined ? {} : { svc_upgrade: upgrade }),
      },
      ...this.extraBody,
    }
  }

  /** The error response as plain values (header names lower-cased): status, headers, JSON body. */
  toPlain(requestId?: string): { status: number; headers: Record<string, string>; body: string } {
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(this.headers)) headers[name.toLowerCase()] = value
    headers['content-type'] = 'application/json'
    if (requestId) headers['x-request-id'] = requestId
    return { status: this.status, headers, body: JSON.stringify(this.toBody()) }
  }

  toResponse(requestId?: string): Response {
    const plain = this.toPlain(requestId)
    return new Response(plain.body, { status: plain.status, headers: plain.headers })
  }
}

/** Turns anything thrown into an AppError; unknown errors become an opaque 500. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err
  const internal = err instanceof Error ? `${err.name}: ${err.message}` : String(err)
  return new AppError(
    500,
    'internal_error',
    'The server hit an unexpected error. Retry the request; if it keeps failing, contact support with the x-request-id of the response.',
    { internalMessage: internal, cause: err },
  )
}

/**
 * An AppError as plain values, the one shape in which it crosses an RPC boundary (a Durable
 * Object's answer): a returned class instance loses its class and a thrown one arrives as a plain
 * Error. The internal message and the cause stay on the side that knows them.
 */
// Type aliases, not interfaces: workerd's RPC typing keeps only types it can tell are serialisable.
export type AppErrorData = {
  status: number
  code: string
  message: string
  param: string | null
  type: ErrorType
  headers: Record<string, string>
  /** The extra body as JSON text: RPC's typing cannot tell that `unknown` values are serialisable. */
  extraBody: string | null
}

/** An RPC method's refusal: the same shape from every Durable Object. */
export type Refused = { ok: false; error: AppErrorData }

export function appErrorData(err: AppError): AppErrorData {
  return {
    status: err.status,
    code: err.code,
    message: err.message,
    param: err.param,
    type: err.type,
    headers: err.headers,
    extraBody: err.extraBody === undefined ? null : JSON.stringify(err.extraBody),
  }
}

/** The AppError an RPC refusal stands for, as the caller rethrows it. */
export function reviveAppError(data: AppErrorData): AppError {
  return new AppError(data.status, data.code, data.message, {
    param: data.param,
    type: data.type,
    headers: data.headers,
    ...(data.extraBody === null ? {} : { extraBody: JSON.parse(data.extraBody) as Record<string, unknown> }),
  })
}
