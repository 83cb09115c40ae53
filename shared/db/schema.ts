/**
 * The relational system of record (Postgres: Neon in production, PGlite or a local PostgreSQL
 * server in development and tests). Every tenant-owned table carries `tenant_id` and every query
 * on it filters by the authenticated tenant. Shared column helpers: columns.ts.
 */
import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  real,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'
import { SPEND_PERIODS } from '../metering/spend-period'
import { API_KEY_MODES, createdAt, MEMBER_ROLES, modeCheck, modeColumn, tsvector } from './columns'

export { API_KEY_MODES, type ApiKeyMode, MEMBER_ROLES, type MemberRole } from './columns'

/** Reference data: the plan catalog's ids and display names (limits live in versioned config). */
export const plans = pgTable('plans', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  catalogVersion: text('catalog_version').notNull(),
  createdAt: createdAt(),
})

/** A tenant is a customer workspace. */
export const tenants = pgTable('tenants', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull(),
  planId: text('plan_id')
    .notNull()
    .references(() => plans.id),
  createdAt: createdAt(),
})

/** The owning tenant of a row; deleting a tenant deletes what it owns. */
const tenantRef = () =>
  uuid('tenant_id')
    .notNull()
    .references(() => tenants.id, { onDelete: 'cascade' })

export const users = pgTable(
  'users',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    email: text('email').notNull(),
    displayName: text('display_name'),
    passwordHash: text('password_hash'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('users_email_lower_idx').on(sql`lower(${t.email})`)],
)

export const members = pgTable(
  'members',
  {
    tenantId: tenantRef(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: MEMBER_ROLES }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.userId] }), index('members_user_idx').on(t.userId)],
)

/**
 * API keys: the secret is never stored. `keyHash` is the hex SHA-256 of the whole key
 * (keys carry 256 bits of randomness, so a fast hash is the right tool); `suffix` is the
 * last four characters, for display. `createdByActor` names whoever created the key
 * (`user:<uuid>`, `key:<uuid>`, `sa:<uuid>`; a member sees the keys it created). A rotation makes
 * a new row and points the old one at it (`replacedBy`), whose `expiresAt` becomes the end of
 * the grace period.
 */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    name: text('name').notNull(),
    mode: text('mode', { enum: API_KEY_MODES }).notNull(),
    keyHash: text('key_hash').notNull(),
    suffix: text('suffix').notNull(),
    scopes: text('scopes').array().notNull().default(sql`'{}'::text[]`),
    role: text('role', { enum: MEMBER_ROLES }).notNull().default('member'),
    createdBy: uuid('created_by').references(() => users.id, { onDelete: 'set null' }),
    createdByActor: text('created_by_actor'),
    createdAt: createdAt(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    replacedBy: uuid('replaced_by'),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    /** Model aliases the key may call; null = whatever the plan allows (shared/auth/key-limits.ts). */
    allowedModels: text('allowed_models').array(),
    /** The key's spend limit at list price in USD per `spend_period`; null = none. */
    spendLimitUsd: numeric('spend_limit_usd', { precision: 16, scale: 6 }),
    spendPeriod: text('spend_period', { enum: SPEND_PERIODS }),
    /** The key's own per-minute limits, within the plan's; null = the plan's. */
    requestsPerMinute: integer('requests_per_minute'),
    tokensPerMinute: integer('tokens_per_minute'),
  },
  (t) => [
    uniqueIndex('api_keys_hash_idx').on(t.keyHash),
    index('api_keys_tenant_idx').on(t.tenantId),
    check(
      'api_keys_spend_limit_check',
      sql`(${t.spendLimitUsd} is null) = (${t.spendPeriod} is null) and (${t.spendLimitUsd} is null or ${t.spendLimitUsd} > 0)`,
    ),
  ],
)

/** Free-form feedback bodies (spec: any JSON object). */
export const feedback = pgTable(
  'feedback',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    mode: modeColumn(),
    apiKeyId: uuid('api_key_id'),
    subject: text('subject'),
    body: jsonb('body').notNull(),
    requestId: text('request_id').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('feedback_tenant_idx').on(t.tenantId, t.mode, t.createdAt), modeCheck('feedback', t.mode)],
)

