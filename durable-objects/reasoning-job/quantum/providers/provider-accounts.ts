/**
 * Which provider account runs a QPU attempt: the platform's own IonQ account (`QPU_IONQ_*`) for
 * managed_qpu, or the tenant's provider connection (credential decrypted from Postgres) for
 * byopa_managed. Used by the queue consumer (to submit and poll) and by the ReasoningJob object
 * (to reconcile an unknown outcome), so both always reach the same account.
 */
import { type DatabaseEnv, openDatabase } from '../../../../shared/db/client'
import type { QpuAccountRef } from '../qpu-queue'
import { openConnectionAccount } from './provider-connections.store'
import type { ProviderAccount } from './qpu-provider'

export interface QpuAccountEnv extends DatabaseEnv {
  readonly QPU_IONQ_BASE_URL?: string
  readonly QPU_IONQ_API_KEY?: string
  readonly QPU_IONQ_TARGET?: string
  /** Secret: the key-encryption keys of tenants' provider credentials. */
  readonly PROVIDER_CREDENTIAL_KEYS?: string
}

/** The platform's own account, or null when this deployment has none. */
export function managedAccount(env: QpuAccountEnv): ProviderAccount | null {
  if (!env.QPU_IONQ_BASE_URL || !env.QPU_IONQ_API_KEY) return null
  return {
    kind: 'ionq',
    baseUrl: env.QPU_IONQ_BASE_URL,
    apiKey: env.QPU_IONQ_API_KEY,
    target: env.QPU_IONQ_TARGET || 'qpu.aria-1',
  }
}

/** The account of an attempt, or null when it is gone (no managed account, connection deleted). */
export async function openQpuAccount(
  env: QpuAccountEnv,
  tenantId: string,
  ref: QpuAccountRef,
): Promise<ProviderAccount | null> {
  if (ref.kind === 'managed') return managedAccount(env)
  const database = openDatabase(env, { max: 1 })
  try {
    // Only live jobs reach hardware (test mode never does): the connection is a live one.
    const scope = { tenantId, mode: 'live' } as const
    return await openConnectionAccount(database.db, env.PROVIDER_CREDENTIAL_KEYS, scope, ref.connection_id)
  } finally {
    await database.close()
  }
}
