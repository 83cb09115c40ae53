/**
 * The metering worker as other workers' Durable Object tests run it beside them (vitest.config.ts,
 * do-chat): the product's worker and RateLimiter, plus one read-only RPC method that lets a test in
 * another worker see the ledger rows its requests left. The product's class has no such method;
 * tests inside the metering worker read its storage directly (rate-limiter-storage.fixtures.ts).
 */

import { RateLimiter as ProductRateLimiter } from '../../durable-objects/rate-limiter/rate-limiter.do'
import { keptLedger } from '../../durable-objects/rate-limiter/rate-limiter-storage.fixtures'
import type { LedgerEntry } from '../../shared/metering/metering.schemas'

export { default } from '../../functions/metering/src/index'

export class RateLimiter extends ProductRateLimiter {
  keptLedger(): LedgerEntry[] {
    return keptLedger(this.ctx.storage)
  }
}
