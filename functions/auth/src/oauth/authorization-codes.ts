/**
 * Authorization codes: 256-bit, stored as SHA-256, valid for 60 seconds, spent once by one
 * atomic `UPDATE … WHERE used_at IS NULL`. Spending checks, in order: the code exists and has not
 * expired, it was issued to this client, for this redirect URI, the PKCE verifier hashes to its
 * challenge (S256), and the resource asked for is the one it was issued for. A code presented
 * again after it was spent revokes the refresh-token family it was exchanged for (RFC 6749
 * §4.1.2: "SHOULD revoke all tokens previously issued based on that authorization code").
 */
import { and, eq, isNull } from 'drizzle-orm'
import { hashApiKey } from '../../../../shared/auth/api-keys'
import { generateAuthorizationCode, isAuthorizationCode } from '../../../../shared/auth/opaque-credentials'
import { base64urlEncode, utf8 } from '../../../../shared/crypto/encoding'
import type { Drizzle } from '../../../../shared/db/client'
import { oauthAuthorizationCodes } from '../../../../shared/db/schema'
import { revokeFamily } from '../refresh-tokens'
import type { AuthorizationRequest } from './authorization-request'
import { oauthError } from './oauth-error'

export const AUTHORIZATION_CODE_TTL_SECONDS = 60

/** RFC 7636 §4.1: 43-128 characters of [A-Z a-z 0-9 - . _ ~]. */
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/

export async function issueAuthorizationCode(
  db: Drizzle,
  request: AuthorizationRequest,
  owner: { userId: string; tenantId: string },
  now = new Date(),
): Promise<string> {
  const code = generateAuthorizationCode()
  await db.insert(oauthAuthorizationCodes).values({
    codeHash: await hashApiKey(code),
    clientId: request.client.id,
    tenantId: owner.tenantId,
    userId: owner.userId,
    redirectUri: request.redirectUri,
    codeChallenge: request.codeChallenge,
    resource: request.resource,
    scope: request.scope,
    expiresAt: new Date(now.getTime() + AUTHORIZATION_CODE_TTL_SECONDS * 1000),
    createdAt: now,
  })
  return code
}

export interface SpentCode {
  codeHash: string
  tenantId: string
  userId: string
  resource: string
  scope: string
}

export async function pkceChallengeOf(verifier: string): Promise<string> {
  return base64urlEncode(new Uint8Array(await crypto.subtle.digest('SHA-256', utf8.encode(verifier))))
}

export async function spendAuthorizationCode(
  db: Drizzle,
  input: { code?: string; clientId: string; redirectUri?: string; codeVerifier?: string; resource?: string },
  now = new Date(),
  /** Called when a spent code came back and its tokens were revoked (the caller records it). */
  onReuse: (revoked: {
    tenantId: string
    userId: string
    familyId: string
  }) => Promise<unknown> = async () => {},
): Promise<SpentCode> {
  if (!input.code) throw oauthError('invalid_request', 'code is required for grant_type=authorization_code.')
  if (!input.codeVerifier) throw oauthError('invalid_request', 'code_verifier is required (PKCE).')
  if (!isAuthorizationCode(input.code))
    throw oauthError('invalid_grant', 'The authorization code is not valid.')
  const codeHash = await hashApiKey(input.code)
  const [row] = await db
    .select()
    .from(oauthAuthorizationCodes)
    .where(eq(oauthAuthorizationCodes.codeHash, codeHash))
    .limit(1)
  if (!row) throw oauthError('invalid_grant', 'The authorization code is not valid.')
  const reused = async () => {
    if (row.refreshFamilyId) {
      await revokeFamily(db, row.refreshFamilyId, 'authorization_code_reused')
      await onReuse({ tenantId: row.tenantId, userId: row.userId, familyId: row.refreshFamilyId })
    }
    return oauthError(
      'invalid_grant',
      'The authorization code was already used; the tokens issued for it have been revoked. Start the authorization again.',
    )
  }
  if (row.usedAt) throw await reused()
  if (row.expiresAt.getTime() <= now.getTime()) {
    throw oauthError(
      'invalid_grant',
      `The authorization code expired (codes are valid for ${AUTHORIZATION_CODE_TTL_SECONDS} seconds).`,
    )
  }
  if (row.clientId !== input.clientId)
    throw oauthError('invalid_grant', 'The authorization code was issued to another client.')
  if (input.redirectUri !== undefined && input.redirectUri !== row.redirectUri) {
    throw oauthError('invalid_grant', 'redirect_uri does not match the one of the authorization request.')
  }
  if (
    !CODE_VERIFIER.test(input.codeVerifier) ||
    (await pkceChallengeOf(input.codeVerifier)) !== row.codeChallenge
  ) {
    throw oauthError(
      'invalid_grant',
      'The code_verifier does not match the code_challenge of the authorization request (PKCE).',
    )
  }
  if (input.resource !== undefined && input.resource !== row.resource) {
    throw oauthError('invalid_target', `The authorization was for ${row.resource}, not ${input.resource}.`)
  }
  const spent = await db
    .update(oauthAuthorizationCodes)
    .set({ usedAt: now })
    .where(and(eq(oauthAuthorizationCodes.codeHash, codeHash), isNull(oauthAuthorizationCodes.usedAt)))
    .returning({ codeHash: oauthAuthorizationCodes.codeHash })
  // Lost a race with a concurrent exchange of the same code: a reuse.
  if (spent.length === 0) throw await reused()
  return { codeHash, tenantId: row.tenantId, userId: row.userId, resource: row.resource, scope: row.scope }
}

/** Remembers which refresh-token family the code was exchanged for (revoked if the code returns). */
export async function linkCodeToFamily(db: Drizzle, codeHash: string, familyId: string): Promise<void> {
  await db
    .update(oauthAuthorizationCodes)
    .set({ refreshFamilyId: familyId })
    .where(eq(oauthAuthorizationCodes.codeHash, codeHash))
}
