/**
 * Base class of every family worker's default export. Family workers are not routable: the
 * gateway reaches them with a service-binding `fetch()` carrying the request context it
 * established (identity, request id) in a signed internal header. A request without a valid
 * context header gets 404, as if the worker were not there.
 */
import { WorkerEntrypoint } from 'cloudflare:workers'
import { AppError } from '../http/errors'
import { CONTEXT_HEADER, openContext } from './internal-context'
import { bindRequestContext, type RequestContext } from './request-context'

/** Secret shared by the gateway and the family workers (see internal-context.ts). */
export interface InternalContextEnv {
  INTERNAL_CONTEXT_SECRET?: string
}

export interface FamilyApp<Env> {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response>
  getOpenAPI31Document(config: { openapi: string; info: { title: string; version: string } }): unknown
}

export abstract class FamilyEntrypoint<Env = unknown> extends WorkerEntrypoint<Env> {
  protected abstract readonly app: FamilyApp<Env>

  override async fetch(request: Request): Promise<Response> {
    const secret = (this.env as InternalContextEnv).INTERNAL_CONTEXT_SECRET
    const context = secret ? await openContext(request.headers.get(CONTEXT_HEADER), secret) : null
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
  serve(request: Request, context: RequestContext): Promise<Response> | Response {
    bindRequestContext(request, context)
    return this.app.fetch(request, this.env, this.ctx)
  }

  /** This family's part of the OpenAPI document (the gateway merges all families). */
  openapi(): unknown {
    return this.app.getOpenAPI31Document({
      openapi: '3.1.0',
      info: { title: 'family', version: '2026-08-04' },
    })
  }
}
