/**
 * Seeds reference data (plans) and a development workspace with one owner (with a password for
 * POST /auth/login), a test key, a live key and a service account (for POST /auth/service-token).
 * Idempotent: the plaintext credentials are kept in `<dataDir>/dev-credentials.json` (git-ignored,
 * never in the database), and a restart re-uses them; if the database was reset, the same
 * workspace and credentials are recreated from that file.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { sql } from 'drizzle-orm'
import WebSocket from 'ws'
import { z } from 'zod'
import { apiKeySuffix, generateApiKey, hashApiKey } from '../../shared/auth/api-keys'
import { createServiceAccount } from '../../shared/auth/service-accounts'
import { hashPassword } from '../../shared/crypto/password'
import {
  type DatabaseEnv,
  type Drizzle,
  openDatabase,
  schema,
  useWebSocketConstructor,
} from '../../shared/db/client'
import { PLAN_CATALOG } from '../../shared/plans/plan-catalog'
import { generatePassword } from './user-passwords'

// Reference rows for the plan catalog, derived from it (limits live in the versioned catalog).
const PLAN_REFERENCE = {
  version: PLAN_CATALOG.version,
  plans: PLAN_CATALOG.plans.map(({ id, name }) => ({ id, name })),
}

export const DevCredentials = z.object({
  tenantId: z.string().uuid(),
  tenantName: z.string(),
  ownerEmail: z.string(),
  ownerUserId: z.string().uuid(),
  testKey: z.string(),
  liveKey: z.string(),
  // Added later than the keys: files written before have none and get them on the next start.
  ownerPassword: z.string().optional(),
  serviceAccountId: z.string().uuid().optional(),
  serviceAccountSecret: z.string().optional(),
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
    const complete = await ensureLoginCredentials(database.db, creds)
    if (!existing || JSON.stringify(complete) !== JSON.stringify(existing)) {
      mkdirSync(dataDir, { recursive: true })
      writeFileSync(file, `${JSON.stringify(complete, null, 2)}\n`, { mode: 0o600 })
    }
    return complete
  } finally {
    await database.close()
  }
}

/** The owner's password and the development service account, created or restored from the file. */
async function ensureLoginCredentials(db: Drizzle, creds: DevCredentials): Promise<DevCredentials> {
  const out = { ...creds }
  out.ownerPassword ??= generatePassword()
  const [owner] = await db
    .select({ id: schema.users.id, passwordHash: schema.users.passwordHash })
    .from(schema.users)
    .where(sql`lower(${schema.users.email}) = lower(${creds.ownerEmail})`)
  if (owner && (!owner.passwordHash || out.ownerPassword !== creds.ownerPassword)) {
    await db
      .update(schema.users)
      .set({ passwordHash: await hashPassword(out.ownerPassword) })
      .where(sql`${schema.users.id} = ${owner.id}`)
  }
  const account = {
    name: 'Development service account',
    audiences: ['internal-service', 'external-api'] as const,
  }
  if (out.serviceAccountId && out.serviceAccountSecret) {
    const [row] = await db
      .select({ id: schema.serviceAccounts.id })
      .from(schema.serviceAccounts)
      .where(sql`${schema.serviceAccounts.id} = ${out.serviceAccountId}`)
    if (!row) {
      await db.insert(schema.serviceAccounts).values({
        id: out.serviceAccountId,
        tenantId: creds.tenantId,
        name: account.name,
        audiences: [...account.audiences],
        secretHash: await hashPassword(out.serviceAccountSecret),
        createdBy: 'seed',
      })
    }
  } else {
    const created = await createServiceAccount(db, {
      tenantId: creds.tenantId,
      name: account.name,
      audiences: account.audiences,
      createdBy: 'seed',
    })
    out.serviceAccountId = created.account.id
    out.serviceAccountSecret = created.secret
  }
  return out
}
