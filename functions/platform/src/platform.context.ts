import type { AgentRunNamespace } from '../../../durable-objects/agent-run/run-client'
import type { AuditLogNamespace } from '../../../durable-objects/audit-log/audit-client'
import type { AuditLogEnv } from '../../../durable-objects/audit-log/audit-log.do'
import type { DatabaseEnv } from '../../../shared/db/client'
import type { RateLimiterNamespace } from '../../../shared/metering/metering-client'
import type AuthWorker from '../../auth/src/index'

/**
 * Bindings of the platform worker (functions/platform/wrangler.toml). Secrets: DATABASE_URL,
 * LOG_SIGNING_KEYS. The AuditLog object's own settings (AUDIT_LOG_ORIGIN, AUDIT_CHECKPOINT_INTERVAL_MS,
 * AUDIT_SELF_TEST_INTERVAL_MS) are read by the object (durable-objects/audit-log/audit-log.do.ts).
 */
export interface PlatformEnv extends DatabaseEnv, AuditLogEnv {
  /** The AuditLog objects this worker hosts (optional in the type: a missing binding answers 503). */
  AUDIT_LOG?: AuditLogNamespace
  /** The AgentRun objects the code worker hosts: an admin's cancel (missing: 503). */
  AGENT_RUN?: AgentRunNamespace
  /**
   * The RateLimiter objects svc-metering hosts: a key's usage statement reads the rows they hold
   * that are not in Postgres yet (missing: 503).
   */
  RATE_LIMITER?: RateLimiterNamespace
  /** The auth family: `sign(data, alg)` signs attestations and usage statements with the token keys. */
  AUTH?: Service<AuthWorker>
  /** JSON `[{worker, sha256, bytes}]`: the bundles this deployment runs (functions/platform/src/deployed-bundles.ts). */
  DEPLOYED_BUNDLES?: string
  /** The deployment's plan catalog (shared/plans/plan-catalog.ts), shown by the billing and plans API. */
  PLAN_CATALOG?: string
}
