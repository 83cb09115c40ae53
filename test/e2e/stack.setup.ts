/**
 * Global setup of the end-to-end projects: starts the stack with `npm start` (embedded PGlite,
 * or a scratch database on the real PostgreSQL server), adds a second tenant and a revoked key
 * through the running stack's database, and hands everything to the tests via `inject('stack')`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import WebSocket from 'ws'
import { ensureWorkspace } from '../../scripts/db/seed.ts'
import { generateApiKey } from '../../shared/auth/api-keys.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import { createScratchDatabase } from '../support/scratch-postgres.ts'
import { launchStack } from '../support/stack-process.ts'

export interface StackFixture {
  kind: 'pglite' | 'postgres'
  baseUrl: string
  dataDir: string
  databaseUrl: string | null
  tenantA: { id: string; testKey: string; liveKey: string; revokedKey: string }
  tenantB: { id: string; liveKey: string; testKey: string }
}

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackFixture
  }
}

export async function setupStack(project: TestProject, kind: 'pglite' | 'postgres') {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `svc-e2e-${kind}-`))
  const scratch = kind === 'postgres' ? await createScratchDatabase() : null
  const stack = await launchStack({ dataDir, ...(scratch ? { databaseUrl: scratch.url } : {}) })

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
  })

  return async () => {
    await stack.stop()
    await scratch?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}
