/**
 * Base class of every family worker's default export. Family workers are not routable: the
 * gateway calls `handle()` over its service binding (JS RPC, see family-rpc.ts) with the request
 * context it established (request id, verified identity, body limit) as a typed argument. Only
 * workers holding the binding can call it, so the context needs no signature; a plain HTTP
 * `fetch()` reaching a family gets 404, as if the worker were not there.
 */
import { WorkerEntrypoint } from 'cloudflare:workers'
import { AppError } from '../http/errors'
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

  override async fetch(): Promise<Response> {
    return new AppError(
      404,
      'not_routable',
      'This worker is reachable only through the gateway.',
    ).toResponse()
  }

  /**
   * RPC for the gateway: one forwarded request, answered with plain values (family-rpc.ts). The one
   * dispatch path of every family: its Hono app routes, validates and renders errors (family-app.ts).
   */
  async handle(forwarded: ForwardedRequest): Promise<FamilyResponse> {
    const context: RequestContext = {
      ...forwarded.context,
      maxBodyBytes: Math.min(Math.max(0, forwarded.context.maxBodyBytes), MAX_BODY_BYTES_CEILING),
    }
    const request = toRequest(forwarded)
    if (typeof forwarded.body === 'string') bindBodyText(request, forwarded.body)
    bindRequestContext(request, context)
    const response = await this.app.fetch(request, this.env, this.ctx)
    return toFamilyResponse(withRequestId(response, context.requestId))
  }

  /** This family's part of the OpenAPI document (the gateway merges all families). */
  openapi(): unknown {
    return this.app.getOpenAPI31Document({
      openapi: '3.1.0',
      info: { title: 'family', version: '2026-08-04' },
    })
  }
}
