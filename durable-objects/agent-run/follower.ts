/**
 * One connection following one turn of an agent run: the NDJSON events written as they are
 * appended, and a heartbeat line when the turn has been silent for a while, so proxies and
 * clients can tell a quiet turn from a dead connection.
 */
const encoder = new TextEncoder()

/** One connection following one turn. */
export class Follower {
  private timer: ReturnType<typeof setTimeout> | undefined
  private closed = false

  constructor(
    private readonly controller: ReadableStreamDefaultController<Uint8Array>,
    readonly turnId: string,
    /** seq of the last event written on this connection (the cursor before any). */
    private lastSeq: number,
    private readonly heartbeat: (turnId: string, lastSeq: number) => string,
    private readonly heartbeatMs: number,
  ) {}

  write(bytes: Uint8Array, seq: number): void {
    if (this.closed) return
    this.controller.enqueue(bytes)
    this.lastSeq = seq
    this.arm()
  }

  arm(): void {
    if (this.closed) return
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      if (this.closed) return
      this.controller.enqueue(encoder.encode(this.heartbeat(this.turnId, this.lastSeq)))
      this.arm()
    }, this.heartbeatMs)
  }

  close(): void {
    this.stop()
    try {
      this.controller.close()
    } catch {
      // The reader already went away.
    }
  }

  stop(): void {
    this.closed = true
    if (this.timer !== undefined) clearTimeout(this.timer)
  }
}
