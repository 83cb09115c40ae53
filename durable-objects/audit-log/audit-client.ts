/**
 * The one client every worker records security events with (see docs/audit-log.md):
 *
 *   const receipt = await appendAuditEvent(env.AUDIT_LOG, identity.tenantId, {
 *     kind: 'api_key.changed', action: 'revoked', key_id, actor, request_id,
 *   })
 *   // receipt = { log: '<origin>', index: 41, leafHash: Uint8Array(32) }
 *
 * `tenantId` null appends to the platform's own log (signing-key changes and other events that
 * belong to no tenant). The event is validated against AuditEventSchema (audit-events.ts) here and
 * again in the log; an invalid event is a programming error (AppError 500), never silently dropped.
 *
 * The promise resolves once the entry is durable in the tenant's AuditLog object, so await it
 * before you acknowledge the action it records. Each call carries an idempotency key (one per call,
 * or yours for an event that must appear once however often it is sent): a retry after a lost answer
 * does not append twice. Unreachable after four tries (about 0.65 s): AppError 503 `audit_log_unavailable` with
 * Retry-After, which the caller lets reach its client rather than acting unlogged.
 *
 * Binding (wrangler.toml of a worker other than svc-platform):
 *   [[durable_objects.bindings]]
 *   name = "AUDIT_LOG"
 *   class_name = "AuditLog"
 *   script_name = "svc-platform"
 */

import { type AuditEvent, AuditEventSchema } from '../../shared/audit/audit-events'
import { AppError } from '../../shared/http/errors'
import { log } from '../../shared/worker/log'
import type { AuditLog, AuditReceipt } from './audit-log.do'

export type { AuditEvent } from '../../shared/audit/audit-events'
export type { AuditReceipt }

export type AuditLogNamespace = DurableObjectNamespace<AuditLog>

/** The object name of a tenant's log, or of the platform's log (tenantId null). */
export function auditLogName(tenantId: string | null): string {
  return tenantId ? `tenant:${tenantId}` : 'platform'
}

/** The AuditLog object of a tenant (or of the platform). */
export function auditLogOf(
  namespace: AuditLogNamespace,
  tenantId: string | null,
): DurableObjectStub<AuditLog> {
  return namespace.get(namespace.idFromName(auditLogName(tenantId)))
}

/** Tries per append, with backoff (50, 150, 450 ms): a restarting or briefly overloaded object recovers within it. */
const ATTEMPTS = 4
const RETRY_DELAY_MS = 50

function unavailable(detail: string): AppError {
  return new AppError(
    503,
    'audit_log_unavailable',
    'This action must be recorded in the audit log first, and the audit log is unavailable right now; nothing was done. Retry shortly.',
    { internalMessage: detail, headers: { 'retry-after': '2' } },
  )
}

/** Appends `event` to the tenant's (or the platform's) log; resolves once it is durable. */
export async function appendAuditEvent(
  namespace: AuditLogNamespace | undefined,
  tenantId: string | null,
  event: AuditEvent,
  options: { idempotencyKey?: string } = {},
): Promise<AuditReceipt> {
  const checked = AuditEventSchema.safeParse(event)
  if (!checked.success) {
    throw new AppError(
      500,
      'invalid_audit_event',
      'An internal error occurred while recording this action.',
      {
        internalMessage: `audit event ${event.kind}: ${checked.error.message}`,
      },
    )
  }
  if (!namespace) throw unavailable('AUDIT_LOG binding missing')
  const idempotencyKey = options.idempotencyKey ?? crypto.randomUUID()
  let lastError = ''
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      const answer = await auditLogOf(namespace, tenantId).append({
        tenantId,
        event: checked.data,
        idempotencyKey,
      })
      if (answer.ok) return answer.receipt
      if (answer.error.status < 500) {
        throw new AppError(
          500,
          answer.error.code,
          'An internal error occurred while recording this action.',
          {
            internalMessage: answer.error.message,
          },
        )
      }
      lastError = `${answer.error.code}: ${answer.error.message}`
    } catch (err) {
      if (err instanceof AppError) throw err
      lastError = String(err)
    }
    if (attempt < ATTEMPTS) await new Promise((r) => setTimeout(r, RETRY_DELAY_MS * 3 ** (attempt - 1)))
  }
  log('error', 'audit_append_failed', { kind: event.kind, detail: lastError })
  throw unavailable(lastError)
}
