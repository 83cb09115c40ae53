/**
 * The metering worker: the host of the RateLimiter Durable Object, whose name says it owns
 * metering. It has no routes: the workers that meter requests bind the class
 * (`script_name = "svc-metering"`) and call the object over RPC through shared/metering's client.
 * A plain HTTP `fetch()` reaching it gets 404, like any worker the gateway does not route to.
 */
import { WorkerEntrypoint } from 'cloudflare:workers'
import type { RateLimiterEnv } from '../../../durable-objects/rate-limiter/rate-limiter.do'
import { AppError } from '../../../shared/http/errors'

export { RateLimiter } from '../../../durable-objects/rate-limiter/rate-limiter.do'

export default class MeteringWorker extends WorkerEntrypoint<RateLimiterEnv> {
  override async fetch(): Promise<Response> {
    return new AppError(
      404,
      'not_routable',
      'This worker is reachable only through its Durable Object binding.',
    ).toResponse()
  }
}
