/**
 * The whole product on one machine: Postgres (embedded PGlite, or the server named by
 * DATABASE_URL) behind the WebSocket bridge, migrations and the seeded development workspace,
 * then every worker in one workerd with the gateway listening on HOST:PORT. Only the gateway gets a
 * socket; the families are reachable only through its service bindings.
 *
 * Two runtimes run the same bundles with the same bindings:
 * - 'miniflare' (default, `npm start`): workerd driven by Miniflare, which adds its entry worker in
 *   front of the gateway and an outbound interceptor worker behind every fetch();
 * - 'workerd': plain `workerd serve` on a generated config (scripts/workerd-runtime.ts), as in
 *   production without those two extra workers per request. Benchmarks use this one.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { convertV4MiniflareOptions, type LegacyWorkerOptions, Log, LogLevel, Miniflare } from 'miniflare'
import { type Unstable_Config, unstable_getMiniflareWorkerOptions, unstable_readConfig } from 'wrangler'
import { generateSigningKey } from '../shared/crypto/jwk.ts'
import type { JwsAlgorithm } from '../shared/crypto/jws-algorithms.ts'
import { startEmbeddedPostgres } from './db/embedded-postgres.ts'
import { runMigrations } from './db/migrate.ts'
import { type DevCredentials, seedDevelopment } from './db/seed.ts'
import { startWsBridge } from './db/ws-bridge.ts'
import { startWorkerd } from './workerd-runtime.ts'
import { bundleWorker, ROOT, workerConfigPaths } from './workers.ts'

export type StackRuntime = 'miniflare' | 'workerd'

export interface StackOptions {
  host: string
  port: number
  dataDir: string
  /** A real PostgreSQL (or Neon) URL; unset = embedded PGlite under dataDir. */
  databaseUrl?: string
  /** Extra bindings (vars/secrets) given to every worker, e.g. provider configuration. */
  bindings?: Record<string, string>
  /** Miniflare's log level; on runtime 'workerd', DEBUG and above turn on workerd's `--verbose`. */
  logLevel?: LogLevel
  /** 'miniflare' (default) or 'workerd' (plain `workerd serve`, as in production). */
  runtime?: StackRuntime
}

export interface Stack {
  baseUrl: string
  credentials: DevCredentials
  database: { kind: 'embedded' | 'external'; bridgeUrl: string | null }
  runtime: StackRuntime
  /** Set on runtime 'miniflare' only. */
  miniflare?: Miniflare
  stop(): Promise<void>
}

const GATEWAY = 'svc-gateway'

/** One worker, bundled, with the options Miniflare runs it with (the bindings of both runtimes). */
export interface BuiltWorker {
  name: string
  config: Unstable_Config
  scriptPath: string
  options: LegacyWorkerOptions
}

/**
 * Bundles every worker into `buildDir` and derives its options from its wrangler config, adding
 * `extraBindings(name)` to its plain bindings. The gateway comes first.
 */
export async function buildWorkers(
  buildDir: string,
  extraBindings: (name: string) => Record<string, string>,
): Promise<BuiltWorker[]> {
  const workers: BuiltWorker[] = []
  for (const configPath of workerConfigPaths()) {
    const config = unstable_readConfig({ config: path.join(ROOT, configPath) })
    const { workerOptions, main } = unstable_getMiniflareWorkerOptions(config)
    const name = config.name ?? configPath
    const scriptPath = path.join(buildDir, name, 'index.js')
    await bundleWorker(main ?? '', scriptPath)
    const options = {
      ...workerOptions,
      name,
      modules: true,
      scriptPath,
      modulesRoot: path.dirname(scriptPath),
      modulesRules: undefined,
      rootPath: undefined,
      bindings: { ...(workerOptions.bindings as Record<string, unknown>), ...extraBindings(name) },
    } as LegacyWorkerOptions
    workers.push({ name, config, scriptPath, options })
  }
  const gateway = workers.findIndex((w) => w.name === GATEWAY)
  if (gateway < 0) throw new Error(`no ${GATEWAY} among ${workers.map((w) => w.name).join(', ')}`)
  return [...workers.splice(gateway, 1), ...workers]
}

/** Durable Object classes a worker hosts, from its `[[migrations]]`: class → SQLite-backed. */
export function durableObjectClasses(config: Unstable_Config): Map<string, boolean> {
  const classes = new Map<string, boolean>()
  for (const migration of config.migrations ?? []) {
    for (const c of migration.new_classes ?? []) classes.set(c, false)
    for (const c of migration.new_sqlite_classes ?? []) classes.set(c, true)
    for (const { from, to } of migration.renamed_classes ?? []) {
      classes.set(to, classes.get(from) ?? false)
      classes.delete(from)
    }
    for (const c of migration.deleted_classes ?? []) classes.delete(c)
  }
  return classes
}

/** Algorithms of the local signing keys: ML-DSA-65 (default), ML-DSA-87 (Maximum/Government), Ed25519. */
const LOCAL_SIGNING_ALGORITHMS: readonly JwsAlgorithm[] = ['ML-DSA-65', 'ML-DSA-87', 'EdDSA']

