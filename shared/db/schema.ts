/**
 * The relational system of record (Postgres: Neon in production, PGlite or a local
 * PostgreSQL server in development and tests). Every tenant-owned table carries
 * `tenant_id` and every query on it filters by the authenticated tenant.
 */
import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'

export const MEMBER_ROLES = ['owner', 'admin', 'member'] as const
export type MemberRole = (typeof MEMBER_ROLES)[number]

export const API_KEY_MODES = ['live', 'test'] as const
export type ApiKeyMode = (typeof API_KEY_MODES)[number]

const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow()

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
 * last four characters, for display.
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
    createdAt: createdAt(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [uniqueIndex('api_keys_hash_idx').on(t.keyHash), index('api_keys_tenant_idx').on(t.tenantId)],
)

/** Free-form feedback bodies (spec: any JSON object). */
export const feedback = pgTable(
  'feedback',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    apiKeyId: uuid('api_key_id'),
    subject: text('subject'),
    body: jsonb('body').notNull(),
    requestId: text('request_id').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('feedback_tenant_idx').on(t.tenantId, t.createdAt)],
)

/** Personal memory records: owned by a tenant and a principal (key or user) inside it. */
export const memories = pgTable(
  'memories',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: tenantRef(),
    ownerId: text('owner_id').notNull(),
    content: text('content').notNull(),
    body: jsonb('body').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('memories_owner_idx').on(t.tenantId, t.ownerId, t.createdAt)],
)

// ---------------------------------------------------------------------------------------------
// Identity: service accounts, users' refresh-token families, login throttling.

export const AUDIENCES = ['platform', 'internal-service', 'external-api'] as const

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
    /** `tokens` for a model; a paid tool's own unit (`requests` for web search, `seconds` of audio). */
    unit: text('unit', { enum: ['tokens', 'requests', 'seconds'] })
      .notNull()
      .default('tokens'),
    /** What was used in `unit` (for a model: prompt + completion tokens). */
    quantity: bigint('quantity', { mode: 'number' }).notNull().default(0),
    creditsCents: numeric('credits_cents', { precision: 14, scale: 4 }).notNull(),
    estimated: boolean('estimated').notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('usage_ledger_request_idx').on(t.tenantId, t.requestId),
    index('usage_ledger_tenant_time_idx').on(t.tenantId, t.createdAt),
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
