/**
 * The API's answers as the console reads them: the inferred types of the families' own zod schemas
 * (the ones their routes validate with and the OpenAPI document shows). The console is a client of
 * the API and imports only these types, erased at build time, never a family's code, and never
 * declares a copy of a shape a family already exports.
 */
import type { z } from '@hono/zod-openapi'
import type { AuditEvent } from '../../../shared/audit/audit-events'
import type {
  DocumentDetailSchema,
  DocumentListSchema,
  DocumentRetrievalResultSchema,
  DocumentUploadResultSchema,
} from '../../knowledge/src/knowledge.schemas'
import type {
  AgentRunDetailSchema,
  AgentRunListSchema,
  AgentRunSummarySchema,
} from '../../platform/src/agent-runs.schemas'
import type {
  ApiKeyListSchema,
  ApiKeyRotatedSchema,
  ApiKeySchema,
  ApiKeyWithSecretSchema,
} from '../../platform/src/api-keys.schemas'
import type {
  CheckpointSchema,
  DecisionListSchema,
  EntryListSchema,
} from '../../platform/src/audit-log.schemas'
import type {
  AlgorithmListSchema,
  PolicyCheckSchema,
  PolicyViewSchema,
  ServiceAccountListSchema,
  ServiceAccountSchema,
  ServiceAccountWithSecretSchema,
} from '../../platform/src/platform.schemas'
import type {
  BillingSchema,
  PlanListSchema,
  UsageRequestListSchema,
  UsageSchema,
  WorkspaceSchema,
} from '../../platform/src/workspace.schemas'
import type {
  ProviderConnectionListSchema,
  ProviderConnectionSchema,
  ProviderConnectionTestedSchema,
} from '../../reasoning/src/provider-connections.schemas'
import type {
  IngestionListSchema,
  ObservabilityTokenListSchema,
  ObservabilityTokenWithSecretSchema,
  RecentTelemetrySchema,
  TelemetryStatusSchema,
} from '../../telemetry/src/telemetry.schemas'

export type Workspace = z.infer<typeof WorkspaceSchema>
export type Billing = z.infer<typeof BillingSchema>
export type PlanList = z.infer<typeof PlanListSchema>
export type Plan = PlanList['data'][number]
export type UsageReport = z.infer<typeof UsageSchema>
export type UsageRequests = z.infer<typeof UsageRequestListSchema>
export type UsageRequest = UsageRequests['data'][number]

export type ApiKey = z.infer<typeof ApiKeySchema>
export type ApiKeyList = z.infer<typeof ApiKeyListSchema>
export type ApiKeyWithSecret = z.infer<typeof ApiKeyWithSecretSchema>
export type ApiKeyRotated = z.infer<typeof ApiKeyRotatedSchema>

export type ServiceAccount = z.infer<typeof ServiceAccountSchema>
export type ServiceAccountList = z.infer<typeof ServiceAccountListSchema>
export type ServiceAccountWithSecret = z.infer<typeof ServiceAccountWithSecretSchema>

export type PolicyView = z.infer<typeof PolicyViewSchema>
export type Policy = PolicyView['policy']
export type PolicyCheck = z.infer<typeof PolicyCheckSchema>
export type AlgorithmList = z.infer<typeof AlgorithmListSchema>
export type DecisionList = z.infer<typeof DecisionListSchema>
/** A policy decision as the log recorded it (the list's untyped `decision`, typed by its event kind). */
export type DecisionEvent = Partial<Omit<Extract<AuditEvent, { kind: 'crypto_policy.decision' }>, 'kind'>>

export type Checkpoint = z.infer<typeof CheckpointSchema>
export type EntryList = z.infer<typeof EntryListSchema>

export type DocumentList = z.infer<typeof DocumentListSchema>
export type DocumentDetail = z.infer<typeof DocumentDetailSchema>
export type DocumentUploadResult = z.infer<typeof DocumentUploadResultSchema>
export type RetrievalResult = z.infer<typeof DocumentRetrievalResultSchema>

export type ProviderConnection = z.infer<typeof ProviderConnectionSchema>
export type ProviderConnectionList = z.infer<typeof ProviderConnectionListSchema>
export type ProviderConnectionTested = z.infer<typeof ProviderConnectionTestedSchema>

export type AgentRunSummary = z.infer<typeof AgentRunSummarySchema>
export type AgentRunList = z.infer<typeof AgentRunListSchema>
export type AgentRunDetail = z.infer<typeof AgentRunDetailSchema>

export type TelemetryStatus = z.infer<typeof TelemetryStatusSchema>
export type IngestionList = z.infer<typeof IngestionListSchema>
export type RecentTelemetry = z.infer<typeof RecentTelemetrySchema>
export type ObservabilityTokenList = z.infer<typeof ObservabilityTokenListSchema>
export type ObservabilityTokenWithSecret = z.infer<typeof ObservabilityTokenWithSecretSchema>
