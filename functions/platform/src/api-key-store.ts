/**
 * API keys in Postgres: create (the secret exists only in the answer), list, rotate (a new row;
 * the old one expires at the end of the grace period and points at the new one), revoke. Every
 * query is scoped by the caller's tenant; what a caller may see or touch is decided here too:
 * owners and admins manage the workspace's keys (never one of a higher role than their own),
 * members see only the keys they created and the key they are calling with. A key created or
 * rotated can do no more than the credential creating it (shared/auth/credential-ceiling.ts).
 */
import type { z } from '@hono/zod-openapi'
import { and, desc, eq, isNull, or, type SQL } from 'drizzle-orm'
import { API_KEY_PREFIX, apiKeySuffix, generateApiKey, hashApiKey } from '../../../shared/auth/api-keys'
import { assertWithinCeiling } from '../../../shared/auth/credential-ceiling'
import type { ModelAlias } from '../../../shared/catalog/model-aliases'
import type { Drizzle } from '../../../shared/db/client'
import { type ApiKeyMode, apiKeys, type MemberRole } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import { storedKeySpendUnits } from '../../../shared/metering/key-spend'
import { type SpendPeriodKind, spendPeriodAt } from '../../../shared/metering/spend-period'
import { unitsToUsd, usdToUnits } from '../../../shared/metering/usd'
import type { BillingPlan, PlanCatalog } from '../../../shared/plans/plan-catalog'
import { actorOf, type Identity } from '../../../shared/worker/request-context'
import type { ApiKeySchema } from './api-keys.schemas'

export type ApiKeyView = z.infer<typeof ApiKeySchema>
type ApiKeyRow = typeof apiKeys.$inferSelect

const RANK: Record<MemberRole, number> = { member: 0, admin: 1, owner: 2 }

export function isAdministrator(identity: Identity): boolean {
  return identity.role === 'owner' || identity.role === 'admin'
}

function userIdOf(identity: Identity): string | null {
  const subject = identity.principal.kind === 'access_token' ? identity.principal.subject : ''
  return subject.startsWith('user:') ? subject.slice(5) : null
}

export function renderApiKey(row: ApiKeyRow, now = new Date()): ApiKeyView {
  const status = row.revokedAt
    ? 'revoked'
    : row.expiresAt && row.expiresAt <= now
      ? 'expired'
      : row.expiresAt
        ? 'expiring'
        : 'active'
  return {
    id: row.id,
    object: 'api_key',
    tenant_id: row.tenantId,
    name: row.name,
    mode: row.mode,
    prefix: API_KEY_PREFIX[row.mode],
    suffix: row.suffix,
    redacted_value: `${API_KEY_PREFIX[row.mode]}…${row.suffix}`,
    role: row.role,
    scopes: row.scopes,
    status,
    created_at: row.createdAt.toISOString(),
    created_by: row.createdByActor,
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
    expires_at: row.expiresAt?.toISOString() ?? null,
    replaced_by: row.replacedBy,
    revoked_at: row.revokedAt?.toISOString() ?? null,
    ...limitsView(row),
    spend: null,
  }
}

/** The key's own limits as the API shows them. */
function limitsView(row: ApiKeyRow) {
  const rate = {
    ...(row.requestsPerMinute === null ? {} : { requests_per_minute: row.requestsPerMinute }),
    ...(row.tokensPerMinute === null ? {} : { tokens_per_minute: row.tokensPerMinute }),
  }
  return {
    allowed_models: row.allowedModels,
    spend_limit:
      row.spendLimitUsd !== null && row.spendPeriod !== null
        ? { amount_usd: Number(row.spendLimitUsd), period: row.spendPeriod }
        : null,
    rate_limit: Object.keys(rate).length > 0 ? rate : null,
  }
}

/**
 * Fills `spend` of the keys with a spend limit: the list price of their requests in the current
 * period, as Postgres has them (the RateLimiter flushes within about a second).
 */
