/** POST /auth/login: a person's email and password → a `platform` access token and a refresh token. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { userSubject } from '../../../shared/auth/subjects'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { type AuthEnv, authSettings } from './auth.context'
import { errorResponse, LoginRequestSchema, UserTokenResponseSchema } from './auth.schemas'
import { startRefreshFamily } from './refresh-tokens'
import { issueAccessToken } from './token-issuer'
import { authenticateUser, chooseTenant } from './user-authentication'

export function loginRoutes(app: OpenAPIHono<FamilyEnv<AuthEnv>>): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/auth/login',
      tags: ['Auth'],
      summary: 'Log in with email and password; returns an access token and a refresh token (public)',
      description:
        'Passwords are checked with Argon2id (m=19 MiB, t=2, p=1, constant-time comparison); an unknown email costs the same as a wrong password and gets the same answer. Failures are counted per account and client address (CF-Connecting-IP, else the first X-Forwarded-For entry): 5 failures within 15 minutes lock that address out of that account for 15 minutes (429 with Retry-After), so guesses by a stranger never lock the owner out; 100 failures to one account from all addresses lock the account for everyone, and 20 from one address over all accounts lock the address. The access token has `aud` = platform, `sub` = `user:<id>`, `tenant_id`.',
      request: { body: { required: true, content: { 'application/json': { schema: LoginRequestSchema } } } },
      responses: {
        200: {
          description: 'Logged in',
          content: { 'application/json': { schema: UserTokenResponseSchema } },
        },
        400: errorResponse('tenant_required: the user belongs to several workspaces; pass tenant_id'),
        401: errorResponse('invalid_credentials: the email or password is wrong'),
        403: errorResponse(
          'not_a_member of the requested workspace, or crypto_policy_violation for a requested alg',
        ),
        429: errorResponse('login_throttled: too many failures; see Retry-After'),
        503: errorResponse(
          'identity_store_unavailable, or no signing key can issue the token; retry shortly',
        ),
      },
    }),
    async (c) => {
      const body = c.req.valid('json')
      const settings = authSettings(c.env)
      const result = await withRequestDatabase(c, 'identity', async (db) => {
        const { userId, tenantIds } = await authenticateUser(db, c.req.raw, settings, body)
        const tenantId = chooseTenant(tenantIds, body.tenant_id)
        const user = { id: userId }

        // The family first: the access token names it (`sid`), so revoking the session refuses it.
        const { familyId, refreshToken } = await startRefreshFamily(db, {
          tenantId,
          userId: user.id,
          ttlSeconds: settings.refreshTokenTtlSeconds,
        })
        const token = await issueAccessToken(db, c.env, c.executionCtx, {
          tenantId,
          sub: userSubject(user.id),
          aud: 'platform',
          sessionId: familyId,
          ...(body.alg ? { alg: body.alg } : {}),
          requestId: c.get('request').requestId,
          method: c.req.method,
          path: '/auth/login',
        })
        return {
          ...token,
          tenant_id: tenantId,
          audience: 'platform' as const,
          refresh_token: refreshToken,
          refresh_token_expires_in: settings.refreshTokenTtlSeconds,
        }
      })
      return c.json(result, 200, { 'cache-control': 'no-store' })
    },
  )
}
