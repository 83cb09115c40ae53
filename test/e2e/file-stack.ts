/**
 * The shared stack as one e2e file sees it. Files of a project run side by side against the one
 * stack its global setup started, so each file works in workspaces of its own:
 *
 *   const stack = await fileStack()                  // at the top of the file
 *   const stack = await fileStack({ login: true })   // also an owner password and a service account
 *   const stack = await fileStack({ plan: 'enterprise' })   // workspace A on another plan than Team
 *
 * creates them through the stack's database (as `npm start` seeds the development workspace)
 * and returns the stack with them. Whatever a file does to its workspaces (keys revoked, policies
 * changed, rate limits and allowances spent, logins failed and accounts locked, audit entries
 * appended) no other file sees. The development workspace `npm start` seeded is
 * `stack.devWorkspace`: files may use its keys, never change it.
 */
import { inject } from 'vitest'
import WebSocket from 'ws'
import { ensureWorkspace } from '../../scripts/db/seed.ts'
import { generatePassword, setUserPassword } from '../../scripts/db/user-passwords.ts'
import { generateApiKey } from '../../shared/auth/api-keys.ts'
import { createServiceAccount } from '../../shared/auth/service-accounts.ts'
import { openDatabase, useWebSocketConstructor } from '../../shared/db/client.ts'
import type { StackFixture } from './stack.setup.ts'

export interface FileTenant {
  id: string
  testKey: string
  liveKey: string
}

/** The file's main workspace: plan Team (or the one asked for), an owner, owner test and live keys, and a revoked key. */
export interface FileTenantA extends FileTenant {
  revokedKey: string
  ownerEmail: string
  ownerUserId: string
}

/** What `{ login: true }` adds: the owner's password (POST /auth/login) and a service account. */
export interface FileLogin {
  ownerPassword: string
  /** Audiences internal-service and external-api, as the development seed's. */
  serviceAccountId: string
  serviceAccountSecret: string
}

export interface FileStack<A extends FileTenantA = FileTenantA> extends StackFixture {
  tenantA: A
  /** Another workspace (plan Pro, test and live keys) for tenancy checks. */
  tenantB: FileTenant
}

export interface FileStackOptions {
  /** Workspace A's plan (default team). */
  readonly plan?: 'free' | 'pro' | 'team' | 'enterprise'
}

export function fileStack(options?: FileStackOptions & { login?: false }): Promise<FileStack>
export function fileStack(
  options: FileStackOptions & { login: true },
): Promise<FileStack<FileTenantA & FileLogin>>
export async function fileStack(options: FileStackOptions & { login?: boolean } = {}): Promise<FileStack> {
  const stack = inject('stack')
  // Hashing a password or a secret (Argon2id) costs about a second here: only for files that log in.
  const suffix = crypto.randomUUID().slice(0, 8)
  const a = {
    testKey: generateApiKey('test'),
    liveKey: generateApiKey('live'),
    revokedKey: generateApiKey('live'),
  }
  const b = { testKey: generateApiKey('test'), liveKey: generateApiKey('live') }
  const ownerEmail = `owner-a-${suffix}@example.test`
  useWebSocketConstructor(WebSocket)
  const database = openDatabase(stack.database, { max: 1 })
  try {
    const { tenantId, ownerUserId } = await ensureWorkspace(database.db, {
      tenantName: `File workspace A ${suffix}`,
      planId: options.plan ?? 'team',
      ownerEmail,
      keys: [
        { name: 'A test', key: a.testKey },
        { name: 'A live', key: a.liveKey },
        { name: 'A revoked', key: a.revokedKey, revoked: true },
      ],
    })
    const { tenantId: tenantBId } = await ensureWorkspace(database.db, {
      tenantName: `File workspace B ${suffix}`,
      planId: 'pro',
      ownerEmail: `owner-b-${suffix}@example.test`,
      keys: [
        { name: 'B live', key: b.liveKey },
        { name: 'B test', key: b.testKey },
      ],
    })
    let tenantA: FileTenantA | (FileTenantA & FileLogin) = { id: tenantId, ...a, ownerEmail, ownerUserId }
    if (options.login) {
      const ownerPassword = generatePassword()
      await setUserPassword(database.db, ownerEmail, ownerPassword)
      const { account, secret } = await createServiceAccount(database.db, {
        tenantId,
        name: 'File service account',
        audiences: ['internal-service', 'external-api'],
        createdBy: 'seed',
      })
      tenantA = { ...tenantA, ownerPassword, serviceAccountId: account.id, serviceAccountSecret: secret }
    }
    return { ...stack, tenantA, tenantB: { id: tenantBId, ...b } }
  } finally {
    await database.close()
  }
}
