/**
 * Provider connections in Postgres (`qpu_provider_connections`), every query scoped by the tenant:
 * the reasoning worker's API manages them, the QPU queue consumer and the ReasoningJob object open
 * a tenant's connection (its credential decrypted) for that tenant's jobs only.
 */
import { and, desc, eq } from 'drizzle-orm'
import type { Drizzle } from '../../db/client'
import { qpuProviderConnections } from '../../db/schema'
import { credentialKeyring, decryptCredential } from './provider-credentials'
import type { ProviderAccount, ProviderKind } from './qpu-provider'

export type ProviderConnectionRow = typeof qpuProviderConnections.$inferSelect

export async function listConnections(db: Drizzle, tenantId: string): Promise<ProviderConnectionRow[]> {
  return db
    .select()
    .from(qpuProviderConnections)
    .where(eq(qpuProviderConnections.tenantId, tenantId))
    .orderBy(desc(qpuProviderConnections.createdAt), desc(qpuProviderConnections.id))
}

export async function getConnection(
  db: Drizzle,
  tenantId: string,
  id: string,
): Promise<ProviderConnectionRow | null> {
  const [row] = await db
    .select()
    .from(qpuProviderConnections)
    .where(and(eq(qpuProviderConnections.tenantId, tenantId), eq(qpuProviderConnections.id, id)))
  return row ?? null
}

/** The account behind a tenant's connection, credential decrypted; null when it does not exist. */
export async function openConnectionAccount(
  db: Drizzle,
  keysSecret: string | undefined,
  tenantId: string,
  connectionId: string,
): Promise<ProviderAccount | null> {
  const row = await getConnection(db, tenantId, connectionId)
  if (!row) return null
  const keyring = await credentialKeyring(keysSecret)
  const apiKey = await decryptCredential(keyring, row.credential, { tenantId, connectionId })
  return { kind: row.kind as ProviderKind, baseUrl: row.baseUrl, apiKey, target: row.target }
}
