/**
 * The column vocabulary the tables of schema.ts share: member roles and credential modes (also
 * read by the API schemas), and the helpers for `created_at`, a resource's mode and `tsvector`.
 */
import { type AnyColumn, sql } from 'drizzle-orm'
import { check, customType, text, timestamp } from 'drizzle-orm/pg-core'

export const MEMBER_ROLES = ['owner', 'admin', 'member'] as const
export type MemberRole = (typeof MEMBER_ROLES)[number]

export const API_KEY_MODES = ['live', 'test'] as const
export type ApiKeyMode = (typeof API_KEY_MODES)[number]

export const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow()

/**
 * The mode of a resource a credential created (README, "Test and live"): test and live are
 * separate worlds of a tenant, and every query of such a table filters by tenant and mode.
 * Rows from before modes were separate were given one by migration 0013 (the creating key's
 * mode where it is known, else live).
 */
export const modeColumn = () => text('mode', { enum: API_KEY_MODES }).notNull()
export const modeCheck = (table: string, mode: AnyColumn) =>
  check(`${table}_mode_check`, sql`${mode} in ('test', 'live')`)

/** Postgres `tsvector`, written only by the database (a generated column). */
export const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' })
