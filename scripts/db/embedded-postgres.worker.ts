/**
 * The embedded Postgres server's own thread (started by embedded-postgres.ts): PGlite served over
 * the Postgres wire protocol by pglite-socket. It runs here, not on the stack's main thread, so
 * that the main thread can watch it and replace it, and so that Postgres gets a native stack big
 * enough for the recursion depth its own `max_stack_depth` check allows (see below).
 *
 * Two guards turn what used to wedge the whole database into a restart of this thread:
 *
 * - PGlite runs each protocol message by calling Postgres's main loop, catches every exception
 *   thrown out of it, and handles only its own "Postgres raised an ERROR" signal. Anything else
 *   (V8's `RangeError: Maximum call stack size exceeded` when recursion outgrows the thread's
 *   native stack, which Postgres cannot measure from inside WASM) is swallowed mid-statement: the
 *   query answers nothing, and the backend is left half unwound, so the next ERROR it raises (any
 *   ERROR: `select 1/0` will do) never returns and spins at 100% CPU. `GuardedPGlite` notices the
 *   foreign exception as it passes and ends this thread at once, before any other query runs.
 * - pglite-socket stops serving every connection for good when a query throws out of PGlite
 *   (its queue stays marked as busy); such a throw ends this thread too.
 *
 * The main thread also gets the start time of the statement running now (a shared timestamp), to
 * enforce the statement timeout PGlite cannot: no timer fires inside a WASM statement, so
 * `statement_timeout` has no effect there.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { PGlite, type PGliteOptions } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import { keepExtendedQueriesTogether } from './pglite-socket-sequencing.ts'
import { startFromTemplate } from './pglite-template.ts'

export interface EmbeddedPostgresThreadInput {
  dataDir: string
  host: string
  port: number
  /** pglite-socket closes a connection idle this long (a client holding a transaction open idle). */
  idleTimeoutMs: number
  /** One BigInt64 slot: Date.now() when the running statement started, 0 when idle. */
  busySince: SharedArrayBuffer
}

export type EmbeddedPostgresThreadMessage =
  | { type: 'ready'; port: number }
  | { type: 'poisoned'; reason: string }
  | { type: 'closed' }

/** Exit code of a thread that ended itself because its backend could no longer be trusted. */
export const POISONED_EXIT_CODE = 70

/**
 * The status of the exception PGlite raises for a Postgres ERROR (its longjmp, intercepted):
 * `POSTGRES_MAIN_LONGJMP` in @electric-sql/pglite's pglite.ts and pglitec.c.
 */
const POSTGRES_ERROR_LONGJMP = 100

type ExecOptions = Parameters<PGlite['execProtocolRawStream']>[1]

class GuardedPGlite extends PGlite {
  readonly #busySince: BigInt64Array
  readonly #poisoned: (reason: string) => never

  constructor(options: PGliteOptions, busySince: BigInt64Array, poisoned: (reason: string) => never) {
    super(options)
    this.#busySince = busySince
    this.#poisoned = poisoned
  }

  /** Wraps Postgres's main loop once the module is loaded: a foreign exception ends the thread. */
  guardMainLoop(): void {
    const mod = this.mod
    if (!mod) throw new Error('PGlite is not ready')
    const loopOnce = mod._PostgresMainLoopOnce.bind(mod)
    mod._PostgresMainLoopOnce = () => {
      try {
        loopOnce()
      } catch (err) {
        if ((err as { status?: unknown } | null)?.status !== POSTGRES_ERROR_LONGJMP) {
          this.#poisoned(`an exception escaped the Postgres backend mid-statement: ${String(err)}`)
        }
        throw err
      }
    }
  }

  override async execProtocolRawStream(message: Uint8Array, options: ExecOptions): Promise<void> {
    Atomics.store(this.#busySince, 0, BigInt(Date.now()))
    try {
      await super.execProtocolRawStream(message, options)
    } catch (err) {
      this.#poisoned(`a protocol message failed inside PGlite: ${String(err)}`)
    } finally {
      Atomics.store(this.#busySince, 0, 0n)
    }
  }
}

async function serve(input: EmbeddedPostgresThreadInput): Promise<void> {
  const port = parentPort
  if (!port) throw new Error('embedded-postgres.worker.ts runs as a worker thread')
  const busySince = new BigInt64Array(input.busySince)
  const poisoned = (reason: string): never => {
    port.postMessage({ type: 'poisoned', reason } satisfies EmbeddedPostgresThreadMessage)
    process.exit(POISONED_EXIT_CODE)
  }
  // pgvector is loaded so the migrations can install it (document retrieval's HNSW indexes).
  await startFromTemplate(input.dataDir, async (dir) => {
    const empty = await PGlite.create({ dataDir: dir, extensions: { vector } })
    await empty.close()
  })
  const db = new GuardedPGlite({ dataDir: input.dataDir, extensions: { vector } }, busySince, poisoned)
  await db.waitReady
  db.guardMainLoop()
  const server = new PGLiteSocketServer({
    db,
    host: input.host,
    port: input.port,
    maxConnections: 32,
    idleTimeout: input.idleTimeoutMs,
  })
  keepExtendedQueriesTogether(server)
  await server.start()
  port.on('message', async (message: { type: 'close' }) => {
    if (message.type !== 'close') return
    await server.stop()
    await db.close()
    port.postMessage({ type: 'closed' } satisfies EmbeddedPostgresThreadMessage)
  })
  const listening = Number(server.getServerConn().split(':').pop())
  port.postMessage({ type: 'ready', port: listening } satisfies EmbeddedPostgresThreadMessage)
}

await serve(workerData as EmbeddedPostgresThreadInput)