/**
 * The token signing keys for `npm start`: generated on first start and kept in
 * `<dataDir>/signing-keys.json` (private JWKs, mode 0600, git-ignored with the rest of DATA_DIR),
 * so tokens survive restarts. Production sets the JWT_SIGNING_KEYS secret instead.
 */
export async function localSigningKeys(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'signing-keys.json')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  const keys = []
  for (const alg of LOCAL_SIGNING_ALGORITHMS) keys.push((await generateSigningKey(alg)).exportPrivateJwk())
  const text = JSON.stringify(keys)
  writeFileSync(file, `${text}\n`, { mode: 0o600 })
  return text
}

function isNeon(url: string): boolean {
  return /\.neon\.tech(:\d+)?\//.test(url) || /\.neon\.build/.test(url)
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const stops: (() => Promise<void>)[] = []
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => {})
  }
  try {
    mkdirSync(options.dataDir, { recursive: true })

    // 1. Postgres behind the WebSocket bridge (Neon needs no bridge: it runs its own proxy).
    let databaseUrl: string
    let bridgeUrl: string | null = null
    let kind: 'embedded' | 'external' = 'external'
    if (options.databaseUrl && isNeon(options.databaseUrl)) {
      databaseUrl = options.databaseUrl
    } else {
      let target: { host: string; port: number }
      if (options.databaseUrl) {
        const u = new URL(options.databaseUrl)
        target = { host: u.hostname, port: Number(u.port || 5432) }
        databaseUrl = options.databaseUrl
      } else {
        kind = 'embedded'
        const pg = await startEmbeddedPostgres({ dataDir: path.join(options.dataDir, 'pglite') })
        stops.push(() => pg.close())
        target = { host: pg.host, port: pg.port }
        databaseUrl = pg.connectionString
      }
      const bridge = await startWsBridge({ target })
      stops.push(() => bridge.close())
      bridgeUrl = bridge.url
    }
    const dbEnv = { DATABASE_URL: databaseUrl, ...(bridgeUrl ? { DATABASE_WS_PROXY: bridgeUrl } : {}) }

    // 2. Schema and the development workspace.
    await runMigrations(dbEnv)
    const credentials = await seedDevelopment(dbEnv, options.dataDir)

    // 3. Signing keys: from JWT_SIGNING_KEYS when set, else generated once under dataDir. Only the
    //    auth worker gets the private keys; the gateway fetches the public ones over RPC.
    const { JWT_SIGNING_KEYS: configuredKeys, ...configured } = options.bindings ?? {}
    const sharedBindings = { ...configured }
    const signingKeys = configuredKeys ?? (await localSigningKeys(options.dataDir))

    // 4. Workers: bundle each, take its bindings from its wrangler config, then run them all.
    const workers = await buildWorkers(path.join(options.dataDir, 'build'), (name) => ({
      ...dbEnv,
      ...sharedBindings,
      ...(name === 'svc-auth' ? { JWT_SIGNING_KEYS: signingKeys } : {}),
    }))
    const runtime = options.runtime ?? 'miniflare'
    let baseUrl: string
    let miniflare: Miniflare | undefined
    if (runtime === 'workerd') {
      const workerd = await startWorkerd({
        host: options.host,
        port: options.port,
        entry: GATEWAY,
        dataDir: options.dataDir,
        verbose: (options.logLevel ?? LogLevel.WARN) >= LogLevel.DEBUG,
        workers: workers.map((w) => ({
          name: w.name,
          scriptPath: w.scriptPath,
          compatibilityDate: w.config.compatibility_date ?? '',
          compatibilityFlags: w.config.compatibility_flags,
          options: w.options as Record<string, unknown>,
          durableObjectClasses: durableObjectClasses(w.config),
        })),
      })
      stops.push(() => workerd.stop())
      baseUrl = workerd.url.origin
    } else {
      miniflare = new Miniflare(
        convertV4MiniflareOptions({
          host: options.host,
          port: options.port,
          log: new Log(options.logLevel ?? LogLevel.WARN),
          // Durable Object storage (and alarms) on disk under DATA_DIR, so a restart, graceful or
          // not, keeps runs, rate windows and unflushed ledger rows (Miniflare's default is a
          // temporary folder per start).
          resourcePersistencePath: path.join(options.dataDir, 'miniflare'),
          // No network lookup of the Request.cf object: local requests get a fixed placeholder.
          cf: false,
          // The first worker is the one on Miniflare's socket.
          workers: workers.map((w) => w.options),
        }),
      )
      const instance = miniflare
      stops.push(() => instance.dispose())
      baseUrl = (await miniflare.ready).origin
    }
    // Lets tools (tests, the workspace CLI) reach this running stack's database: PGlite is
    // single-process, so they go through the bridge rather than opening the data folder.
    const runtimeFile = path.join(options.dataDir, 'runtime.json')
    writeFileSync(runtimeFile, `${JSON.stringify({ baseUrl, pid: process.pid, database: dbEnv }, null, 2)}\n`)
    stops.push(async () => rmSync(runtimeFile, { force: true }))
    return {
      baseUrl,
      credentials,
      database: { kind, bridgeUrl },
      runtime,
      ...(miniflare ? { miniflare } : {}),
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}
