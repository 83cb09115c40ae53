/**
 * Per-target circuit breaker, one per isolate (state lives in module memory, so each isolate
 * learns on its own; that is enough to stop hammering a dead upstream from a hot isolate).
 *
 * closed ──N consecutive failures──▶ open ──cool-down elapsed──▶ half-open (one probe)
 *   ▲                                  ▲                              │
 *   └────────── probe succeeds ────────┼──────── probe fails ─────────┘
 */
import type { BreakerSettings } from './provider-config'

export type BreakerState = 'closed' | 'open' | 'half-open'

export class CircuitBreaker {
  private failures = 0
  private openedAt = 0
  private state: BreakerState = 'closed'
  private probeInFlight = false

  constructor(private readonly settings: BreakerSettings) {}

  stateAt(now: number): BreakerState {
    if (this.state === 'open' && now - this.openedAt >= this.settings.cooldownMs) return 'half-open'
    return this.state
  }

  /** Whether a request may go to the target now; in half-open only one probe at a time. */
  tryAcquire(now: number): boolean {
    const state = this.stateAt(now)
    if (state === 'closed') return true
    if (state === 'open') return false
    if (this.probeInFlight) return false
    this.state = 'half-open'
    this.probeInFlight = true
    return true
  }

  /** Milliseconds until an open breaker lets a probe through (0 when not open). */
  retryInMs(now: number): number {
    return this.stateAt(now) === 'open' ? this.openedAt + this.settings.cooldownMs - now : 0
  }

  recordSuccess(): void {
    this.failures = 0
    this.state = 'closed'
    this.probeInFlight = false
  }

  recordFailure(now: number): void {
    this.failures += 1
    const wasProbe = this.state === 'half-open'
    this.probeInFlight = false
    if (wasProbe || this.failures >= this.settings.failureThreshold) {
      this.state = 'open'
      this.openedAt = now
    }
  }

  /** A request was started but neither succeeded nor failed on the upstream's account (client aborted). */
  release(): void {
    this.probeInFlight = false
  }
}

export class BreakerBoard {
  private readonly breakers = new Map<string, CircuitBreaker>()

  get(key: string, settings: BreakerSettings): CircuitBreaker {
    let breaker = this.breakers.get(key)
    if (!breaker) {
      breaker = new CircuitBreaker(settings)
      this.breakers.set(key, breaker)
    }
    return breaker
  }
}

/** The isolate's breakers. Tests pass their own board. */
export const isolateBreakers = new BreakerBoard()
