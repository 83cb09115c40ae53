/**
 * Provider connections in Postgres (`qpu_provider_connections`), every query scoped by the tenant
 * and the mode (a test-mode connection is not a live one): the reasoning worker's API manages
 * them, the QPU queue consumer and the ReasoningJob object open a tenant's connection (its
 * credential decrypted) for that tenant's jobs only.
 */
import { and, desc, eq } from 'drizzle-orm'
import type { Drizzle } from '../../../../shared/db/client'
import { qpuProviderConnections } from '../../../../shared/db/schema'
import type { TenantScope } from '../../../../shared/worker/request-context'
import { credentialKeyring, decryptCredential } from './provider-credentials'
import type { ProviderAccount, ProviderKind } from './qpu-provider'

export type ProviderConnectionRow = typeof qpuProviderConnections.$inferSelect

/** The scope's connections, as a query condition. */
export function connectionsOf(scope: TenantScope) {
  return and(
    eq(qpuProviderConnections.tenantId, scope.tenantId),
    eq(qpuProviderConnections.mode, scope.mode),
  )!
}

export async function listConnections(db: Drizzle, scope: TenantScope): Promise<ProviderConnectionRow[]> {
  return db
    .select()
    .from(qpuProviderConnections)
    .where(connectionsOf(scope))
    .orderBy(desc(qpuProviderConnections.createdAt), desc(qpuProviderConnections.id))
}

export async function getConnection(
  db: Drizzle,
  scope: TenantScope,
  id: string,
): Promise<ProviderConnectionRow | null> {
  const [row] = await db
    .select()
    .from(qpuProviderConnections)
    .where(and(connectionsOf(scope), eq(qpuProviderConnections.id, id)))
  return row ?? null
}

/** The account behind a connection of the scope, credential decrypted; null when it does not exist. */
export async function openConnectionAccount(
  db: Drizzle,
  keysSecret: string | undefined,
  scope: TenantScope,
  connectionId: string,
): Promise<ProviderAccount | null> {
  const row = await getConnection(db, scope, connectionId)
  if (!row) return null
  const keyring = await credentialKeyring(keysSecret)
  const apiKey = await decryptCredential(keyring, row.credential, { tenantId: scope.tenantId, connectionId })
  return { kind: row.kind as ProviderKind, baseUrl: row.baseUrl, apiKey, target: row.target }
}
