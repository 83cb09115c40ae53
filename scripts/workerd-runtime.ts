/**
 * The stack's workers on plain `workerd serve` with a generated config, the way production runs
 * them: no Miniflare entry worker in front of the gateway and no outbound interceptor worker
 * behind every `fetch()`. Each of those is an extra isolate hop on every request (about 80–100 µs
 * of CPU each on this machine), so benchmarks run the product here (scripts/stack.ts,
 * `runtime: 'workerd'`); `npm start` keeps Miniflare by default.
 *
 * Input is what scripts/stack.ts gives Miniflare (the options `unstable_getMiniflareWorkerOptions`
 * derives from each wrangler config, plus the stack's own bindings), so both runtimes see the same
 * bindings. Only the kinds this product uses have a translation: plain-text and JSON values,
 * service bindings and Durable Object namespaces (also another worker's, `script_name`). Anything
 * else fails by name rather than starting a worker that lacks a binding, except Queues: plain
 * workerd has no queue broker (Miniflare brings one), so queue producers and consumers are left
 * out here and said so once; the reasoning worker then answers real-hardware jobs without a queue
 * (classical fallback, docs/quantum-selector.md). Run QPU paths with Miniflare (`npm start`).
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import net from 'node:net'
import path from 'node:path'
import type { Readable } from 'node:stream'

export interface WorkerdWorker {
  name: string
  /** The esbuild bundle (scripts/workers.ts bundleWorker): one ES module. */
  scriptPath: string
  compatibilityDate: string
  compatibilityFlags: readonly string[]
  /** Miniflare worker options of this worker: its bindings are read from here. */
  options: Record<string, unknown>
  /** Durable Object classes this worker hosts (its `[[migrations]]`): class → SQLite-backed. */
  durableObjectClasses: ReadonlyMap<string, boolean>
}

export interface WorkerdOptions {
  host: string
  /** 0 = any free port. */
  port: number
  /** The only worker with a socket; the others are reachable only through service bindings. */
  entry: string
  workers: readonly WorkerdWorker[]
  /** Config file and Durable Object storage go under `<dataDir>/workerd`. */
  dataDir: string
  /** workerd's `--verbose`: informational messages, such as uncaught exceptions with stacks. */
  verbose?: boolean
  /**
   * V8 flags for diagnosis (e.g. `--trace-gc`); defaults to `WORKERD_V8_FLAGS` (space-separated).
   * Production's runtime sets its own: never a tuning knob for benchmarks.
   */
  v8Flags?: readonly string[]
}

export interface WorkerdRuntime {
  url: URL
  pid: number
  stop(): Promise<void>
}

/** Option keys translated below, or bookkeeping of Miniflare's with no meaning here. */
const HANDLED = new Set([
  'name',
  'bindings',
  'serviceBindings',
  'durableObjects',
  'compatibilityDate',
  'compatibilityFlags',
  'modules',
  'modulesRoot',
  'modulesRules',
  'rootPath',
  'scriptPath',
])

/** Option keys with no plain-workerd equivalent that a worker can run without (see above). */
const LEFT_OUT = new Set(['queueProducers', 'queueConsumers'])

const STOP_GRACE_MS = 5_000

/** The workerd binary of the installed `workerd` package (the one Miniflare runs too). */
export function workerdBinary(): string {
  return (createRequire(import.meta.url)('workerd') as { default: string }).default
}

/** A Cap'n Proto text literal: quotes, backslashes and control characters escaped; UTF-8 as is. */
function str(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is escaped
  return `"${value.replace(/[\\"\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}"`
}

/** True when an option carries no binding: undefined, `{}`, `[]`, or only such values. */
function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null) return true
  if (Array.isArray(value)) return value.length === 0
  if (typeof value === 'object') return Object.values(value).every(isEmpty)
  return false
}

function unsupported(worker: string, what: string): Error {
  return new Error(
    `runtime 'workerd': worker ${worker} has ${what}, which has no plain-workerd equivalent here; run it with runtime 'miniflare' (npm start) instead`,
  )
}