export async function withSpend(
  db: Drizzle,
  views: ApiKeyView[],
  catalog: PlanCatalog,
  now = Date.now(),
): Promise<ApiKeyView[]> {
  return Promise.all(
    views.map(async (view) => {
      const limit = view.spend_limit
      if (!limit) return view
      const period = spendPeriodAt(limit.period, now)
      const used = await storedKeySpendUnits(
        db,
        { tenantId: view.tenant_id, mode: view.mode, keyId: view.id, since: period.start },
        catalog,
      )
      const amount = usdToUnits(limit.amount_usd)
      return {
        ...view,
        spend: {
          period: limit.period,
          amount_usd: unitsToUsd(amount),
          used_usd: unitsToUsd(used),
          remaining_usd: unitsToUsd(Math.max(0, amount - used)),
          resets_at: period.end === null ? null : new Date(period.end).toISOString(),
        },
      }
    }),
  )
}

/** The limits a create or PATCH sets, as columns; a field absent from the input is left out. */
export interface KeyLimitsInput {
  allowed_models?: readonly ModelAlias[] | null | undefined
  spend_limit?: { amount_usd: number; period: SpendPeriodKind } | null | undefined
  rate_limit?:
    | { requests_per_minute?: number | undefined; tokens_per_minute?: number | undefined }
    | null
    | undefined
}

function limitColumns(input: KeyLimitsInput, plan: BillingPlan) {
  const columns: Partial<
    Pick<
      ApiKeyRow,
      'allowedModels' | 'spendLimitUsd' | 'spendPeriod' | 'requestsPerMinute' | 'tokensPerMinute'
    >
  > = {}
  if (input.allowed_models !== undefined)
    columns.allowedModels = input.allowed_models === null ? null : [...new Set(input.allowed_models)]
  if (input.spend_limit !== undefined) {
    const units = input.spend_limit === null ? 0 : usdToUnits(input.spend_limit.amount_usd)
    if (input.spend_limit !== null && units < 1) {
      throw new AppError(400, 'invalid_request', 'spend_limit.amount_usd must be at least 0.000001.', {
        param: 'spend_limit.amount_usd',
      })
    }
    columns.spendLimitUsd = input.spend_limit === null ? null : (units / 1_000_000).toFixed(6)
    columns.spendPeriod = input.spend_limit?.period ?? null
  }
  if (input.rate_limit !== undefined) {
    const rpm = input.rate_limit?.requests_per_minute ?? null
    const tpm = input.rate_limit?.tokens_per_minute ?? null
    if (rpm !== null && rpm > plan.requestsPerMinute) {
      throw new AppError(
        400,
        'invalid_request',
        `rate_limit.requests_per_minute must be at most the ${plan.name} plan's ${plan.requestsPerMinute} (got ${rpm}).`,
        { param: 'rate_limit.requests_per_minute' },
      )
    }
    if (tpm !== null && tpm > plan.tokensPerMinute) {
      throw new AppError(
        400,
        'invalid_request',
        `rate_limit.tokens_per_minute must be at most the ${plan.name} plan's ${plan.tokensPerMinute} (got ${tpm}).`,
        { param: 'rate_limit.tokens_per_minute' },
      )
    }
    columns.requestsPerMinute = rpm
    columns.tokensPerMinute = tpm
  }
  return columns
}

/**
 * Changes a key's limits (owners and admins; never a key of a higher role). Takes effect on the
 * key's next request through the gateway isolate that served the change (afterAdminChange), in
 * the others within API_KEY_CACHE_TTL_SECONDS.
 */
export async function updateApiKeyLimits(
  db: Drizzle,
  identity: Identity,
  id: string,
  input: KeyLimitsInput,
  plan: BillingPlan,
): Promise<ApiKeyView> {
  const existing = await keyToChange(db, identity, id, 'change')
  const columns = limitColumns(input, plan)
  if (Object.keys(columns).length === 0) return renderApiKey(existing)
  const [row] = await db
    .update(apiKeys)
    .set(columns)
    .where(and(eq(apiKeys.id, id), eq(apiKeys.tenantId, identity.tenantId)))
    .returning()
  if (!row) throw apiKeyNotFound(id)
  return renderApiKey(row)
}