/** Personal memory records: owned by a tenant and a principal (key or user) inside it. */
export const memories = pgTable(
  'memories',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    mode: modeColumn(),
    ownerId: text('owner_id').notNull(),
    content: text('content').notNull(),
    body: jsonb('body').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    createdAt: createdAt(),
    /** Full-text index entry of `content` (the retrieval engine's lexical signal). */
    tsv: tsvector('tsv').notNull().generatedAlwaysAs(sql`to_tsvector('english', "content")`),
  },
  (t) => [
    index('memories_owner_idx').on(t.tenantId, t.mode, t.ownerId, t.createdAt),
    index('memories_tsv_idx').using('gin', t.tsv),
    modeCheck('memories', t.mode),
  ],
)

// ---------------------------------------------------------------------------------------------
// Tenant documents with retrieval (functions/knowledge/src/documents, docs/retrieval.md).

/**
 * One document per tenant, mode and `source`: uploading the same source again replaces it in one
 * transaction. `content` is kept so a document can be re-chunked and re-embedded.
 */
export const documents = pgTable(
  'documents',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    mode: modeColumn(),
    source: text('source').notNull(),
    content: text('content').notNull(),
    /** Hex SHA-256 of the UTF-8 content: an identical re-upload changes nothing. */
    contentSha256: text('content_sha256').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    characters: integer('characters').notNull(),
    chunkCount: integer('chunk_count').notNull(),
    /** Embedding space of its chunks (`provider:model:dimensions`), null when full-text only. */
    embeddingSpace: text('embedding_space'),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('documents_tenant_source_idx').on(t.tenantId, t.mode, t.source),
    index('documents_tenant_created_idx').on(t.tenantId, t.mode, t.createdAt, t.id),
    modeCheck('documents', t.mode),
  ],
)

/**
 * Chunks of a document with their offsets in its content. `tsv` is the full-text index entry
 * (english configuration); `embedding` is unit-length (cosine = dot product) as `real[]`, which
 * every Postgres stores. Where pgvector is installed, migration 0004 adds HNSW indexes on
 * `embedding::vector(n)` for common dimensions (partial on `embedding_dimensions = n`).
 */
export const documentChunks = pgTable(
  'document_chunks',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    documentId: uuid('document_id')
      .notNull()
      .references(() => documents.id, { onDelete: 'cascade' }),
    tenantId: tenantRef(),
    /** The document's mode: retrieval and embedding reuse stay inside one mode. */
    mode: modeColumn(),
    ordinal: integer('ordinal').notNull(),
    startOffset: integer('start_offset').notNull(),
    endOffset: integer('end_offset').notNull(),
    text: text('text').notNull(),
    textSha256: text('text_sha256').notNull(),
    tsv: tsvector('tsv').notNull().generatedAlwaysAs(sql`to_tsvector('english', "text")`),
    embedding: real('embedding').array(),
    embeddingSpace: text('embedding_space'),
    embeddingDimensions: integer('embedding_dimensions'),
  },
  (t) => [
    index('document_chunks_document_idx').on(t.documentId, t.ordinal),
    index('document_chunks_tenant_space_idx').on(t.tenantId, t.mode, t.embeddingSpace, t.textSha256),
    index('document_chunks_tsv_idx').using('gin', t.tsv),
    modeCheck('document_chunks', t.mode),
  ],
)

// ---------------------------------------------------------------------------------------------
// Identity: service accounts, users' refresh-token families, login throttling.

/** Who an access token is for; the one list (tokens, service accounts, audit events, the request identity). */
export const AUDIENCES = ['platform', 'internal-service', 'external-api'] as const
export type Audience = (typeof AUDIENCES)[number]

/** Service accounts exchange their secret for an access token; the secret is stored as a slow hash. */
export const serviceAccounts = pgTable(
  'service_accounts',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    name: text('name').notNull(),
    secretHash: text('secret_hash').notNull(),
    audiences: text('audiences', { enum: AUDIENCES }).array().notNull(),
    scopes: text('scopes').array().notNull().default(sql`'{}'::text[]`),
    createdBy: text('created_by'),
    createdAt: createdAt(),
    rotatedAt: timestamp('rotated_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [index('service_accounts_tenant_idx').on(t.tenantId)],
)

/** One family per login; every refresh rotates within it. Reuse of a spent token revokes the family. */
export const refreshTokenFamilies = pgTable(
  'refresh_token_families',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    revokedReason: text('revoked_reason'),
    /**
     * Set when the family was started by the OAuth authorization server (authorization code grant):
     * the client it belongs to, the resource its tokens are bound to (RFC 8707) and the scope
     * granted. Such a family refreshes only at /oauth/token, for that client; a login's family
     * (all null) only at /auth/token/refresh.
     */
    oauthClientId: text('oauth_client_id'),
    resource: text('resource'),
    scope: text('scope'),
  },
  (t) => [index('refresh_families_user_idx').on(t.userId)],
)

