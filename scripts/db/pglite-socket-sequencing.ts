/**
 * Keeps each connection's extended-query sequence together on a PGlite served by pglite-socket.
 *
 * PGlite is one Postgres session; pglite-socket multiplexes many client connections onto it with
 * a queue of protocol messages, and keeps one connection exclusive only while a transaction is
 * open. Outside a transaction the messages of two connections interleave: connection A's Parse,
 * then B's Parse (replacing the one unnamed statement), then A's Bind fails with "unnamed
 * prepared statement does not exist" (or "portal does not exist"). The Neon driver sends every
 * parameterised query as Parse/Bind/Describe/Execute/Sync, so concurrent requests failed at random.
 *
 * This patch (for @electric-sql/pglite-socket 0.2.17, pinned) also keeps the connection that sent
 * the last message exclusive while its sequence is open: from its first extended-protocol message
 * until its Sync (a simple Query is complete on its own). A connection that goes away mid-sequence
 * releases it.
 */
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket'

interface QueuedMessage {
  handlerId: number
  message: Uint8Array
  resolve(bytes: number): void
  reject(err: unknown): void
  onData(data: Uint8Array): void
}

interface QueryQueue {
  queue: QueuedMessage[]
  processing: boolean
  lastHandlerId: number | null
  db: {
    isInTransaction(): boolean
    runExclusive<T>(fn: () => Promise<T>): Promise<T>
    execProtocolRawStream(message: Uint8Array, options: { onRawData(data: Uint8Array): void }): Promise<void>
  }
  processQueue(): Promise<void>
  clearQueueForHandler(handlerId: number): void
}

/** Parse, Bind, Describe, Execute, Close, Flush: messages of a sequence that only Sync ends. */
const SEQUENCE_MESSAGES = new Set(['P', 'B', 'D', 'E', 'C', 'H'].map((c) => c.charCodeAt(0)))

export function keepExtendedQueriesTogether(server: PGLiteSocketServer): void {
  const queue = (server as unknown as { queryQueue: QueryQueue }).queryQueue
  if (!queue || typeof queue.processQueue !== 'function' || !Array.isArray(queue.queue)) {
    throw new Error('pglite-socket internals changed: review scripts/db/pglite-socket-sequencing.ts')
  }
  /** The connection whose sequence is open (exclusive until its Sync), or null. */
  let openSequence: number | null = null

  const clear = queue.clearQueueForHandler.bind(queue)
  queue.clearQueueForHandler = (handlerId: number) => {
    if (openSequence === handlerId) openSequence = null
    clear(handlerId)
    void queue.processQueue()
  }

  queue.processQueue = async function processQueue(this: QueryQueue) {
    if (this.processing || this.queue.length === 0) return
    this.processing = true
    try {
      while (this.queue.length > 0) {
        const exclusive =
          openSequence ?? (this.db.isInTransaction() && this.lastHandlerId ? this.lastHandlerId : null)
        let item: QueuedMessage | undefined
        if (exclusive !== null) {
          const at = this.queue.findIndex((q) => q.handlerId === exclusive)
          // Wait for the exclusive connection's next message (enqueue runs this again).
          if (at === -1) break
          item = this.queue.splice(at, 1)[0]
        } else {
          item = this.queue.shift()
        }
        if (!item) break
        const current = item
        let bytes = 0
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(current.message, {
              onRawData: (data) => {
                bytes += data.length
                current.onData(data)
              },
            }),
          )
        } catch (err) {
          if (openSequence === current.handlerId) openSequence = null
          current.reject(err)
          continue
        }
        this.lastHandlerId = current.handlerId
        openSequence = SEQUENCE_MESSAGES.has(current.message[0] ?? 0) ? current.handlerId : null
        current.resolve(bytes)
      }
    } finally {
      this.processing = false
    }
  }.bind(queue)
}
