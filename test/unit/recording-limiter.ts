/**
 * A recording stand-in for the RateLimiter Durable Object, for tests that run a metered path
 * outside workerd: it grants everything, records what reached it and fails on demand. Only its
 * RPC surface matters to the metering client (the real object is tested in
 * durable-objects/rate-limiter/*.do.test.ts).
 */
import type {
  AcquireInput,
  AcquireResult,
  LeaseReturnInput,
  SettleInput,
} from '../../shared/metering/metering.schemas'
import type { RateLimiterNamespace } from '../../shared/metering/metering-client'

export const SNAPSHOT = {
  limitRequests: 100,
  remainingRequests: 99,
  resetRequestsMs: 0,
  limitTokens: 10_000,
  remainingTokens: 9_000,
  resetTokensMs: 0,
}

/** The object's side: what reached it, and failures to inject. */
export class RecordingLimiter {
  readonly settleCalls: SettleInput[][] = []
  readonly acquireCalls: AcquireInput[] = []
  readonly checkpointCalls: SettleInput[][] = []
  readonly returnCalls: LeaseReturnInput[][] = []
  failCheckpoints = 0
  failSettles = 0
  failAcquires = 0
  /** When set, settleMany waits for it (a send in progress). */
  gate: Promise<void> | null = null
  /** settleMany calls in progress. */
  sending = 0

  async acquire(input: AcquireInput): Promise<AcquireResult> {
    this.acquireCalls.push(input)
    await Promise.resolve()
    if (this.failAcquires > 0) {
      this.failAcquires -= 1
      throw new Error('object unreachable')
    }
    return { kind: 'granted', snapshot: SNAPSHOT }
  }

  async settleMany(inputs: SettleInput[], returns: LeaseReturnInput[] = []): Promise<unknown[]> {
    this.sending += 1
    await (this.gate ?? Promise.resolve())
    this.sending -= 1
    if (this.failSettles > 0) {
      this.failSettles -= 1
      throw new Error('object unreachable')
    }
    this.settleCalls.push([...inputs])
    this.returnCalls.push([...returns])
    return inputs.map(() => ({ recorded: true, creditsUnits: 0 }))
  }

  async checkpoint(inputs: SettleInput[]): Promise<void> {
    if (this.failCheckpoints > 0) {
      this.failCheckpoints -= 1
      throw new Error('object unreachable')
    }
    this.checkpointCalls.push([...inputs])
  }

  /** Reservation ids the object stored, in order. */
  delivered(): string[] {
    return this.settleCalls.flat().map((s) => s.reservationId)
  }
}

export function namespaceOf(limiter: RecordingLimiter): RateLimiterNamespace {
  return {
    idFromName: (name: string) => name,
    get: () => limiter,
  } as unknown as RateLimiterNamespace
}
