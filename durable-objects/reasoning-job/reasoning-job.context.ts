/**
 * What a ReasoningJob object needs from the env of the worker that hosts it (the reasoning worker,
 * whose own env extends this one). Every variable is listed in README's configuration table.
 */
import type { DatabaseEnv } from '../../shared/db/client'
import type { RateLimiterNamespace } from '../../shared/metering'
import type { PlanCatalogEnv } from '../../shared/plans'
import type { AuditLogNamespace } from '../audit-log/audit-client'
import type { RunQueueNamespace } from '../reasoning-run-queue/run-queue.protocol'
import type { DocumentSigner } from './inference-receipt'
import type { ReasoningSettingsEnv } from './job-settings'
import type { QpuSettingsEnv } from './qpu-settings'
import type { QpuAccountEnv } from './quantum/providers/provider-accounts'
import type { QpuQueueMessage } from './quantum/qpu-queue'

export type ReasoningJobEnv = ReasoningSettingsEnv &
  QpuSettingsEnv &
  QpuAccountEnv &
  PlanCatalogEnv &
  DatabaseEnv & {
    /** The QPU queue (producer): a real-hardware job sends its attempt's messages here. */
    readonly QPU_QUEUE?: Queue<QpuQueueMessage>
    /** The workspaces' run queues: a job waits there for a run slot, and gives it back when it ends. */
    readonly REASONING_RUN_QUEUE: RunQueueNamespace
    /** The RateLimiter objects: a job's quote is reserved at creation and settled when it ends. */
    readonly RATE_LIMITER: RateLimiterNamespace
    /** The auth worker (service binding): signs inference receipts with the token keys. */
    readonly AUTH?: DocumentSigner
    /** The tenants' audit logs (svc-platform): inference receipts are recorded there. */
    readonly AUDIT_LOG?: AuditLogNamespace
    /** KEKs of jobs' content at rest, JSON `[{"kid", "key"}]` (content-crypto.ts); unset: 503. */
    readonly CONTENT_KEKS?: string
    /** Model providers (docs/providers.md); unset: live-key jobs cannot run. */
    readonly MODEL_PROVIDERS?: string
    /** Secrets named by MODEL_PROVIDERS (`apiKeySecret`) and other bindings it names. */
    readonly [name: string]: unknown
  }
