import type { Context } from 'hono'
import { type AuditEvent, appendAuditEvent } from '../../../durable-objects/audit-log/audit-client'
import { type FamilyEnv, identityOf } from '../../../shared/worker/family-app'
import type { PlatformEnv } from './platform.context'

/**
 * Appends an event to the caller's tenant log and waits until it is durable: handlers call it after
 * their change and before they answer, so no change is acknowledged unlogged (log unreachable: 503).
 */
export function recordAuditEvent(c: Context<FamilyEnv<PlatformEnv>>, event: AuditEvent) {
  return appendAuditEvent(c.env.AUDIT_LOG, identityOf(c).tenantId, event)
}
