/**
 * Embedded Postgres for local development: PGlite (Postgres compiled to WASM) persisted in a
 * data folder and served over the Postgres wire protocol by pglite-socket, so that the Neon
 * driver reaches it through the same WebSocket bridge it would use for a real server.
 *
 * PGlite runs on a thread of its own (embedded-postgres.worker.ts) that this module watches and
 * replaces, on the same data folder and port, when
 * - the thread ends itself because its backend can no longer be trusted (an exception escaped
 *   Postgres mid-statement: see the worker), or ends for any other reason;
 * - one statement has run longer than the statement timeout plus a grace period: PGlite cannot
 *   cancel a statement itself (no timer fires inside WASM), so a runaway query would otherwise
 *   hold the single-connection database, and every tenant with it, until it ends.
 * Clients of the old thread lose their connections (their statements are gone); Postgres
 * recovers the data folder from its WAL as after any crash, and new connections are served as
 * soon as the replacement listens (the WebSocket bridge holds them until then).
 */
import { mkdirSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import { CLIENT_GRACE_MS, statementTimeoutMs } from '../../shared/db/client.ts'
import type {
  EmbeddedPostgresThreadInput,
  EmbeddedPostgresThreadMessage,
} from './embedded-postgres.worker.ts'

export interface EmbeddedPostgres {
  host: string
  port: number
  /** Connection string as seen through the bridge (the bridge ignores host and port). */
  connectionString: string
  /** How many times the server thread was replaced (a poisoned backend or a runaway statement). */
  restarts(): number
  close(): Promise<void>
}

/**
 * Native stack of the server thread. Postgres checks its recursion depth against
 * `max_stack_depth` (2 MB) on the WASM shadow stack, which says nothing about the native stack the
 * same recursion uses: on the main thread's ~1 MB, jsonb nested 6,500 levels deep overflowed it
 * before Postgres noticed. With 64 MB, Postgres's own check refuses far deeper input (measured:
 * 100,000 levels) with its ordinary "stack depth limit exceeded" error, as a real server does.
 */
const SERVER_STACK_MB = 64

/** How long past the statement timeout a statement may run before the server thread is replaced. */
const WATCHDOG_GRACE_MS = CLIENT_GRACE_MS
const WATCHDOG_INTERVAL_MS = 250

export async function startEmbeddedPostgres(options: {
  dataDir: string
  host?: string
  port?: number
  /** Default: DATABASE_STATEMENT_TIMEOUT_MS from the environment, as the workers read it. */
  statementTimeoutMs?: number
}): Promise<EmbeddedPostgres> {
  mkdirSync(options.dataDir, { recursive: true })
  const host = options.host ?? '127.0.0.1'
  const timeout =
    options.statementTimeoutMs ??
    statementTimeoutMs({ DATABASE_STATEMENT_TIMEOUT_MS: process.env.DATABASE_STATEMENT_TIMEOUT_MS })
  const busySince = new BigInt64Array(new SharedArrayBuffer(8))
  let port = options.port ?? 0
  let closing = false
  let restarts = 0
  let current: Worker | null = null
  let lastReason = ''

  const launch = (): Promise<Worker> =>
    new Promise((resolve, reject) => {
      Atomics.store(busySince, 0, 0n)
      const input: EmbeddedPostgresThreadInput = {
        dataDir: options.dataDir,
        host,
        port,
        idleTimeoutMs: timeout + WATCHDOG_GRACE_MS,
        busySince: busySince.buffer as SharedArrayBuffer,
      }
      const worker = new Worker(new URL('./embedded-postgres.worker.ts', import.meta.url), {
        workerData: input,
        resourceLimits: { stackSizeMb: SERVER_STACK_MB },
      })
      let ready = false
      worker.on('message', (message: EmbeddedPostgresThreadMessage) => {
        if (message.type === 'ready') {
          ready = true
          port = message.port
          resolve(worker)
        } else if (message.type === 'poisoned') {
          lastReason = message.reason
        }
      })
      worker.on('error', (err) => {
        lastReason = String(err)
        if (!ready) reject(err)
      })
      worker.on('exit', (code) => {
        if (!ready) {
          reject(new Error(`embedded Postgres exited with code ${code} while starting: ${lastReason}`))
          return
        }
        if (current === worker) current = null
        if (closing) return
        const reason = lastReason || `the server thread exited with code ${code}`
        lastReason = ''
        void replace(reason)
      })
    })

  /** Starts a new server thread on the same data folder and port, retrying while the port frees up. */
  const replace = async (reason: string): Promise<void> => {
    restarts++
    console.error(`embedded Postgres: restarting on port ${port} (${reason})`)
    for (let attempt = 1; !closing; attempt++) {
      try {
        current = await launch()
        console.error(`embedded Postgres: serving again on port ${port}`)
        return
      } catch (err) {
        if (attempt % 10 === 1)
          console.error(`embedded Postgres: restart attempt ${attempt} failed: ${String(err)}`)
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * attempt)))
      }
    }
  }

  current = await launch()

  const watchdog = setInterval(() => {
    const started = Number(Atomics.load(busySince, 0))
    const worker = current
    if (!worker || started === 0 || Date.now() - started <= timeout + WATCHDOG_GRACE_MS) return
    lastReason = `a statement ran ${Date.now() - started} ms, longer than the ${timeout} ms statement timeout (PGlite cannot cancel it)`
    current = null
    void worker.terminate()
  }, WATCHDOG_INTERVAL_MS)
  watchdog.unref()

  return {
    host,
    port,
    connectionString: `postgres://postgres@${host}:${port}/postgres`,
    restarts: () => restarts,
    async close() {
      closing = true
      clearInterval(watchdog)
      const worker = current
      if (!worker) return
      const exited = new Promise((resolve) => worker.once('exit', resolve))
      const closed = new Promise<void>((resolve) =>
        worker.on('message', (m: EmbeddedPostgresThreadMessage) => m.type === 'closed' && resolve()),
      )
      worker.postMessage({ type: 'close' })
      const timer = setTimeout(() => void worker.terminate(), 10_000)
      await Promise.race([closed, exited])
      await worker.terminate()
      await exited
      clearTimeout(timer)
    },
  }
}
