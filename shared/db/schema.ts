/**
 * The relational system of record (Postgres: Neon in production, PGlite or a local
 * PostgreSQL server in development and tests). Every tenant-owned table carries
 * `tenant_id` and every query on it filters by the authenticated tenant.
 */
import { sql } from 'drizzle-orm'
import {
  index,
  integer,
  jsonb,
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
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
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
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
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
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
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
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    ownerId: text('owner_id').notNull(),
    content: text('content').notNull(),
    body: jsonb('body').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('memories_owner_idx').on(t.tenantId, t.ownerId, t.createdAt)],
)