/** The keys a member may see: those it created, and the key it is calling with. */
function visibleToMember(identity: Identity): SQL {
  const own = [eq(apiKeys.createdByActor, actorOf(identity))]
  if (identity.principal.kind === 'api_key') own.push(eq(apiKeys.id, identity.principal.keyId))
  const userId = userIdOf(identity)
  if (userId) own.push(eq(apiKeys.createdBy, userId))
  return or(...own)!
}

/** The keys the caller may see: the workspace's (owners, admins), a member's own (above). */
export function scopeFor(identity: Identity): SQL {
  const tenant = eq(apiKeys.tenantId, identity.tenantId)
  return isAdministrator(identity) ? tenant : and(tenant, visibleToMember(identity))!
}

export function apiKeyNotFound(id: string): AppError {
  return new AppError(
    404,
    'api_key_not_found',
    `No API key ${id} in this workspace. List them with GET /platform/v1/api-keys.`,
    { param: 'keyId' },
  )
}

/** The tenant's key `id` (404 for another tenant's or none). */
async function tenantKey(db: Drizzle, identity: Identity, id: string): Promise<ApiKeyRow> {
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, id), eq(apiKeys.tenantId, identity.tenantId)))
  if (!row) throw apiKeyNotFound(id)
  return row
}

/** The tenant's key `id`, which the caller's role must reach to `action` it (403 otherwise). */
async function keyToChange(db: Drizzle, identity: Identity, id: string, action: string): Promise<ApiKeyRow> {
  const row = await tenantKey(db, identity, id)
  if (RANK[row.role] > RANK[identity.role]) throw outranked(identity, row.role, action)
  return row
}

function outranked(identity: Identity, role: MemberRole, action: string): AppError {
  return new AppError(
    403,
    'insufficient_role',
    `A credential with role "${identity.role}" may not ${action} a key with role "${role}"; ask a workspace owner.`,
    { param: 'role' },
  )
}

export async function listApiKeys(
  db: Drizzle,
  identity: Identity,
  filter: { mode?: ApiKeyMode; activeOnly: boolean },
  now = new Date(),
): Promise<ApiKeyView[]> {
  const conditions = [scopeFor(identity)]
  if (filter.mode) conditions.push(eq(apiKeys.mode, filter.mode))
  const rows = await db
    .select()
    .from(apiKeys)
    .where(and(...conditions))
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
  const views = rows.map((row) => renderApiKey(row, now))
  return filter.activeOnly ? views.filter((k) => k.status === 'active' || k.status === 'expiring') : views
}

export async function getApiKey(db: Drizzle, identity: Identity, id: string): Promise<ApiKeyView> {
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, id), scopeFor(identity)))
  if (!row) throw apiKeyNotFound(id)
  return renderApiKey(row)
}

export interface CreateApiKeyInput {
  name: string
  mode: ApiKeyMode
  role: MemberRole
  scopes: readonly string[]
  expiresAt: Date | null
  limits: KeyLimitsInput
}

/** Creates a key; the answer is the only place its secret ever exists outside the caller. */
export async function createApiKey(
  db: Drizzle,
  identity: Identity,
  input: CreateApiKeyInput,
  plan: BillingPlan,
): Promise<{ view: ApiKeyView; key: string }> {
  assertWithinCeiling(identity, input, 'the new API key')
  const limits = limitColumns(input.limits, plan)
  const key = generateApiKey(input.mode)
  const [row] = await db
    .insert(apiKeys)
    .values({
      tenantId: identity.tenantId,
      name: input.name,
      mode: input.mode,
      keyHash: await hashApiKey(key),
      suffix: apiKeySuffix(key),
      scopes: [...new Set(input.scopes)],
      role: input.role,
      createdBy: userIdOf(identity),
      createdByActor: actorOf(identity),
      expiresAt: input.expiresAt,
      ...limits,
    })
    .returning()
  return { view: renderApiKey(row!), key }
}

