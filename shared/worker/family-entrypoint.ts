/**
 * Base class of every family worker's default export. Family workers are not routable: the
 * gateway reaches them over a service binding and calls `serve()` with the request and the
 * context it established (identity, request id). A plain `fetch()` from anywhere else gets 404.
 */
import { WorkerEntrypoint } from 'cloudflare:workers'
import { AppError } from '../http/errors'
import { bindRequestContext, type RequestContext } from './request-context'

export interface FamilyApp<Env> {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response>
  getOpenAPI31Document(config: { openapi: string; info: { title: string; version: string } }): unknown
}

export abstract class FamilyEntrypoint<Env = unknown> extends WorkerEntrypoint<Env> {
  protected abstract readonly app: FamilyApp<Env>

  override fetch(): Response {
    return new AppError(
      404,
      'not_routable',
      'This worker is reachable only through the gateway.',
    ).toResponse()
  }

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

/** What the gateway sees of a family over its service binding. */
export interface FamilyService {
  serve(request: Request, context: RequestContext): Promise<Response>
  openapi(): Promise<unknown>
}
