/**
 * Seeds reference data (plans) and a development workspace with one owner, a test key and a
 * live key. Idempotent: the plaintext keys are kept in `<dataDir>/dev-credentials.json`
 * (git-ignored, never in the database), and a restart re-uses them; if the database was reset,
 * the same workspace and keys are recreated from that file.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { sql } from 'drizzle-orm'
import WebSocket from 'ws'
import { z } from 'zod'
import { apiKeySuffix, generateApiKey, hashApiKey } from '../../shared/auth/api-keys'
import {
  type DatabaseEnv,
  type Drizzle,
  openDatabase,
  schema,
  useWebSocketConstructor,
} from '../../shared/db/client'

// Reference rows for the plan catalog (limits live in the versioned plan configuration).
const PLAN_REFERENCE = {
  version: '2026-11-01',
  plans: [
    { id: 'free', name: 'Free' },
    { id: 'pro', name: 'Pro' },
    { id: 'team', name: 'Team' },
    { id: 'enterprise', name: 'Enterprise' },
  ],
}

const DevCredentials = z.object({
  tenantId: z.string().uuid(),
  tenantName: z.string(),
  ownerEmail: z.string(),
  ownerUserId: z.string().uuid(),
  testKey: z.string(),
  liveKey: z.string(),
})
export type DevCredentials = z.infer<typeof DevCredentials>

export async function seedPlans(db: Drizzle): Promise<void> {
  for (const plan of PLAN_REFERENCE.plans) {
    await db
      .insert(schema.plans)
      .values({ id: plan.id, name: plan.name, catalogVersion: PLAN_REFERENCE.version })
      .onConflictDoUpdate({
        target: schema.plans.id,
        set: { name: plan.name, catalogVersion: PLAN_REFERENCE.version },
      })
  }
}

export interface WorkspaceSpec {
  tenantId?: string
  tenantName: string
  planId: string
  ownerEmail: string
  ownerUserId?: string
  keys: { name: string; key: string; role?: 'owner' | 'admin' | 'member'; revoked?: boolean }[]
}

/** Creates (or completes) a workspace with an owner and the given keys. */
export async function ensureWorkspace(
  db: Drizzle,
  spec: WorkspaceSpec,
): Promise<{ tenantId: string; ownerUserId: string }> {
  return db.transaction(async (tx) => {
    const [tenant] = await tx
      .insert(schema.tenants)
      .values({ ...(spec.tenantId ? { id: spec.tenantId } : {}), name: spec.tenantName, planId: spec.planId })
      .onConflictDoUpdate({ target: schema.tenants.id, set: { name: spec.tenantName } })
      .returning({ id: schema.tenants.id })
    const [found] = await tx
      .select({ id: schema.users.id })
      .from(schema.users)
      .where(sql`lower(${schema.users.email}) = lower(${spec.ownerEmail})`)
    const [user] = found
      ? [found]
      : await tx
          .insert(schema.users)
          .values({
            ...(spec.ownerUserId ? { id: spec.ownerUserId } : {}),
            email: spec.ownerEmail,
            displayName: 'Owner',
          })
          .returning({ id: schema.users.id })
    const tenantId = tenant!.id
    const ownerUserId = user!.id
    await tx
      .insert(schema.members)
      .values({ tenantId, userId: ownerUserId, role: 'owner' })
      .onConflictDoNothing()
    for (const k of spec.keys) {
      const mode = k.key.startsWith('svc_sk_test_') ? 'test' : 'live'
      await tx
        .insert(schema.apiKeys)
        .values({
          tenantId,
          name: k.name,
          mode,
          keyHash: await hashApiKey(k.key),
          suffix: apiKeySuffix(k.key),
          role: k.role ?? 'owner',
          createdBy: ownerUserId,
          revokedAt: k.revoked ? new Date() : null,
        })
        .onConflictDoNothing()
    }
    return { tenantId, ownerUserId }
  })
}

export async function seedDevelopment(env: DatabaseEnv, dataDir: string): Promise<DevCredentials> {
  useWebSocketConstructor(WebSocket)
  const file = path.join(dataDir, 'dev-credentials.json')
  const database = openDatabase(env, { max: 1 })
  try {
    await seedPlans(database.db)
    const existing = existsSync(file) ? DevCredentials.parse(JSON.parse(readFileSync(file, 'utf8'))) : null
    const creds = existing ?? {
      tenantId: crypto.randomUUID(),
      tenantName: 'Development workspace',
      ownerEmail: 'owner@dev.localhost',
      ownerUserId: crypto.randomUUID(),
      testKey: generateApiKey('test'),
      liveKey: generateApiKey('live'),
    }
    await ensureWorkspace(database.db, {
      tenantId: creds.tenantId,
      tenantName: creds.tenantName,
      planId: 'team',
      ownerEmail: creds.ownerEmail,
      ownerUserId: creds.ownerUserId,
      keys: [
        { name: 'Development test key', key: creds.testKey },
        { name: 'Development live key', key: creds.liveKey },
      ],
    })
    if (!existing) {
      mkdirSync(dataDir, { recursive: true })
      writeFileSync(file, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 })
    }
    return creds
  } finally {
    await database.close()
  }
}