export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    familyId: uuid('family_id')
      .notNull()
      .references(() => refreshTokenFamilies.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    parentId: uuid('parent_id'),
    issuedAt: timestamp('issued_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('refresh_tokens_hash_idx').on(t.tokenHash),
    index('refresh_tokens_family_idx').on(t.familyId),
  ],
)

// ---------------------------------------------------------------------------------------------
// OAuth 2.1 authorization server for MCP clients: registered clients and authorization codes.

/**
 * Clients registered by RFC 7591 dynamic registration. Public clients only (PKCE, no secret):
 * MCP clients are installed apps and agents that cannot keep one. Not tenant-owned: a client is
 * the app; which workspace it acts in is decided at each authorization by the person who consents.
 */
export const oauthClients = pgTable(
  'oauth_clients',
  {
    id: text('id').primaryKey(),
    clientName: text('client_name'),
    redirectUris: text('redirect_uris').array().notNull(),
    /** The registration request as accepted (RFC 7591 §3.2.1 echoes it). */
    metadata: jsonb('metadata').notNull(),
    createdAt: createdAt(),
    /**
     * When the client first exchanged an authorization code for tokens. A client that has not
     * within OAUTH_UNUSED_CLIENT_TTL_SECONDS of registering is expired (functions/auth/src/oauth/clients.ts).
     */
    authorizedAt: timestamp('authorized_at', { withTimezone: true }),
  },
  (t) => [index('oauth_clients_unauthorized_idx').on(t.createdAt).where(sql`${t.authorizedAt} is null`)],
)

/**
 * Authorization codes (stored as SHA-256): single use, short-lived, bound to the client, the
 * redirect URI, the PKCE challenge (S256) and the resource. `refreshFamilyId` is the family the
 * code was exchanged for, revoked if the code is presented again (RFC 6749 §4.1.2).
 */
