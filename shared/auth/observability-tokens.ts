/**
 * Observability tokens: per-workspace credentials for OTLP ingestion only (spec 001,
 * Authentication 4: "a configured observability token ... resolved from a secret manager and
 * rotated like other service credentials"). `svc_ot_` + 43 base62 characters, shown once when
 * created or rotated, stored as the SHA-256 (256 random bits need no slow hash). The telemetry
 * family manages them (/platform/v1/observability-tokens); the gateway verifies them.
 */
import { and, desc, eq, isNull } from 'drizzle-orm'
import type { Drizzle } from '../db/client'
import { observabilityTokens } from '../db/schema'
import { AppError } from '../http/errors'
import { hashApiKey } from './api-keys'
import type { CredentialPowers } from './credential-ceiling'
import { generateObservabilityToken } from './opaque-credentials'

type TokenRow = typeof observabilityTokens.$inferSelect

/**
 * What an observability token can do, for the credential ceiling: OTLP ingestion only, with the
 * member role the gateway gives it, and live (observability tokens have no test mode).
 */
export const OBSERVABILITY_TOKEN_POWERS: CredentialPowers = {
  scopes: ['telemetry:write'],
  role: 'member',
  mode: 'live',
}

export interface ObservabilityTokenView {
  id: string
  object: 'observability_token'
  name: string
  /** The last four characters, to tell tokens apart; never the token. */
  suffix: string
  created_by: string | null
  created_at: string
  rotated_at: string | null
  last_used_at: string | null
  revoked_at: string | null
}

export function renderObservabilityToken(row: TokenRow): ObservabilityTokenView {
  return {
    id: row.id,
    object: 'observability_token',
    name: row.name,
    suffix: row.suffix,
    created_by: row.createdBy,
    created_at: row.createdAt.toISOString(),
    rotated_at: row.rotatedAt?.toISOString() ?? null,
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
    revoked_at: row.revokedAt?.toISOString() ?? null,
  }
}

/** What the database stores for a token: its hex SHA-256. */
export const hashObservabilityToken = hashApiKey

function notFound(id: string): AppError {
  return new AppError(
    404,
    'observability_token_not_found',
    `No active observability token ${id} in this workspace. List them with GET /platform/v1/observability-tokens.`,
    { param: 'tokenId' },
  )
}

export async function createObservabilityToken(
  db: Drizzle,
  input: { tenantId: string; name: string; createdBy: string | null },
): Promise<{ view: ObservabilityTokenView; token: string }> {
  const token = generateObservabilityToken()
  const [row] = await db
    .insert(observabilityTokens)
    .values({
      tenantId: input.tenantId,
      name: input.name,
      tokenHash: hashObservabilityToken(token),
      suffix: token.slice(-4),
      createdBy: input.createdBy,
    })
    .returning()
  return { view: renderObservabilityToken(row!), token }
}

/** A new token value for the same id; the old value is refused at once (at the gateway within its cache TTL). */
export async function rotateObservabilityToken(
  db: Drizzle,
  tenantId: string,
  id: string,
): Promise<{ view: ObservabilityTokenView; token: string }> {
  const token = generateObservabilityToken()
  const [row] = await db
    .update(observabilityTokens)
    .set({ tokenHash: hashObservabilityToken(token), suffix: token.slice(-4), rotatedAt: new Date() })
    .where(
      and(
        eq(observabilityTokens.id, id),
        eq(observabilityTokens.tenantId, tenantId),
        isNull(observabilityTokens.revokedAt),
      ),
    )
    .returning()
  if (!row) throw notFound(id)
  return { view: renderObservabilityToken(row), token }
}

export async function revokeObservabilityToken(
  db: Drizzle,
  tenantId: string,
  id: string,
): Promise<ObservabilityTokenView> {
  const [row] = await db
    .update(observabilityTokens)
    .set({ revokedAt: new Date() })
    .where(
      and(
        eq(observabilityTokens.id, id),
        eq(observabilityTokens.tenantId, tenantId),
        isNull(observabilityTokens.revokedAt),
      ),
    )
    .returning()
  if (!row) throw notFound(id)
  return renderObservabilityToken(row)
}

export async function listObservabilityTokens(
  db: Drizzle,
  tenantId: string,
): Promise<ObservabilityTokenView[]> {
  const rows = await db
    .select()
    .from(observabilityTokens)
    .where(eq(observabilityTokens.tenantId, tenantId))
    .orderBy(desc(observabilityTokens.createdAt), desc(observabilityTokens.id))
  return rows.map(renderObservabilityToken)
}