function bindingsOf(worker: WorkerdWorker): string[] {
  const out: string[] = []
  const { options, name } = worker
  for (const key of Object.keys(options)) {
    if (LEFT_OUT.has(key) && !isEmpty(options[key])) {
      console.warn(`runtime 'workerd': ${name}'s ${key} left out (plain workerd has no queue broker)`)
      continue
    }
    if (!HANDLED.has(key) && !isEmpty(options[key])) {
      // e.g. `ai` for Workers AI (`[ai]`), which only exists remotely (Miniflare proxies it).
      const kind = key === 'ai' ? 'Workers AI ([ai])' : key
      throw unsupported(name, `a binding of kind ${kind} (${JSON.stringify(options[key]).slice(0, 120)})`)
    }
  }
  for (const [binding, value] of Object.entries((options.bindings ?? {}) as Record<string, unknown>)) {
    out.push(
      typeof value === 'string'
        ? `(name = ${str(binding)}, text = ${str(value)})`
        : `(name = ${str(binding)}, json = ${str(JSON.stringify(value))})`,
    )
  }
  const services = (options.serviceBindings ?? {}) as Record<string, unknown>
  for (const [binding, target] of Object.entries(services)) {
    if (typeof target === 'string') {
      out.push(`(name = ${str(binding)}, service = ${str(target)})`)
      continue
    }
    const { name: service, entrypoint, ...rest } = (target ?? {}) as Record<string, unknown>
    if (typeof service !== 'string' || !isEmpty(rest))
      throw unsupported(name, `service binding ${binding} = ${JSON.stringify(target)}`)
    const designator =
      typeof entrypoint === 'string'
        ? `(name = ${str(service)}, entrypoint = ${str(entrypoint)})`
        : str(service)
    out.push(`(name = ${str(binding)}, service = ${designator})`)
  }
  const objects = (options.durableObjects ?? {}) as Record<string, unknown>
  for (const [binding, target] of Object.entries(objects)) {
    const { className, scriptName } = (typeof target === 'string' ? { className: target } : target) as {
      className?: string
      scriptName?: string
    }
    if (!className) throw unsupported(name, `Durable Object binding ${binding} = ${JSON.stringify(target)}`)
    const host = scriptName ?? name
    out.push(
      `(name = ${str(binding)}, durableObjectNamespace = (className = ${str(className)}${scriptName ? `, serviceName = ${str(host)}` : ''}))`,
    )
  }
  return out
}

/** The classes a worker hosts: its migrations, plus any class it binds without `script_name`. */
function hostedClasses(worker: WorkerdWorker): Map<string, boolean> {
  const classes = new Map(worker.durableObjectClasses)
  const objects = (worker.options.durableObjects ?? {}) as Record<string, unknown>
  for (const target of Object.values(objects)) {
    if (typeof target === 'string') {
      if (!classes.has(target)) classes.set(target, false)
      continue
    }
    const { className, scriptName, useSQLite } = target as {
      className: string
      scriptName?: string
      useSQLite?: boolean
    }
    if (scriptName === undefined && !classes.has(className)) classes.set(className, useSQLite === true)
  }
  return classes
}