export const oauthAuthorizationCodes = pgTable(
  'oauth_authorization_codes',
  {
    codeHash: text('code_hash').primaryKey(),
    clientId: text('client_id')
      .notNull()
      .references(() => oauthClients.id, { onDelete: 'cascade' }),
    tenantId: tenantRef(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    redirectUri: text('redirect_uri').notNull(),
    codeChallenge: text('code_challenge').notNull(),
    resource: text('resource').notNull(),
    scope: text('scope').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    refreshFamilyId: uuid('refresh_family_id'),
    createdAt: createdAt(),
  },
  (t) => [index('oauth_codes_client_idx').on(t.clientId)],
)

/**
 * Console sign-ins (functions/console/): the browser holds only an opaque secret in an
 * HttpOnly cookie; the row holds its SHA-256 and the session's access and refresh tokens sealed
 * with AES-GCM under a key derived from that secret, so the database alone opens no session.
 */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    secretHash: text('secret_hash').notNull(),
    tenantId: tenantRef(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    sealedTokens: text('sealed_tokens').notNull(),
    accessExpiresAt: timestamp('access_expires_at', { withTimezone: true }).notNull(),
    createdAt: createdAt(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    endedAt: timestamp('ended_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('console_sessions_secret_idx').on(t.secretHash),
    index('console_sessions_user_idx').on(t.userId),
  ],
)

/** Failed-login counters per account (`account:<email>`) and per client address (`address:<ip>`). */
export const loginThrottle = pgTable('login_throttle', {
  key: text('key').primaryKey(),
  failures: integer('failures').notNull().default(0),
  windowStartedAt: timestamp('window_started_at', { withTimezone: true }).notNull().defaultNow(),
  lockedUntil: timestamp('locked_until', { withTimezone: true }),
})

// ---------------------------------------------------------------------------------------------
// Crypto policy: one policy per tenant (absent row = the Default preset) and recorded violations.

export const cryptoPolicies = pgTable('crypto_policies', {
  tenantId: uuid('tenant_id')
    .primaryKey()
    .references(() => tenants.id, { onDelete: 'cascade' }),
  preset: text('preset'),
  policy: jsonb('policy').notNull(),
  updatedBy: text('updated_by'),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
})

export const cryptoPolicyViolations = pgTable(
  'crypto_policy_violations',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    algorithm: text('algorithm').notNull(),
    context: text('context').notNull(),
    mode: text('mode', { enum: ['audit', 'enforce'] }).notNull(),
    blocked: boolean('blocked').notNull(),
    rules: jsonb('rules').notNull(),
    principal: text('principal').notNull(),
    requestId: text('request_id').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('crypto_violations_tenant_idx').on(t.tenantId, t.createdAt)],
)

// ---------------------------------------------------------------------------------------------
// Metering: every metered request once (idempotent by tenant + request id), and the tenant's
// balances for the current allowance period.

export const usageLedger = pgTable(
  'usage_ledger',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    requestId: text('request_id').notNull(),
    principal: text('principal').notNull(),
    mode: text('mode', { enum: API_KEY_MODES }).notNull(),
    endpoint: text('endpoint').notNull(),
    model: text('model').notNull(),
    provider: text('provider').notNull(),
    promptTokens: integer('prompt_tokens').notNull(),
    completionTokens: integer('completion_tokens').notNull(),
    cachedTokens: integer('cached_tokens').notNull().default(0),
    reasoningTokens: integer('reasoning_tokens').notNull().default(0),
    /**
     * `tokens` for a model; a paid tool's own unit (`requests` for web search, `seconds` of audio,
     * `bytes` of OTLP ingestion). A plain text column: a new unit needs no migration.
     */
    unit: text('unit', { enum: ['tokens', 'requests', 'seconds', 'bytes'] })
      .notNull()
      .default('tokens'),
    /** What was used in `unit` (for a model: prompt + completion tokens). */
    quantity: bigint('quantity', { mode: 'number' }).notNull().default(0),
    creditsCents: numeric('credits_cents', { precision: 14, scale: 4 }).notNull(),
    estimated: boolean('estimated').notNull().default(false),
    /**
     * The HTTP status the client received (docs/plans.md, "The request log"); null for a request
     * billed from its last checkpoint (it never ended) and for rows older than the column.
     */
    status: integer('status'),
    /** Admission to settle (a stream's last byte) in ms, measured by the worker that served it; null as status. */
    latencyMs: integer('latency_ms'),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('usage_ledger_request_idx').on(t.tenantId, t.requestId),
    index('usage_ledger_tenant_time_idx').on(t.tenantId, t.createdAt),
    // A key's spend in its period (its spend limit, its usage statement).
    index('usage_ledger_principal_time_idx').on(t.tenantId, t.principal, t.createdAt),
  ],
)

export const tenantBalances = pgTable('tenant_balances', {
  tenantId: uuid('tenant_id')
    .primaryKey()
    .references(() => tenants.id, { onDelete: 'cascade' }),
  periodStart: timestamp('period_start', { withTimezone: true }).notNull(),
  tokensUsed: bigint('tokens_used', { mode: 'number' }).notNull().default(0),
  creditsBalanceCents: numeric('credits_balance_cents', { precision: 14, scale: 4 }).notNull().default('0'),
  overageCents: numeric('overage_cents', { precision: 14, scale: 4 }).notNull().default('0'),
  usageCreditsEnabled: boolean('usage_credits_enabled').notNull().default(false),
  spendCapCents: integer('spend_cap_cents'),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
})

// ---------------------------------------------------------------------------------------------
// Telemetry ingestion (functions/telemetry): one row per OTLP export the receiver answered, and
// running totals per tenant and signal. Rows past the newest OTLP_RESULTS_RETAINED per tenant are
// pruned; the totals are kept.

export const OTLP_SIGNALS = ['traces', 'metrics', 'logs'] as const
export const INGESTION_OUTCOMES = ['forwarded', 'partially_rejected', 'refused', 'collector_failed'] as const

