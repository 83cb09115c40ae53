/**
 * The Hono app every family worker starts from: request context from the gateway, JSON bodies
 * read once with the route's limit, zod validation errors as one clear 400, and one error
 * handler that renders `AppError` (unknown errors become an opaque 500 with the request id).
 */
import { OpenAPIHono } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { isJsonContentType, parseJsonBody, readJsonText } from '../http/body'
import { AppError, toAppError } from '../http/errors'
import { validationError } from '../http/validation'
import { logServerError } from './log'
import {
  bodyTextOf,
  type Identity,
  type RequestContext,
  requestContextOf,
  requireIdentity,
} from './request-context'

export interface FamilyVariables {
  request: RequestContext
}

export interface FamilyEnv<Bindings extends object> {
  Bindings: Bindings
  Variables: FamilyVariables
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const DEFAULT_MAX_BODY = 64 * 1024

/** What a problem with the whole input is about, by the part of the request validated. */
const ROOT_NAMES: Record<string, string> = {
  json: 'the request body',
  query: 'the query string',
  param: 'the path',
  header: 'the headers',
}

async function inputOf(c: Context, target: string): Promise<unknown> {
  if (target === 'json') return c.req.json().catch(() => undefined)
  if (target === 'query') return c.req.query()
  if (target === 'param') return c.req.param()
  if (target === 'header') return Object.fromEntries(c.req.raw.headers)
  return undefined
}

export interface FamilyAppOptions {
  /**
   * Path prefixes whose bodies the routes read themselves, whatever their Content-Type (OTLP
   * JSON is validated, size-limited after decompression and forwarded byte for byte by the
   * telemetry family), so the JSON body is not read ahead for them.
   */
  rawBodyPrefixes?: readonly string[]
  /**
   * The family's error body when it is not the JSON one for every route: the telemetry family
   * answers its OTLP routes in the request's OTLP encoding. Still the one onError of the worker.
   */
  renderError?: (c: Context, error: AppError, requestId: string) => Response
}

export function createFamilyApp<Bindings extends object>(options: FamilyAppOptions = {}) {
  const rawBodyPrefixes = options.rawBodyPrefixes ?? []
  const app = new OpenAPIHono<FamilyEnv<Bindings>>({
    defaultHook: async (result, c) => {
      if (!result.success)
        throw validationError(result.error, await inputOf(c, result.target), {
          root: ROOT_NAMES[result.target],
        })
    },
  })

  app.use(async (c, next) => {
    const bound = requestContextOf(c.req.raw)
    const context: RequestContext = bound ?? {
      requestId: c.req.header('x-request-id') ?? `req_${crypto.randomUUID().replaceAll('-', '')}`,
      identity: null,
      maxBodyBytes: DEFAULT_MAX_BODY,
      baseUrl: new URL(c.req.url).origin,
    }
    c.set('request', context)
    // Prepared headers go onto every response the app builds (no copy of a finished response).
    c.header('x-request-id', context.requestId)
    if (
      BODY_METHODS.has(c.req.method) &&
      isJsonContentType(c.req.header('content-type') ?? null) &&
      !rawBodyPrefixes.some((prefix) => c.req.path.startsWith(prefix))
    ) {
      const text =
        bodyTextOf(c.req.raw) ?? (await readJsonText(c.req.raw, context.maxBodyBytes || DEFAULT_MAX_BODY))
      const json = parseJsonBody(text)
      // Hono caches body reads as promises; handlers and validators reuse these (parsed once).
      const cache = c.req.bodyCache as Record<string, unknown>
      cache.text = Promise.resolve(text)
      cache.json = Promise.resolve(json)
    }
    await next()
  })

  app.notFound((c) => {
    throw new AppError(404, 'not_found', `No route for ${c.req.method} ${new URL(c.req.url).pathname}.`)
  })

  app.onError((err, c) => {
    const requestId = c.get('request')?.requestId ?? 'unknown'
    const appError =
      err instanceof HTTPException && !(err instanceof AppError)
        ? new AppError(err.status, 'invalid_request', err.message || 'The request could not be processed.')
        : toAppError(err)
    logServerError(appError, { request_id: requestId })
    return options.renderError ? options.renderError(c, appError, requestId) : appError.toResponse(requestId)
  })

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key (`svc_sk_live_...` or `svc_sk_test_...`) or an access token from /auth.',
  })

  return app
}

/** The authenticated identity; the gateway guarantees it on credential routes. */
export function identityOf(c: Context<FamilyEnv<object>>): Identity {
  return requireIdentity(c.get('request'))
}

/** The caller's identity, refused with 403 `insufficient_role` unless it is an owner or admin. */
export function requireAdmin<E extends object>(c: Context<FamilyEnv<E>>, action: string): Identity {
  const identity = requireIdentity(c.get('request'))
  if (identity.role !== 'owner' && identity.role !== 'admin') {
    throw new AppError(
      403,
      'insufficient_role',
      `Only workspace owners and admins may ${action}; this credential has role "${identity.role}".`,
    )
  }
  return identity
}