/**
 * A key an administrator may rotate: in the tenant, not revoked, not expired, and its successor
 * (same scopes, role and mode) within the caller's ceiling.
 */
async function rotatableKey(db: Drizzle, identity: Identity, id: string, now: Date): Promise<ApiKeyRow> {
  const row = await tenantKey(db, identity, id)
  assertWithinCeiling(identity, row, `the successor of API key ${id}`)
  if (row.revokedAt) {
    throw new AppError(
      409,
      'api_key_revoked',
      `API key ${id} was revoked at ${row.revokedAt.toISOString()}.`,
      {
        param: 'keyId',
      },
    )
  }
  if (row.expiresAt && row.expiresAt <= now) {
    throw new AppError(409, 'api_key_expired', `API key ${id} expired at ${row.expiresAt.toISOString()}.`, {
      param: 'keyId',
    })
  }
  return row
}

/**
 * Rotation: a new key with the same name, mode, role, scopes and expiry, and the old one working
 * for `graceSeconds` more (0: it stops at once). A key is rotated once; rotate its successor next.
 */
export async function rotateApiKey(
  db: Drizzle,
  identity: Identity,
  id: string,
  graceSeconds: number,
  now = new Date(),
): Promise<{ view: ApiKeyView; key: string; previous: ApiKeyView }> {
  return db.transaction(async (tx) => {
    const old = await rotatableKey(tx, identity, id, now)
    if (old.replacedBy) {
      throw new AppError(
        409,
        'api_key_already_rotated',
        `API key ${id} was already rotated to ${old.replacedBy}; rotate that key instead.`,
        { param: 'keyId' },
      )
    }
    const key = generateApiKey(old.mode)
    const [fresh] = await tx
      .insert(apiKeys)
      .values({
        tenantId: old.tenantId,
        name: old.name,
        mode: old.mode,
        keyHash: await hashApiKey(key),
        suffix: apiKeySuffix(key),
        scopes: old.scopes,
        role: old.role,
        createdBy: userIdOf(identity),
        createdByActor: actorOf(identity),
        // The successor keeps an expiry the old key had beyond the grace period, and its limits.
        expiresAt: old.expiresAt,
        allowedModels: old.allowedModels,
        spendLimitUsd: old.spendLimitUsd,
        spendPeriod: old.spendPeriod,
        requestsPerMinute: old.requestsPerMinute,
        tokensPerMinute: old.tokensPerMinute,
      })
      .returning()
    const graceEnd = new Date(now.getTime() + graceSeconds * 1000)
    const [previous] = await tx
      .update(apiKeys)
      .set({
        replacedBy: fresh!.id,
        expiresAt: old.expiresAt && old.expiresAt < graceEnd ? old.expiresAt : graceEnd,
      })
      // Guarded so two concurrent rotations cannot both succeed.
      .where(and(eq(apiKeys.id, old.id), isNull(apiKeys.replacedBy), isNull(apiKeys.revokedAt)))
      .returning()
    if (!previous) {
      throw new AppError(409, 'api_key_already_rotated', `API key ${id} was rotated or revoked meanwhile.`, {
        param: 'keyId',
      })
    }
    return { view: renderApiKey(fresh!, now), key, previous: renderApiKey(previous, now) }
  })
}

export async function revokeApiKey(
  db: Drizzle,
  identity: Identity,
  id: string,
  now = new Date(),
): Promise<ApiKeyView> {
  const existing = await keyToChange(db, identity, id, 'revoke')
  if (existing.revokedAt) {
    throw new AppError(
      409,
      'api_key_revoked',
      `API key ${id} was already revoked at ${existing.revokedAt.toISOString()}.`,
      {
        param: 'keyId',
      },
    )
  }
  const [row] = await db
    .update(apiKeys)
    .set({ revokedAt: now })
    .where(and(eq(apiKeys.id, id), eq(apiKeys.tenantId, identity.tenantId), isNull(apiKeys.revokedAt)))
    .returning()
  if (!row) throw apiKeyNotFound(id)
  return renderApiKey(row, now)
}
