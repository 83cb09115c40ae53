import type { Context } from 'hono'
import { type AuditEvent, appendAuditEvent } from '../../../durable-objects/audit-log/audit-client'
import { AppError } from '../../../shared/http/errors'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import type { Identity } from '../../../shared/worker/request-context'
import type { PlatformEnv } from './platform.context'

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
  return appendAuditEvent(c.env.AUDIT_LOG, identityOf(c).tenantId, event)
}
