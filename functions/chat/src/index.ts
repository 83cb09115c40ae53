import { openMeter } from '../../../shared/metering/metering-client'
import { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import type { RequestContext } from '../../../shared/worker/request-context'
import { chatApp } from './chat.app'
import type { ChatEnv } from './chat.context'
import { CHAT_COMPLETIONS_PATH } from './completions'

export { RateLimiter } from '../../../durable-objects/rate-limiter.do'

export default class ChatWorker extends FamilyEntrypoint<ChatEnv> {
  protected readonly app = chatApp

  /**
   * Every chat completion response carries the x-ratelimit-* headers. Refusals that happen
   * before the rate limiter is consulted (400, 403, 503) get the current counters here,
   * without counting the refused request.
   */
  override async serve(request: Request, context: RequestContext): Promise<Response> {
    const response = await super.serve(request, context)
    if (
      !context.identity ||
      response.headers.has('x-ratelimit-limit-requests') ||
      new URL(request.url).pathname !== CHAT_COMPLETIONS_PATH
    ) {
      return response
    }
    const headers = await openMeter(this.env.RATE_LIMITER, context.identity, 'chat.completions').headers()
    const decorated = new Response(response.body, response)
    for (const [name, value] of Object.entries(headers)) decorated.headers.set(name, value)
    return decorated
  }
}
