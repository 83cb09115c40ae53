/** POST /auth/token/refresh: spend a refresh token for a new access token and a new refresh token. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { and, eq } from 'drizzle-orm'
import { appendAuditEvent } from '../../../durable-objects/audit-log/audit-client'
import { userSubject } from '../../../shared/auth/subjects'
import { members } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { type AuthEnv, authSettings } from './auth.context'
import { errorResponse, RefreshRequestSchema, UserTokenResponseSchema } from './auth.schemas'
import { revokeFamily, rotateRefreshToken } from './refresh-tokens'
import { issueAccessToken } from './token-issuer'

export function refreshRoutes(app: OpenAPIHono<FamilyEnv<AuthEnv>>): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/auth/token/refresh',
      tags: ['Auth'],
      summary: 'Rotate tokens: a refresh token for a new access token and refresh token (public)',
      description:
        'Each refresh token works once. Presenting one that was already used revokes the whole login session (every refresh token descended from that login at once, and every access token issued from it, which names it in `sid`, everywhere within API_KEY_CACHE_TTL_SECONDS: 401 token_revoked), per the OAuth 2.0 Security BCP (RFC 9700 §4.14.2).',
      request: {
        body: { required: true, content: { 'application/json': { schema: RefreshRequestSchema } } },
      },
      responses: {
        200: { description: 'Rotated', content: { 'application/json': { schema: UserTokenResponseSchema } } },
        401: errorResponse(
          'refresh_token_invalid, refresh_token_expired, refresh_token_revoked, or refresh_token_reused (the session is now revoked)',
        ),
        503: errorResponse(
          'identity_store_unavailable, or no signing key can issue the token; retry shortly',
        ),
      },
    }),
    async (c) => {
      const body = c.req.valid('json')
      const settings = authSettings(c.env)
      const result = await withRequestDatabase(c, 'identity', async (db) => {
        const requestId = c.get('request').requestId
        const recordRevocation = (
          family: { tenantId: string; userId: string; familyId: string },
          reason: 'reuse_detected' | 'membership_ended',
        ) =>
          appendAuditEvent(c.env.AUDIT_LOG, family.tenantId, {
            kind: 'refresh_token.family_revoked',
            subject: userSubject(family.userId),
            family_id: family.familyId,
            reason,
            request_id: requestId,
          })
        const rotated = await rotateRefreshToken(
          db,
          body.refresh_token,
          settings.refreshTokenTtlSeconds,
          new Date(),
          (family) => recordRevocation(family, 'reuse_detected'),
        )
        const [membership] = await db
          .select({ role: members.role })
          .from(members)
          .where(and(eq(members.tenantId, rotated.tenantId), eq(members.userId, rotated.userId)))
          .limit(1)
        if (!membership) {
          await revokeFamily(db, rotated.familyId, 'membership_ended')
          await recordRevocation(rotated, 'membership_ended')
          throw new AppError(
            401,
            'refresh_token_revoked',
            'You are no longer a member of this workspace; this login session has been revoked.',
            { param: 'refresh_token' },
          )
        }
        const token = await issueAccessToken(db, c.env, c.executionCtx, {
          tenantId: rotated.tenantId,
          sub: userSubject(rotated.userId),
          aud: 'platform',
          sessionId: rotated.familyId,
          ...(body.alg ? { alg: body.alg } : {}),
          requestId: c.get('request').requestId,
          method: c.req.method,
          path: '/auth/token/refresh',
        })
        return {
          ...token,
          tenant_id: rotated.tenantId,
          audience: 'platform' as const,
          refresh_token: rotated.refreshToken,
          refresh_token_expires_in: settings.refreshTokenTtlSeconds,
        }
      })
      return c.json(result, 200, { 'cache-control': 'no-store' })
    },
  )
}
