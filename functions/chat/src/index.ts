import { parseJsonBody } from '../../../shared/http/body'
import { toAppError } from '../../../shared/http/errors'
import { openMeter } from '../../../shared/metering/metering-client'
import { logError } from '../../../shared/worker/family-app'
import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import type { FamilyResponse, ForwardedRequest } from '../../../shared/worker/family-rpc'
import type { Identity, RequestContext } from '../../../shared/worker/request-context'
import { chatApp } from './chat.app'
import type { ChatEnv } from './chat.context'
import { CHAT_COMPLETIONS_PATH, completeChat, SSE_HEADERS } from './completions'

const RATE_LIMIT_HEADER = 'x-ratelimit-limit-requests'

export default class ChatWorker extends FamilyEntrypoint<ChatEnv> {
  protected readonly app = chatApp

  /**
   * The gateway's RPC. A chat completion (the hot path) goes straight to `completeChat` with the
   * body text the gateway read: no Request, Hono context or Response is built in this isolate,
   * and the answer leaves as the plain values it is. Everything else goes through the Hono app.
   */
  override async handle(forwarded: ForwardedRequest): Promise<FamilyResponse> {
    const identity = forwarded.context.identity
    if (
      forwarded.path !== CHAT_COMPLETIONS_PATH ||
      forwarded.method !== 'POST' ||
      typeof forwarded.body !== 'string' ||
      !identity
    ) {
      return super.handle(forwarded)
    }
    const { requestId } = forwarded.context
    try {
      const answer = await completeChat({
        body: parseJsonBody(forwarded.body),
        context: forwarded.context,
        env: this.env,
        executionCtx: this.ctx,
      })
      if (answer.kind === 'json') {
        return {
          status: 200,
          headers: { 'content-type': 'application/json', ...answer.headers, 'x-request-id': requestId },
          body: JSON.stringify(answer.completion),
        }
      }
      return {
        status: 200,
        headers: { ...SSE_HEADERS, ...answer.headers, 'x-request-id': requestId },
        body: answer.stream,
      }
    } catch (err) {
      const error = toAppError(err)
      logError(requestId, error)
      const limits = RATE_LIMIT_HEADER in error.headers ? {} : await this.currentLimits(identity)
      return {
        status: error.status,
        headers: {
          ...limits,
          ...error.headers,
          'content-type': 'application/json',
          'x-request-id': requestId,
        },
        body: JSON.stringify(error.toBody()),
      }
    }
  }

  /**
   * Every chat completion response carries the x-ratelimit-* headers. Refusals that happen
   * before the rate limiter is consulted (400, 403, 503) get the current counters here,
   * without counting the refused request.
   */
  override async serve(request: Request, context: RequestContext): Promise<Response> {
    const response = await super.serve(request, context)
    if (
      !context.identity ||
      response.headers.has(RATE_LIMIT_HEADER) ||
      new URL(request.url).pathname !== CHAT_COMPLETIONS_PATH
    ) {
      return response
    }
    const headers = await this.currentLimits(context.identity)
    const decorated = new Response(response.body, response)
    for (const [name, value] of Object.entries(headers)) decorated.headers.set(name, value)
    return decorated
  }

  private currentLimits(identity: Identity): Promise<Record<string, string>> {
    return openMeter(this.env.RATE_LIMITER, identity, 'chat.completions').headers()
  }
}
