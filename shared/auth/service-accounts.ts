/**
 * Service accounts: a tenant's non-human principals. Each has a name, the token audiences it may
 * ask for (`internal-service`, `external-api`) and a secret that is shown once, when the account
 * is created or its secret rotated, and stored only as an Argon2id hash (the same KDF and
 * parameters as user passwords). Used by the platform admin API and the workspace CLI.
 */
import { and, desc, eq, isNull } from 'drizzle-orm'
import { hashPassword } from '../crypto/password'
import type { Drizzle } from '../db/client'
import { type Audience, serviceAccounts } from '../db/schema'
import { AppError } from '../http/errors'
import type { CredentialPowers } from './credential-ceiling'
import { generateServiceAccountSecret } from './opaque-credentials'

/** Audiences a service account may hold; `platform` tokens are for people (POST /auth/login). */
export const SERVICE_ACCOUNT_AUDIENCES = [
  'internal-service',
  'external-api',
] as const satisfies readonly Audience[]
export type ServiceAccountAudience = (typeof SERVICE_ACCOUNT_AUDIENCES)[number]

type ServiceAccountRow = typeof serviceAccounts.$inferSelect

/**
 * What a service account with `scopes` can do, for the credential ceiling: it acts with the member
 * role (the gateway gives its tokens that role) and has no test mode, so its tokens are live.
 */
export function serviceAccountPowers(scopes: readonly string[]): CredentialPowers {
  return { scopes, role: 'member', mode: 'live' }
}

export interface ServiceAccountView {
  id: string
  object: 'service_account'
  tenant_id: string
  name: string
  audiences: ServiceAccountAudience[]
  scopes: string[]
  created_by: string | null
  created_at: string
  rotated_at: string | null
  revoked_at: string | null
}

export function renderServiceAccount(row: ServiceAccountRow): ServiceAccountView {
  return {
    id: row.id,
    object: 'service_account',
    tenant_id: row.tenantId,
    name: row.name,
    audiences: row.audiences.filter((a): a is ServiceAccountAudience =>
      (SERVICE_ACCOUNT_AUDIENCES as readonly string[]).includes(a),
    ),
    scopes: row.scopes,
    created_by: row.createdBy,
    created_at: row.createdAt.toISOString(),
    rotated_at: row.rotatedAt?.toISOString() ?? null,
    revoked_at: row.revokedAt?.toISOString() ?? null,
  }
}

export interface CreateServiceAccountInput {
  tenantId: string
  name: string
  audiences: readonly ServiceAccountAudience[]
  scopes?: readonly string[]
  /** Who created it, e.g. `key:<uuid>` or `user:<uuid>` (free text for the CLI). */
  createdBy: string | null
}

/** Creates an account and returns it with its secret (the only time the secret is available). */
export async function createServiceAccount(
  db: Drizzle,
  input: CreateServiceAccountInput,
): Promise<{ account: ServiceAccountView; secret: string }> {
  const secret = generateServiceAccountSecret()
  const [row] = await db
    .insert(serviceAccounts)
    .values({
      tenantId: input.tenantId,
      name: input.name,
      audiences: [...new Set(input.audiences)],
      scopes: [...(input.scopes ?? [])],
      createdBy: input.createdBy,
      secretHash: await hashPassword(secret),
    })
    .returning()
  return { account: renderServiceAccount(row!), secret }
}

function notFound(id: string): AppError {
  return new AppError(
    404,
    'service_account_not_found',
    `No active service account ${id} in this workspace. List them with GET /platform/v1/service-accounts.`,
    { param: 'serviceAccountId' },
  )
}

/** An account that is not revoked, in the tenant (404 otherwise). */
export async function getActiveServiceAccount(
  db: Drizzle,
  tenantId: string,
  id: string,
): Promise<ServiceAccountView> {
  const [row] = await db
    .select()
    .from(serviceAccounts)
    .where(
      and(
        eq(serviceAccounts.id, id),
        eq(serviceAccounts.tenantId, tenantId),
        isNull(serviceAccounts.revokedAt),
      ),
    )
  if (!row) throw notFound(id)
  return renderServiceAccount(row)
}

/** Replaces the secret; the old one stops working at once (tokens already issued run to their expiry). */
export async function rotateServiceAccountSecret(
  db: Drizzle,
  tenantId: string,
  id: string,
): Promise<{ account: ServiceAccountView; secret: string }> {
  const secret = generateServiceAccountSecret()
  const secretHash = await hashPassword(secret)
  const [row] = await db
    .update(serviceAccounts)
    .set({ secretHash, rotatedAt: new Date() })
    .where(
      and(
        eq(serviceAccounts.id, id),
        eq(serviceAccounts.tenantId, tenantId),
        isNull(serviceAccounts.revokedAt),
      ),
    )
    .returning()
  if (!row) throw notFound(id)
  return { account: renderServiceAccount(row), secret }
}

/** Revokes an account: its secret is refused and the gateway refuses its tokens within one cache TTL. */
export async function revokeServiceAccount(
  db: Drizzle,
  tenantId: string,
  id: string,
): Promise<ServiceAccountView> {
  const [row] = await db
    .update(serviceAccounts)
    .set({ revokedAt: new Date() })
    .where(
      and(
        eq(serviceAccounts.id, id),
        eq(serviceAccounts.tenantId, tenantId),
        isNull(serviceAccounts.revokedAt),
      ),
    )
    .returning()
  if (!row) throw notFound(id)
  return renderServiceAccount(row)
}

export async function listServiceAccounts(db: Drizzle, tenantId: string): Promise<ServiceAccountView[]> {
  const rows = await db
    .select()
    .from(serviceAccounts)
    .where(eq(serviceAccounts.tenantId, tenantId))
    .orderBy(desc(serviceAccounts.createdAt))
  return rows.map(renderServiceAccount)
}
