/**
 * Base class of every family worker's default export. Family workers are not routable: the
 * gateway reaches them with a service-binding `fetch()` carrying the request context it
 * established (identity, request id) in a signed internal header. A request without a valid
 * context header gets 404, as if the worker were not there.
 */
import { WorkerEntrypoint } from 'cloudflare:workers'
import { AppError } from '../http/errors'
import { openContext } from './internal-context'
import { bindRequestContext, type RequestContext } from './request-context'

/** Secret shared by the gateway and the family workers (see internal-context.ts). */
export interface InternalContextEnv {
  INTERNAL_CONTEXT_SECRET?: string
}

export interface FamilyApp<Env> {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response>
  getOpenAPI31Document(config: { openapi: string; info: { title: string; version: string } }): unknown
}

/**
 * Every family response carries the request id. The family app puts it on the responses it
 * builds; a handler that returns a Response of its own (a stream, a relayed upstream answer)
 * gets it here, on a copy only when that response's headers are immutable.
 */
function withRequestId(response: Response, requestId: string): Response {
  if (response.headers.get('x-request-id') === requestId) return response
  try {
    response.headers.set('x-request-id', requestId)
    return response
  } catch {
    const copy = new Response(response.body, response)
    copy.headers.set('x-request-id', requestId)
    return copy
  }
}

export abstract class FamilyEntrypoint<Env = unknown> extends WorkerEntrypoint<Env> {
  protected abstract readonly app: FamilyApp<Env>

  override async fetch(request: Request): Promise<Response> {
    const secret = (this.env as InternalContextEnv).INTERNAL_CONTEXT_SECRET
    const context = secret ? await openContext(request.headers, secret) : null
    if (!context) {
      return new AppError(
        404,
        'not_routable',
        'This worker is reachable only through the gateway.',
      ).toResponse()
    }
    return this.serve(request, context)
  }

  /** Handles a request the gateway forwarded; subclasses may wrap it (e.g. to add headers). */
  async serve(request: Request, context: RequestContext): Promise<Response> {
    bindRequestContext(request, context)
    return withRequestId(await this.app.fetch(request, this.env, this.ctx), context.requestId)
  }

  /** This family's part of the OpenAPI document (the gateway merges all families). */
  openapi(): unknown {
    return this.app.getOpenAPI31Document({
      openapi: '3.1.0',
      info: { title: 'family', version: '2026-08-04' },
    })
  }
}