/** The workerd config (Cap'n Proto text). Module paths are relative to `configDir`. */
export function workerdConfig(options: WorkerdOptions, configDir: string): string {
  const names = new Set(options.workers.map((w) => w.name))
  if (!names.has(options.entry)) throw new Error(`runtime 'workerd': no worker named ${options.entry}`)
  const services: string[] = []
  for (const worker of options.workers) {
    for (const target of Object.values((worker.options.durableObjects ?? {}) as Record<string, unknown>)) {
      const scriptName =
        typeof target === 'string' ? undefined : (target as { scriptName?: string }).scriptName
      if (scriptName && !names.has(scriptName))
        throw new Error(
          `runtime 'workerd': ${worker.name} binds a Durable Object of ${scriptName}, not in the stack`,
        )
    }
    const classes = hostedClasses(worker)
    const module = path.relative(configDir, worker.scriptPath).split(path.sep).join('/')
    const fields = [
      `modules = [(name = ${str(path.basename(worker.scriptPath))}, esModule = embed ${str(module)})]`,
      `compatibilityDate = ${str(worker.compatibilityDate)}`,
      `compatibilityFlags = [${worker.compatibilityFlags.map(str).join(', ')}]`,
      `bindings = [\n      ${bindingsOf(worker).join(',\n      ')}\n    ]`,
      // Upstream providers, the database bridge (a local WebSocket) and Neon over the internet.
      'globalOutbound = "internet"',
    ]
    if (classes.size > 0) {
      // Same unique keys as Miniflare (`<worker>-<class>`); objects keep SQLite state and alarms
      // on disk across restarts.
      const namespaces = [...classes].map(
        ([className, sql]) =>
          `(className = ${str(className)}, uniqueKey = ${str(`${worker.name}-${className}`)}, enableSql = ${sql})`,
      )
      fields.push(`durableObjectNamespaces = [${namespaces.join(', ')}]`)
      fields.push('durableObjectStorage = (localDisk = "do-storage")')
    }
    services.push(`(name = ${str(worker.name)}, worker = (\n    ${fields.join(',\n    ')}\n  ))`)
  }
  services.push(
    '(name = "internet", network = (allow = ["public", "private", "local"], tlsOptions = (trustBrowserCas = true)))',
    `(name = "do-storage", disk = (path = ${str(path.join(options.dataDir, 'workerd', 'durable-objects'))}, writable = true))`,
  )
  const v8Flags = options.v8Flags ?? (process.env.WORKERD_V8_FLAGS ?? '').split(/\s+/).filter(Boolean)
  return `# Generated by scripts/workerd-runtime.ts; rewritten on every start.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (${v8Flags.length > 0 ? `\n  v8Flags = [${v8Flags.map(str).join(', ')}],` : ''}
  services = [
  ${services.join(',\n  ')}
  ],
  sockets = [(name = "http", address = ${str(`${options.host}:${options.port}`)}, http = (), service = ${str(options.entry)})],
);
`
}

async function waitForListen(control: Readable, exited: Promise<unknown>): Promise<number> {
  let buffer = ''
  return new Promise<number>((resolve, reject) => {
    // Rejecting after the promise settled is a no-op, so a later (normal) exit is not an error here.
    exited.then(() => reject(new Error('workerd exited before listening (its output above says why)')))
    control.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8')
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl)
        buffer = buffer.slice(nl + 1)
        try {
          const message = JSON.parse(line) as { event?: string; socket?: string; port?: number }
          if (message.event === 'listen' && message.socket === 'http' && message.port) resolve(message.port)
        } catch {}
      }
    })
  })
}

async function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port }, () => {
      socket.destroy()
      resolve(true)
    })
    socket.on('error', () => resolve(false))
  })
}

/** Writes the config and runs `workerd serve` on it; resolves once the gateway's socket accepts. */
export async function startWorkerd(options: WorkerdOptions): Promise<WorkerdRuntime> {
  const dir = path.join(options.dataDir, 'workerd')
  mkdirSync(path.join(dir, 'durable-objects'), { recursive: true })
  const configFile = path.join(dir, 'config.capnp')
  // Holds the secrets given as bindings (signing keys, the internal context secret): owner only.
  writeFileSync(configFile, workerdConfig(options, dir), { mode: 0o600 })

  // Worker console.log / console.error go to workerd's stdout / stderr, passed through as they are.
  // fd 3: workerd's control messages, which report the port once the socket listens.
  const args = ['serve', configFile, '--control-fd=3', ...(options.verbose ? ['--verbose'] : [])]
  const child = spawn(workerdBinary(), args, { stdio: ['ignore', 'inherit', 'inherit', 'pipe'] })
  const exited = once(child, 'exit')
  const control = child.stdio[3] as Readable
  let stopping = false
  child.on('exit', (code, signal) => {
    if (!stopping) console.error(`workerd exited unexpectedly (${signal ?? `code ${code}`})`)
  })

  const stop = async () => {
    stopping = true
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS)
    await exited
    clearTimeout(timer)
  }
  try {
    const port = await waitForListen(control, exited)
    const host = options.host === '0.0.0.0' ? '127.0.0.1' : options.host === '::' ? '::1' : options.host
    for (let i = 0; !(await accepts(host, port)); i++) {
      if (i >= 50) throw new Error(`workerd reported port ${port} but it does not accept connections`)
      await new Promise((r) => setTimeout(r, 100))
    }
    const url = new URL(`http://${host.includes(':') ? `[${host}]` : host}:${port}`)
    return { url, pid: child.pid!, stop }
  } catch (err) {
    await stop()
    throw err
  }
}
