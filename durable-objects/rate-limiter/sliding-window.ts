/**
 * A sliding-window log: every admitted event (a request, or a request's tokens) is kept with
 * its time for `windowMs`, and a limit is "at most N in any window of that length". Exact (no
 * bucket quantisation) and cheap: events are appended in time order and pruned from the front.
 *
 * An event's amount can be changed after the fact (a token reservation settled to the tokens
 * actually used) as long as it is still inside the window.
 */

export interface WindowEvent {
  readonly at: number
  amount: number
  /** Set once the event left the window; later adjustments are ignored. */
  expired: boolean
}

export class SlidingWindow {
  private events: WindowEvent[] = []
  private head = 0
  private sum = 0

  constructor(readonly windowMs: number) {}

  /** Drops events older than the window. */
  prune(now: number): void {
    const cutoff = now - this.windowMs
    while (this.head < this.events.length && this.events[this.head]!.at <= cutoff) {
      const event = this.events[this.head]!
      event.expired = true
      this.sum -= event.amount
      this.head += 1
    }
    if (this.head > 1024 && this.head * 2 > this.events.length) {
      this.events = this.events.slice(this.head)
      this.head = 0
    }
  }

  /** Sum of the amounts inside the window (prune first). */
  total(now: number): number {
    this.prune(now)
    return this.sum
  }

  /** Number of events inside the window (prune first). */
  count(now: number): number {
    this.prune(now)
    return this.events.length - this.head
  }

  /** Records an event; times never go backwards (a clock step back is clamped to the last event). */
  add(at: number, amount: number): WindowEvent {
    const last = this.events[this.events.length - 1]
    const event: WindowEvent = { at: last && last.at > at ? last.at : at, amount, expired: false }
    this.events.push(event)
    this.sum += amount
    return event
  }

  /** Changes an event's amount (no effect once it left the window). */
  adjust(event: WindowEvent, amount: number): void {
    if (event.expired) return
    this.sum += amount - event.amount
    event.amount = amount
  }

  /**
   * Milliseconds until `amount` more fits under `limit` (0 when it fits now). When it can
   * never fit (amount alone exceeds the limit), the time until the window is empty.
   */
  msUntilFits(now: number, amount: number, limit: number): number {
    this.prune(now)
    let excess = this.sum + amount - limit
    if (excess <= 0) return 0
    for (let i = this.head; i < this.events.length; i++) {
      const event = this.events[i]!
      excess -= event.amount
      if (excess <= 0) return event.at + this.windowMs - now
    }
    return this.msUntilEmpty(now)
  }

  /** Milliseconds until the oldest event leaves the window (0 when empty). */
  msUntilNextExpiry(now: number): number {
    this.prune(now)
    const oldest = this.events[this.head]
    return oldest ? Math.max(0, oldest.at + this.windowMs - now) : 0
  }

  /** Milliseconds until every current event has left the window (0 when empty). */
  msUntilEmpty(now: number): number {
    this.prune(now)
    const newest = this.events[this.events.length - 1]
    return newest && this.head < this.events.length ? Math.max(0, newest.at + this.windowMs - now) : 0
  }
}
