/**
 * Crypto-policy violations on the tenant's audit log: the gateway (token algorithm, declared
 * algorithms) and the auth worker (token issuance) append each decision — logged in audit mode,
 * blocked in enforce mode — and wait for it to be durable before the request goes on or the 403
 * leaves. Postgres keeps its own copy for the violations listing (policy-store.ts).
 */
import { failedRules } from '../../shared/crypto-policy/enforcement'
import type { ViolationRecord } from '../../shared/crypto-policy/policy-store'
import { type AuditLogNamespace, type AuditReceipt, appendAuditEvent } from './audit-client'

export function appendPolicyDecisions(
  namespace: AuditLogNamespace | undefined,
  records: readonly ViolationRecord[],
): Promise<AuditReceipt[]> {
  return Promise.all(
    records.map((r) =>
      appendAuditEvent(namespace, r.tenantId, {
        kind: 'crypto_policy.decision',
        outcome: r.check.enforced ? 'blocked' : 'logged',
        algorithm: r.check.algorithm,
        requested: r.check.requested.slice(0, 64),
        context: r.check.context,
        mode: r.check.mode,
        rules: failedRules(r.check).map((f) => ({ rule: f.rule, detail: f.detail.slice(0, 500) })),
        principal: r.principal,
        request_id: r.requestId,
        method: r.method,
        path: r.path.slice(0, 500),
      }),
    ),
  )
}