export const telemetryIngestions = pgTable(
  'telemetry_ingestions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    requestId: text('request_id').notNull(),
    signal: text('signal', { enum: OTLP_SIGNALS }).notNull(),
    /** protobuf, json or grpc, and the Content-Encoding it came in. */
    encoding: text('encoding').notNull(),
    contentEncoding: text('content_encoding').notNull(),
    /** Spans, data points or log records in the export (0 when it could not be decoded). */
    items: integer('items').notNull(),
    /** Items the collector reported rejected (partial success). */
    rejectedItems: integer('rejected_items').notNull().default(0),
    receivedBytes: integer('received_bytes').notNull(),
    decodedBytes: integer('decoded_bytes').notNull(),
    outcome: text('outcome', { enum: INGESTION_OUTCOMES }).notNull(),
    /** What the receiver answered (HTTP status) and the error code when it refused. */
    status: integer('status').notNull(),
    errorCode: text('error_code'),
    /** The collector's HTTP status; null when nothing was forwarded or it could not be reached. */
    collectorStatus: integer('collector_status'),
    /** Who sent it: `token:<id>` (observability token) or the access token's subject. */
    principal: text('principal').notNull(),
    durationMs: integer('duration_ms').notNull(),
    /**
     * What the workspace sees of an export the collector took: its first spans, metrics or log
     * records, at most 4 KiB of JSON (functions/telemetry/src/otlp/export-sample.ts). Null for
     * exports not forwarded.
     */
    sample: jsonb('sample'),
    createdAt: createdAt(),
  },
  (t) => [index('telemetry_ingestions_tenant_time_idx').on(t.tenantId, t.createdAt)],
)

export const telemetryTotals = pgTable(
  'telemetry_totals',
  {
    tenantId: tenantRef(),
    signal: text('signal', { enum: OTLP_SIGNALS }).notNull(),
    requests: bigint('requests', { mode: 'number' }).notNull().default(0),
    forwardedRequests: bigint('forwarded_requests', { mode: 'number' }).notNull().default(0),
    failedRequests: bigint('failed_requests', { mode: 'number' }).notNull().default(0),
    items: bigint('items', { mode: 'number' }).notNull().default(0),
    rejectedItems: bigint('rejected_items', { mode: 'number' }).notNull().default(0),
    receivedBytes: bigint('received_bytes', { mode: 'number' }).notNull().default(0),
    decodedBytes: bigint('decoded_bytes', { mode: 'number' }).notNull().default(0),
    lastIngestedAt: timestamp('last_ingested_at', { withTimezone: true }),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.signal] })],
)

/**
 * Per-workspace observability tokens (`svc_ot_…`): accepted only on the OTLP ingestion routes,
 * stored as the SHA-256 of the token (high-entropy secrets need no slow hash), shown once.
 */
export const observabilityTokens = pgTable(
  'observability_tokens',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    name: text('name').notNull(),
    tokenHash: text('token_hash').notNull(),
    suffix: text('suffix').notNull(),
    createdBy: text('created_by'),
    createdAt: createdAt(),
    rotatedAt: timestamp('rotated_at', { withTimezone: true }),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('observability_tokens_hash_idx').on(t.tokenHash),
    index('observability_tokens_tenant_idx').on(t.tenantId),
  ],
)

// ---------------------------------------------------------------------------------------------
// QPU provider connections (byopa_managed): a tenant's own account at a quantum provider, used
// only by that tenant's reasoning jobs (functions/reasoning/src/provider-connections.ts).

/**
 * The credential is stored only encrypted (AES-256-GCM under PROVIDER_CREDENTIAL_KEYS, bound to
 * the tenant and the connection id as associated data: `v1.<kid>.<iv>.<ciphertext>`, base64url)
 * and is never returned by the API. `base_url` is one of the deployment's allowed provider URLs.
 */
export const qpuProviderConnections = pgTable(
  'qpu_provider_connections',
  {
    id: uuid('id').primaryKey(),
    tenantId: tenantRef(),
    mode: modeColumn(),
    name: text('name').notNull(),
    kind: text('kind').notNull(),
    baseUrl: text('base_url').notNull(),
    target: text('target').notNull(),
    credential: text('credential').notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: createdAt(),
    lastTestedAt: timestamp('last_tested_at', { withTimezone: true }),
    lastTestOk: boolean('last_test_ok'),
    lastTestErrorCode: text('last_test_error_code'),
    lastTestError: text('last_test_error'),
  },
  (t) => [
    uniqueIndex('qpu_provider_connections_name_idx').on(t.tenantId, t.mode, t.name),
    index('qpu_provider_connections_tenant_idx').on(t.tenantId, t.mode, t.createdAt),
    modeCheck('qpu_provider_connections', t.mode),
  ],
)

