/**
 * Global setup of the end-to-end projects: starts the stack with `npm start` (embedded PGlite,
 * or a scratch database on the real PostgreSQL server) and hands it to the tests via
 * `inject('stack')`. The files of a project run side by side on it, each in workspaces of its own
 * (`fileStack()`, test/e2e/file-stack.ts).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import { createScratchDatabase } from '../support/scratch-postgres.ts'
import { launchStack } from '../support/stack-process.ts'

/**
 * Local fakes of what is outside the product (model, search, speech providers...). Every module in
 * test/e2e/fakes/ default-exports a `FakeService`; each is started before the stack, its `env` is
 * given to `npm start`, and its `provide` reaches the tests as `inject('stack').fakes[name]`.
 */
export interface FakeService {
  name: string
  start(): Promise<{ env: Record<string, string>; provide?: Record<string, unknown>; stop(): Promise<void> }>
}

export interface StackFixture {
  kind: 'pglite' | 'postgres'
  baseUrl: string
  dataDir: string
  databaseUrl: string | null
  /**
   * The development workspace `npm start` seeded and printed. Shared by every file of the project:
   * use its keys, change nothing in it; a file's own workspaces come from `fileStack()`.
   */
  devWorkspace: { id: string; testKey: string; liveKey: string }
  fakes: Record<string, Record<string, unknown>>
  /** The running stack's database (through its bridge), for creating fixtures in tests. */
  database: { DATABASE_URL: string; DATABASE_WS_PROXY?: string }
  /**
   * The gateway's credential cache TTL (API_KEY_CACHE_TTL_SECONDS) on this stack: how long a
   * revocation may take to reach every isolate, short so that tests wait for it instead of 30 s.
   */
  credentialCacheTtlSeconds: number
}

const CREDENTIAL_CACHE_TTL_SECONDS = 1

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackFixture
  }
}

type Kind = StackFixture['kind']
interface Shared {
  started: Promise<{ fixture: StackFixture; stop(): Promise<void> }>
  users: number
}
/**
 * One stack per kind for the whole run, whichever projects name it (vitest.config.ts runs some
 * files of a kind in another group, as another project). Global setups of all projects run in
 * vitest's main process, one after another, so the record lives on globalThis.
 */
const runGlobals = globalThis as { svcE2eStacks?: Map<Kind, Shared> }
runGlobals.svcE2eStacks ??= new Map()
const shared = runGlobals.svcE2eStacks

function stackOf(kind: Kind): Shared {
  let entry = shared.get(kind)
  if (!entry) {
    entry = { started: startStack(kind), users: 0 }
    // Awaited by its own setup, which reports a failure; not an unhandled rejection before that.
    entry.started.catch(() => {})
    shared.set(kind, entry)
  }
  return entry
}

export async function setupStack(project: TestProject, kind: Kind) {
  // Every stack this run's projects name starts now, side by side: a start mostly keeps one core
  // busy, and the setups would otherwise start them one after the other.
  for (const other of ['pglite', 'postgres'] as const) {
    const named = project.vitest.projects.some((p) =>
      [p.config.globalSetup].flat().some((file) => file.endsWith(`${other}.setup.ts`)),
    )
    if (named) stackOf(other)
  }
  const entry = stackOf(kind)
  entry.users++
  const { fixture } = await entry.started
  project.provide('stack', fixture)
  return async () => {
    if (--entry.users > 0) return
    // The last user of this stack: stop it, and any stack started for projects that had no files.
    for (const [other, started] of shared) {
      if (started.users > 0) continue
      shared.delete(other)
      await started.started.then(
        (stack) => stack.stop(),
        () => {},
      )
    }
  }
}

async function startStack(kind: Kind): Promise<{ fixture: StackFixture; stop(): Promise<void> }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `svc-e2e-${kind}-`))
  const scratch = kind === 'postgres' ? await createScratchDatabase() : null
  const fakesDir = path.join(import.meta.dirname, 'fakes')
  const fakeModules = readdirSync(fakesDir)
    .filter((f) => f.endsWith('.fake.ts'))
    .sort()
  const fakes: Record<string, Record<string, unknown>> = {}
  const fakeEnv: Record<string, string> = {}
  const stopFakes: (() => Promise<void>)[] = []
  for (const file of fakeModules) {
    const service = (await import(path.join(fakesDir, file))).default as FakeService
    const started = await service.start()
    Object.assign(fakeEnv, started.env)
    fakes[service.name] = started.provide ?? {}
    stopFakes.push(started.stop)
  }
  // Settings the tests need shorter than their defaults (README's configuration table).
  const testSettings = {
    REASONING_RETRY_BASE_MS: '200',
    REASONING_RETRY_MAX_MS: '1000',
    // The QPU path: retried messages reach the dead-letter queue in seconds, a lost message is sent
    // again soon, an unknown outcome the provider does not know is given up after a second.
    QPU_RETRY_MAX_DELAY_SECONDS: '1',
    QPU_REDRIVE_SECONDS: '5',
    QPU_RECONCILE_GRACE_SECONDS: '1',
    QPU_POLL_INTERVAL_SECONDS: '1',
    API_KEY_CACHE_TTL_SECONDS: String(CREDENTIAL_CACHE_TTL_SECONDS),
  }
  const stack = await launchStack({
    dataDir,
    env: { ...testSettings, ...fakeEnv },
    ...(scratch ? { databaseUrl: scratch.url } : {}),
  })

  const fixture: StackFixture = {
    kind,
    baseUrl: stack.baseUrl,
    dataDir,
    databaseUrl: scratch?.url ?? null,
    devWorkspace: {
      id: stack.credentials.tenantId,
      testKey: stack.credentials.testKey,
      liveKey: stack.credentials.liveKey,
    },
    fakes,
    database: stack.database,
    credentialCacheTtlSeconds: CREDENTIAL_CACHE_TTL_SECONDS,
  }
  return {
    fixture,
    async stop() {
      await stack.stop()
      for (const stop of stopFakes) await stop().catch(() => {})
      await scratch?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
