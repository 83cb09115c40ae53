/**
 * Base class of every family worker's default export. Family workers are not routable: the
 * gateway calls `handle()` over its service binding (JS RPC, see family-rpc.ts) with the request
 * context it established (request id, verified identity, body limit) as a typed argument. Only
 * workers holding the binding can call it, so the context needs no signature; a plain HTTP
 * `fetch()` reaching a family gets 404, as if the worker were not there.
 */
import { WorkerEntrypoint } from 'cloudflare:workers'
import { AppError } from '../http/errors'
import { answerDirectly, type DirectRoutes } from './direct-routes'
import {
  type FamilyResponse,
  type FamilyRpc,
  type ForwardedRequest,
  MAX_BODY_BYTES_CEILING,
  toFamilyResponse,
  toRequest,
} from './family-rpc'
import { bindBodyText, bindRequestContext, type RequestContext } from './request-context'

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

export abstract class FamilyEntrypoint<Env = unknown> extends WorkerEntrypoint<Env> implements FamilyRpc {
  protected abstract readonly app: FamilyApp<Env>
  /** Bodiless GET routes answered from plain values, without the Hono app (direct-routes.ts). */
  protected readonly directRoutes: DirectRoutes | null = null

  override async fetch(): Promise<Response> {
    return new AppError(
      404,
      'not_routable',
      'This worker is reachable only through the gateway.',
    ).toResponse()
  }

  /**
   * RPC for the gateway: one forwarded request, answered with plain values (family-rpc.ts): a
   * direct route by its handler, anything else by the family's Hono app.
   */
  async handle(forwarded: ForwardedRequest): Promise<FamilyResponse> {
    const context: RequestContext = {
      ...forwarded.context,
      maxBodyBytes: Math.min(Math.max(0, forwarded.context.maxBodyBytes), MAX_BODY_BYTES_CEILING),
    }
    const direct = this.directRoutes?.find(forwarded)
    if (direct) return answerDirectly(direct, forwarded, context)
    const request = toRequest(forwarded)
    if (typeof forwarded.body === 'string') bindBodyText(request, forwarded.body)
    return toFamilyResponse(await this.serve(request, context))
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
