/**
 * Global setup of the end-to-end projects: starts the stack with `npm start` (embedded PGlite,
 * or a scratch database on the real PostgreSQL server), adds a second tenant and a revoked key
 * through the running stack's database, and hands everything to the tests via `inject('stack')`.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import WebSocket from 'ws'
import { ensureWorkspace } from '../../scripts/db/seed.ts'
import { generateApiKey } from '../../shared/auth/api-keys.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
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
  tenantA: { id: string; testKey: string; liveKey: string; revokedKey: string }
  tenantB: { id: string; liveKey: string; testKey: string }
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

export async function setupStack(project: TestProject, kind: 'pglite' | 'postgres') {
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

  useWebSocketConstructor(WebSocket)
  const database = openDatabase(stack.database, { max: 1 })
  const revokedKey = generateApiKey('live')
  const tenantB = { liveKey: generateApiKey('live'), testKey: generateApiKey('test') }
  let tenantBId: string
  try {
    await ensureWorkspace(database.db, {
      tenantId: stack.credentials.tenantId,
      tenantName: stack.credentials.tenantName,
      planId: 'team',
      ownerEmail: stack.credentials.ownerEmail,
      keys: [{ name: 'revoked key', key: revokedKey, revoked: true }],
    })
    ;({ tenantId: tenantBId } = await ensureWorkspace(database.db, {
      tenantName: 'Tenant B',
      planId: 'pro',
      ownerEmail: `owner-b-${kind}@example.test`,
      keys: [
        { name: 'B live', key: tenantB.liveKey },
        { name: 'B test', key: tenantB.testKey },
      ],
    }))
  } finally {
    await database.close()
  }

  project.provide('stack', {
    kind,
    baseUrl: stack.baseUrl,
    dataDir,
    databaseUrl: scratch?.url ?? null,
    tenantA: {
      id: stack.credentials.tenantId,
      testKey: stack.credentials.testKey,
      liveKey: stack.credentials.liveKey,
      revokedKey,
    },
    tenantB: { id: tenantBId, ...tenantB },
    fakes,
    database: stack.database,
    credentialCacheTtlSeconds: CREDENTIAL_CACHE_TTL_SECONDS,
  })

  return async () => {
    await stack.stop()
    for (const stop of stopFakes) await stop().catch(() => {})
    await scratch?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}
