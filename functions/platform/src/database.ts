import type { Context } from 'hono'
import { type AuditEvent, appendAuditEvent } from '../../../shared/audit/audit-client'
import type { Drizzle } from '../../../shared/db/client'
import { AppError } from '../../../shared/http/errors'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import type { Identity } from '../../../shared/worker/request-context'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import type { PlatformEnv } from './platform.context'

/** Runs `work` with a request-scoped database (see shared/worker/request-database.ts). */
export function withDatabase<T>(
  c: Context<FamilyEnv<PlatformEnv>>,
  work: (db: Drizzle) => Promise<T>,
): Promise<T> {
  return withRequestDatabase(c, 'platform', work)
}

/** The caller's identity, refused with 403 `insufficient_role` unless it is an owner or admin. */
export function requireAdmin(c: Context<FamilyEnv<PlatformEnv>>, action: string): Identity {
  const identity = identityOf(c)
  if (identity.role !== 'owner' && identity.role !== 'admin') {
    throw new AppError(
      403,
      'insufficient_role',
      `Only workspace owners and admins may ${action}; this credential has role "${identity.role}".`,
    )
  }
  return identity
}

/** Who made a change, for `updated_by` / `created_by`: `key:<id>` or the token's subject. */
export function actorOf(identity: Identity): string {
  return identity.principal.kind === 'api_key'
    ? `key:${identity.principal.keyId}`
    : identity.principal.subject
}

/**
 * Appends an event to the caller's tenant log and waits until it is durable: handlers call it after
 * their change and before they answer, so no change is acknowledged unlogged (log unreachable: 503).
 */
export function recordAuditEvent(c: Context<FamilyEnv<PlatformEnv>>, event: AuditEvent) {
  const identity = c.get('request').identity
  if (!identity) throw new AppError(401, 'missing_credential', 'This endpoint requires a bearer credential.')
  return appendAuditEvent(c.env.AUDIT_LOG, identity.tenantId, event)
}