// ---------------------------------------------------------------------------------------------
// Reasoning jobs: each job lives in its ReasoningJob Durable Object (the state machine and the
// encrypted content); Postgres holds what spans jobs: the idempotency keys that decide which
// request creates a job, the job index per tenant and mode the list pages and the queue limit read (a
// projection the object writes after every change, content never included), and the tenants'
// wrapped content keys.

/**
 * One row per (tenant, mode, Idempotency-Key): the request it was first used with (hash of the
 * canonical body) and the job that request created. Written under a transaction-scoped advisory
 * lock on the key, so concurrent requests with one key see one row. Kept 24 hours. Queried with SQL
 * text in functions/reasoning/src/idempotency.ts: nothing imports this table, which is declared for
 * drizzle-kit (migrations are generated from this file), not dead.
 */
export const reasoningIdempotencyKeys = pgTable(
  'reasoning_idempotency_keys',
  {
    tenantId: tenantRef(),
    mode: modeColumn(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    jobId: uuid('job_id').notNull(),
    /** Status of the first response (202): replays answer 200 with the job as it is now. */
    responseStatus: integer('response_status').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.mode, t.key] }),
    index('reasoning_idempotency_created_idx').on(t.tenantId, t.createdAt),
    modeCheck('reasoning_idempotency_keys', t.mode),
  ],
)

/**
 * The job index: the public job record without content, as its object last wrote it
 * (`record_version` only grows, so a late write never replaces a newer one). Pages are read in
 * (created_at, id) order, newest first. Written with SQL text by
 * durable-objects/reasoning-job/job-index.ts (an upsert guarded by record_version) and declared here
 * for drizzle-kit, like reasoning_idempotency_keys.
 */
export const reasoningJobs = pgTable(
  'reasoning_jobs',
  {
    id: uuid('id').primaryKey(),
    tenantId: tenantRef(),
    mode: modeColumn(),
    principal: text('principal').notNull(),
    model: text('model').notNull(),
    product: text('product').notNull(),
    status: text('status').notNull(),
    record: jsonb('record').notNull(),
    recordVersion: integer('record_version').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull(),
  },
  (t) => [
    index('reasoning_jobs_page_idx').on(t.tenantId, t.mode, t.createdAt.desc(), t.id.desc()),
    index('reasoning_jobs_status_idx').on(t.tenantId, t.mode, t.status),
    modeCheck('reasoning_jobs', t.mode),
  ],
)

/**
 * The agent run index: one row per run, as its AgentRun object last wrote it (`version` only
 * grows, so a late or repeated write never replaces a newer one). A run is named by tenant, mode,
 * principal and run id (two credentials, or one person in both modes, may pick the same
 * client-chosen run id), so `id` is the row's own key for pages. `tenant_id` has no foreign key on purpose: the object only knows ids,
 * and a write it cannot ever complete (an FK refusal) would be retried forever; every read is
 * tenant-scoped, and tenants are never deleted.
 */
export const agentRuns = pgTable(
  'agent_runs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: uuid('tenant_id').notNull(),
    runId: uuid('run_id').notNull(),
    /** Who started it, as the run's owner: `key:<api key id>` or `sub:<token subject>`. */
    principal: text('principal').notNull(),
    apiKeyId: uuid('api_key_id'),
    /** The person, when the run was started with a user's token (`sub:user:<id>`). */
    userId: uuid('user_id'),
    /** Test or live: the mode of the credential that started the run. */
    mode: modeColumn(),
    /** The agent mode of the last turn (manual, plan, edit, auto). */
    agentMode: text('agent_mode').notNull(),
    model: text('model').notNull(),
    state: text('state').notNull(),
    turnCount: integer('turn_count').notNull(),
    inputTokens: bigint('input_tokens', { mode: 'number' }).notNull(),
    outputTokens: bigint('output_tokens', { mode: 'number' }).notNull(),
    totalTokens: bigint('total_tokens', { mode: 'number' }).notNull(),
    costUsd: numeric('cost_usd', { precision: 14, scale: 6 }).notNull(),
    version: integer('version').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull(),
  },
  (t) => [
    uniqueIndex('agent_runs_owner_idx').on(t.tenantId, t.mode, t.principal, t.runId),
    index('agent_runs_page_idx').on(t.tenantId, t.mode, t.createdAt.desc(), t.id.desc()),
    index('agent_runs_run_idx').on(t.tenantId, t.mode, t.runId),
    modeCheck('agent_runs', t.mode),
  ],
)
