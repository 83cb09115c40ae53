/**
 * Refresh-token rotation (OAuth 2.0 Security BCP, RFC 9700 §4.14.2): every login starts a family;
 * every refresh spends the presented token (single use) and issues its successor in the same
 * family. Presenting a spent token means two parties hold the family, so the whole family is
 * revoked and both must log in again. Tokens are stored as SHA-256 (256-bit random secrets).
 *
 * Spending is one atomic `UPDATE … WHERE used_at IS NULL`, so two concurrent refreshes with the
 * same token cannot both succeed: the loser is treated as a reuse.
 */
import { and, eq, isNull } from 'drizzle-orm'
import { hashApiKey } from '../../../shared/auth/api-keys'
import { generateRefreshToken, isRefreshToken } from '../../../shared/auth/opaque-credentials'
import type { Drizzle } from '../../../shared/db/client'
import { refreshTokenFamilies, refreshTokens } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'

const invalidGrant = (code: string, message: string) =>
  new AppError(401, code, message, { param: 'refresh_token' })

async function insertToken(db: Drizzle, familyId: string, parentId: string | null, ttlSeconds: number) {
  const token = generateRefreshToken()
  await db.insert(refreshTokens).values({
    familyId,
    parentId,
    tokenHash: await hashApiKey(token),
    expiresAt: new Date(Date.now() + ttlSeconds * 1000),
  })
  return token
}

/** The OAuth client, resource and scope of a family the authorization server started. */
export interface OAuthGrant {
  clientId: string
  resource: string
  scope: string
}

/** Starts a family for a login (or an OAuth authorization) and returns its first refresh token. */
export async function startRefreshFamily(
  db: Drizzle,
  input: { tenantId: string; userId: string; ttlSeconds: number; oauth?: OAuthGrant },
): Promise<{ familyId: string; refreshToken: string }> {
  const [family] = await db
    .insert(refreshTokenFamilies)
    .values({
      tenantId: input.tenantId,
      userId: input.userId,
      ...(input.oauth
        ? { oauthClientId: input.oauth.clientId, resource: input.oauth.resource, scope: input.oauth.scope }
        : {}),
    })
    .returning({ id: refreshTokenFamilies.id })
  return { familyId: family!.id, refreshToken: await insertToken(db, family!.id, null, input.ttlSeconds) }
}

export interface RotatedRefreshToken {
  tenantId: string
  userId: string
  familyId: string
  refreshToken: string
  /** Set for a family the OAuth authorization server started. */
  oauth: OAuthGrant | null
}

export async function revokeFamily(db: Drizzle, familyId: string, reason: string): Promise<void> {
  await db
    .update(refreshTokenFamilies)
    .set({ revokedAt: new Date(), revokedReason: reason })
    .where(and(eq(refreshTokenFamilies.id, familyId), isNull(refreshTokenFamilies.revokedAt)))
}

/** Spends `presented` and returns its successor; refuses (401) invalid, expired, revoked or reused tokens. */
export async function rotateRefreshToken(
  db: Drizzle,
  presented: string,
  ttlSeconds: number,
  now = new Date(),
  /** Called once a reuse revoked the family, before the refusal (the caller records it). */
  onReuseRevoked: (family: {
    tenantId: string
    userId: string
    familyId: string
  }) => Promise<unknown> = async () => {},
  /**
   * The OAuth client the caller is (null: a login's refresh at /auth/token/refresh). A token of
   * another client's family, or of the other kind, is refused as invalid before anything is spent:
   * an OAuth refresh token cannot be turned into a login session, nor one client's into another's.
   */
  oauthClientId: string | null = null,
  /** Further checks of the family before the token is spent (e.g. the resource asked for); throws to refuse. */
  precheck: (family: { resource: string | null; scope: string | null }) => void = () => {},
): Promise<RotatedRefreshToken> {
  if (!isRefreshToken(presented)) {
    throw invalidGrant(
      'refresh_token_invalid',
      'This is not a refresh token; send the refresh_token from /auth/login.',
    )
  }
  const [row] = await db
    .select({
      id: refreshTokens.id,
      familyId: refreshTokens.familyId,
      expiresAt: refreshTokens.expiresAt,
      usedAt: refreshTokens.usedAt,
      tenantId: refreshTokenFamilies.tenantId,
      userId: refreshTokenFamilies.userId,
      familyRevokedAt: refreshTokenFamilies.revokedAt,
      familyRevokedReason: refreshTokenFamilies.revokedReason,
      oauthClientId: refreshTokenFamilies.oauthClientId,
      resource: refreshTokenFamilies.resource,
      scope: refreshTokenFamilies.scope,
    })
    .from(refreshTokens)
    .innerJoin(refreshTokenFamilies, eq(refreshTokenFamilies.id, refreshTokens.familyId))
    .where(eq(refreshTokens.tokenHash, await hashApiKey(presented)))
    .limit(1)
  if (!row) throw invalidGrant('refresh_token_invalid', 'The refresh token is not valid; log in again.')
  if (row.oauthClientId !== oauthClientId) {
    throw invalidGrant(
      'refresh_token_invalid',
      oauthClientId === null
        ? 'This refresh token belongs to an OAuth client; refresh it at /oauth/token.'
        : 'This refresh token was not issued to this client.',
    )
  }
  if (row.familyRevokedAt) {
    throw invalidGrant(
      'refresh_token_revoked',
      `This login session was revoked${row.familyRevokedReason === 'reuse_detected' ? ' because a refresh token was used twice' : ''}; log in again.`,
    )
  }
  const reused = () =>
    invalidGrant(
      'refresh_token_reused',
      'This refresh token was already used. As a precaution every token of this login session has been revoked; log in again.',
    )
  if (row.usedAt) {
    await revokeFamily(db, row.familyId, 'reuse_detected')
    await onReuseRevoked(row)
    throw reused()
  }
  if (row.expiresAt.getTime() <= now.getTime()) {
    throw invalidGrant('refresh_token_expired', 'The refresh token has expired; log in again.')
  }
  precheck(row)
  const spent = await db
    .update(refreshTokens)
    .set({ usedAt: now })
    .where(and(eq(refreshTokens.id, row.id), isNull(refreshTokens.usedAt)))
    .returning({ id: refreshTokens.id })
  if (spent.length === 0) {
    await revokeFamily(db, row.familyId, 'reuse_detected')
    await onReuseRevoked(row)
    throw reused()
  }
  return {
    tenantId: row.tenantId,
    userId: row.userId,
    familyId: row.familyId,
    refreshToken: await insertToken(db, row.familyId, row.id, ttlSeconds),
    oauth:
      row.oauthClientId && row.resource && row.scope !== null
        ? { clientId: row.oauthClientId, resource: row.resource, scope: row.scope }
        : null,
  }
}
