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
import { type AddressInfo, createServer } from 'node:net'
import path from 'node:path'
import { convertV4MiniflareOptions, type LegacyWorkerOptions, Log, LogLevel, Miniflare } from 'miniflare'
import { type Unstable_Config, unstable_getMiniflareWorkerOptions, unstable_readConfig } from 'wrangler'
import { generateContentKek } from '../durable-objects/reasoning-job/content-crypto.ts'
import { generateCredentialKey } from '../durable-objects/reasoning-job/quantum/providers/provider-credentials.ts'
import { generateSigningKey } from '../shared/crypto/jwk.ts'
import type { JwsAlgorithm } from '../shared/crypto/jws-algorithms.ts'
import { writeCryptoLibraries } from './crypto-libraries.ts'
import { startEmbeddedPostgres } from './db/embedded-postgres.ts'
import { runMigrations } from './db/migrate.ts'
import { type DevCredentials, seedDevelopment } from './db/seed.ts'
import { startWsBridge } from './db/ws-bridge.ts'
import { startLocalCollector } from './otlp-collector/local-collector.ts'
import { registerRunningStack } from './running-stacks.ts'
import { startWorkerd } from './workerd-runtime.ts'
import { bundleDigest, bundleWorker, ROOT, workerBundleCache, workerConfigPaths } from './workers.ts'

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
  /**
   * Benchmarks only: compatibility flags to leave out of every worker's wrangler config, e.g.
   * `webcrypto_modern_algorithms` to measure the product on its JavaScript ML-DSA (bench/identity.ts).
   */
  withoutCompatibilityFlags?: readonly string[]
}

/** Where OTLP exports go: the configured OTLP_COLLECTOR_URL, or the local collector's files. */
export type StackTelemetry = { collector: 'configured' } | { collector: 'local'; url: string; dir: string }

export interface Stack {
  baseUrl: string
  credentials: DevCredentials
  database: { kind: 'embedded' | 'external'; bridgeUrl: string | null }
  telemetry: StackTelemetry
  runtime: StackRuntime
  /** Set on runtime 'miniflare' only. */
  miniflare?: Miniflare
  stop(): Promise<void>
}

const GATEWAY = 'svc-gateway'
const PLATFORM = 'svc-platform'

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
  const bundled: {
    config: Unstable_Config
    name: string
    scriptPath: string
    workerOptions: ReturnType<typeof unstable_getMiniflareWorkerOptions>['workerOptions']
  }[] = []
  const cache = await workerBundleCache()
  for (const configPath of workerConfigPaths()) {
    const config = unstable_readConfig({ config: path.join(ROOT, configPath) })
    const { workerOptions, main } = unstable_getMiniflareWorkerOptions(config)
    const name = config.name ?? configPath
    const scriptPath = path.join(buildDir, name, 'index.js')
    await bundleWorker(main ?? '', scriptPath, { cache })
    bundled.push({ config, name, scriptPath, workerOptions })
  }
  // The platform worker attests what runs: the digest of every bundle, itself included.
  const deployedBundles = JSON.stringify(bundled.map((w) => bundleDigest(w.name, w.scriptPath)))
  const workers: BuiltWorker[] = bundled.map(({ config, name, scriptPath, workerOptions }) => {
    const options = {
      ...workerOptions,
      name,
      modules: true,
      scriptPath,
      modulesRoot: path.dirname(scriptPath),
      modulesRules: undefined,
      rootPath: undefined,
      bindings: {
        ...(workerOptions.bindings as Record<string, unknown>),
        ...(name === PLATFORM ? { DEPLOYED_BUNDLES: deployedBundles } : {}),
        ...extraBindings(name),
      },
    } as LegacyWorkerOptions
    return { name, config, scriptPath, options }
  })
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

/**
 * The audit logs' checkpoint keys (Ed25519 and ML-DSA-44) for `npm start`: generated on first start
 * into `<dataDir>/log-signing-keys.json` (mode 0600) and given to the platform worker only, so the
 * logs keep their identity across restarts. Production sets the LOG_SIGNING_KEYS secret instead.
 */
export async function localLogSigningKeys(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'log-signing-keys.json')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  const keys = []
  for (const alg of ['EdDSA', 'ML-DSA-44'] as const)
    keys.push((await generateSigningKey(alg)).exportPrivateJwk())
  const text = JSON.stringify(keys)
  writeFileSync(file, `${text}\n`, { mode: 0o600 })
  return text
}

/**
 * The key-encryption key of tenants' QPU provider credentials for `npm start`: generated on first
 * start into `<dataDir>/provider-credential-keys.json` (mode 0600) and given to the reasoning worker
 * only, so stored connections stay readable across restarts. Production sets the
 * PROVIDER_CREDENTIAL_KEYS secret instead.
 */
export function localProviderCredentialKeys(dataDir: string): string {
  const file = path.join(dataDir, 'provider-credential-keys.json')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  const text = JSON.stringify([generateCredentialKey('local-1')])
  writeFileSync(file, `${text}\n`, { mode: 0o600 })
  return text
}

/**
 * The key-encryption key of reasoning jobs' content for `npm start`: generated on first start into
 * `<dataDir>/content-keks.json` (mode 0600) and given to the reasoning worker only, so stored jobs
 * stay readable across restarts. Production sets the CONTENT_KEKS secret instead.
 */
