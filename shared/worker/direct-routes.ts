/**
 * Direct routes: bodiless GET routes whose handler works on plain values, so the family answers
 * the gateway's RPC without building a `Request`, a Hono context and a `Response` in its isolate
 * (measured: about a quarter of the instructions of a whole authenticated GET through gateway and
 * family, see docs/benchmarks.md). One handler serves both ways:
 *
 * - `directRoutes.get(app, path, handler)` registers it in the family's Hono app (so in-process
 *   callers, HEAD requests and the OpenAPI document see an ordinary route) and in the table
 *   `FamilyEntrypoint.handle()` consults first;
 * - the handler gets the query (first value per name, decoded exactly as Hono's `c.req.query()`),
 *   a header reader and the request context, and returns status, headers and body text; an error
 *   it throws is rendered as the Hono app's error handler renders it.
 *
 * Only exact paths: a route with path parameters stays a Hono route.
 */
import type { Context } from 'hono'
import { getQueryParam } from 'hono/utils/url'
import { toAppError } from '../http/errors'
import { type FamilyEnv, logError } from './family-app'
import type { FamilyResponse, ForwardedRequest, HeaderMap } from './family-rpc'
import type { RequestContext } from './request-context'

export interface DirectRequest {
  /** First value per query parameter name. */
  readonly query: Readonly<Record<string, string>>
  /** A request header by name (any case). */
  header(name: string): string | undefined
  readonly context: RequestContext
}

export interface DirectAnswer {
  readonly status: number
  /** Lower-case names; `x-request-id` is added for the handler. */
  readonly headers: HeaderMap
  /** Text (JSON for JSON answers), or null for a bodiless status such as 304. */
  readonly body: string | null
}

export type DirectHandler = (request: DirectRequest) => DirectAnswer

interface HonoLike {
  get(path: string, handler: (c: Context<FamilyEnv<object>>) => Response): unknown
}

export class DirectRoutes {
  readonly #routes = new Map<string, DirectHandler>()

  /** Serves `handler` for GET `path` through the Hono app and directly over the gateway's RPC. */
  get(app: HonoLike, path: string, handler: DirectHandler): void {
    this.#routes.set(path, handler)
    app.get(path, (c) => {
      const answer = handler({
        query: c.req.query(),
        header: (name) => c.req.header(name),
        context: c.get('request'),
      })
      const status = answer.status as 200
      return answer.body === null
        ? c.body(null, status, answer.headers)
        : c.body(answer.body, status, answer.headers)
    })
  }

  /** The handler for this forwarded request, when it is a GET of a direct route. */
  find(forwarded: ForwardedRequest): DirectHandler | undefined {
    return forwarded.method === 'GET' ? this.#routes.get(forwarded.path) : undefined
  }
}

/** Runs a direct handler on the forwarded request: the answer as the plain values that cross the binding. */
export function answerDirectly(
  handler: DirectHandler,
  forwarded: ForwardedRequest,
  context: RequestContext,
): FamilyResponse {
  const { requestId } = context
  try {
    const answer = handler({
      query: forwarded.url.includes('?') ? (getQueryParam(forwarded.url) as Record<string, string>) : {},
      header: (name) => forwarded.headers[name.toLowerCase()],
      context,
    })
    return {
      status: answer.status,
      headers: { ...answer.headers, 'x-request-id': requestId },
      body: answer.body,
    }
  } catch (err) {
    const error = toAppError(err)
    logError(requestId, error)
    return error.toPlain(requestId)
  }
}