export function localContentKeks(dataDir: string): string {
  const file = path.join(dataDir, 'content-keks.json')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  const text = JSON.stringify([generateContentKek('local-1')])
  writeFileSync(file, `${text}\n`, { mode: 0o600 })
  return text
}

function isNeon(url: string): boolean {
  return /\.neon\.tech(:\d+)?\//.test(url) || /\.neon\.build/.test(url)
}

/** A port free on `host` now (the gateway binds it a moment later). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, host, () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** The URL a local browser reaches `host:port` at. */
function localOrigin(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`
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
    const {
      JWT_SIGNING_KEYS: configuredKeys,
      LOG_SIGNING_KEYS: configuredLogKeys,
      PROVIDER_CREDENTIAL_KEYS: configuredCredentialKeys,
      CONTENT_KEKS: configuredContentKeks,
      ...configured
    } = options.bindings ?? {}
    const sharedBindings = { ...configured }
    const signingKeys = configuredKeys ?? (await localSigningKeys(options.dataDir))
    const logSigningKeys = configuredLogKeys ?? (await localLogSigningKeys(options.dataDir))
    const credentialKeys = configuredCredentialKeys ?? localProviderCredentialKeys(options.dataDir)
    const contentKeks = configuredContentKeks ?? localContentKeks(options.dataDir)

    // 3b. Telemetry's destination. Without OTLP_COLLECTOR_URL, the local collector (files under
    //     DATA_DIR/telemetry, scripts/otlp-collector/) takes the exports, as the simulated model
    //     and the built-in index serve the other families by default; the workers cannot tell it
    //     from any other collector.
    let telemetry: StackTelemetry = { collector: 'configured' }
    if (!sharedBindings.OTLP_COLLECTOR_URL) {
      const collector = await startLocalCollector({ dataDir: options.dataDir })
      stops.push(() => collector.close())
      sharedBindings.OTLP_COLLECTOR_URL = collector.url
      telemetry = { collector: 'local', url: collector.url, dir: collector.dir }
    }

    // 4. Workers: bundle each, take its bindings from its wrangler config, then run them all. The
    //    CBOM's library facts are refreshed from package-lock.json first (built into the platform worker).
    writeCryptoLibraries()
    const workers = await buildWorkers(path.join(options.dataDir, 'build'), (name) => ({
      ...dbEnv,
      ...sharedBindings,
      ...(name === 'svc-auth' ? { JWT_SIGNING_KEYS: signingKeys } : {}),
      ...(name === 'svc-platform' ? { LOG_SIGNING_KEYS: logSigningKeys } : {}),
      ...(name === 'svc-reasoning'
        ? { PROVIDER_CREDENTIAL_KEYS: credentialKeys, CONTENT_KEKS: contentKeks }
        : {}),
    }))
    const dropped = new Set(options.withoutCompatibilityFlags ?? [])
    for (const w of dropped.size > 0 ? workers : []) {
      const flags = (w.config.compatibility_flags ?? []).filter((flag) => !dropped.has(flag))
      w.config = { ...w.config, compatibility_flags: flags }
      w.options = {
        ...w.options,
        compatibilityFlags: (w.options.compatibilityFlags ?? []).filter((flag) => !dropped.has(flag)),
      }
    }
    const runtime = options.runtime ?? 'miniflare'
    let baseUrl = ''
    let miniflare: Miniflare | undefined
    // Upgrade actions in 402/403/429 bodies link to this stack's console (CONSOLE_URL), so the
    // gateway's address must be known before the workers start: a port of 0 is chosen just before
    // the runtime binds it, and chosen again should another process take it in between.
    for (let attempt = 1; ; attempt++) {
      const port = options.port === 0 ? await freePort(options.host) : options.port
      const consoleUrl =
        configured.CONSOLE_URL ?? `${configured.PUBLIC_BASE_URL ?? localOrigin(options.host, port)}/console`
      for (const w of workers) (w.options.bindings as Record<string, unknown>).CONSOLE_URL = consoleUrl
      try {
        if (runtime === 'workerd') {
          const workerd = await startWorkerd({
            host: options.host,
            port,
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
          const instance = new Miniflare(
            convertV4MiniflareOptions({
              host: options.host,
              port,
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
          try {
            baseUrl = (await instance.ready).origin
          } catch (err) {
            await instance.dispose().catch(() => {})
            throw err
          }
          miniflare = instance
          stops.push(() => instance.dispose())
        }
        break
      } catch (err) {
        if (options.port !== 0 || attempt === 5 || !/address already in use|EADDRINUSE/i.test(String(err)))
          throw err
      }
    }
    // Lets tools (tests, the workspace CLI) reach this running stack's database: PGlite is
    // single-process, so they go through the bridge rather than opening the data folder.
    const runtimeFile = path.join(options.dataDir, 'runtime.json')
    writeFileSync(runtimeFile, `${JSON.stringify({ baseUrl, pid: process.pid, database: dbEnv }, null, 2)}\n`)
    stops.push(async () => rmSync(runtimeFile, { force: true }))
    // ...and lets them find this stack without being told its DATA_DIR (scripts/running-stacks.ts).
    const unregister = registerRunningStack(ROOT, { dataDir: options.dataDir, baseUrl })
    stops.push(async () => unregister())
    return {
      baseUrl,
      credentials,
      database: { kind, bridgeUrl },
      telemetry,
      runtime,
      ...(miniflare ? { miniflare } : {}),
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}
