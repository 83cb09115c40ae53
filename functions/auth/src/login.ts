/** POST /auth/login: a person's email and password → a `platform` access token and a refresh token. */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { eq, sql } from 'drizzle-orm'
import { userSubject } from '../../../shared/auth/subjects'
import { hashPassword, needsRehash } from '../../../shared/crypto'
import { members, users } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import { type AuthEnv, authSettings } from './auth.context'
import { errorResponse, LoginRequestSchema, UserTokenResponseSchema } from './auth.schemas'
import { withDatabase } from './database'
import {
  assertNotThrottled,
  clearAccount,
  clientAddress,
  loginThrottleKeys,
  recordFailure,
} from './login-throttle'
import { startRefreshFamily } from './refresh-tokens'
import { verifyAgainst } from './secret-verification'
import { issueAccessToken } from './token-issuer'

export function loginRoutes(app: OpenAPIHono<FamilyEnv<AuthEnv>>): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/auth/login',
      tags: ['Auth'],
      summary: 'Log in with email and password; returns an access token and a refresh token (public)',
      description:
        'Passwords are checked with Argon2id (m=19 MiB, t=2, p=1, constant-time comparison); an unknown email costs the same as a wrong password and gets the same answer. Failures are counted per account and per client address (CF-Connecting-IP, else the first X-Forwarded-For entry): 5 per account or 20 per address within 15 minutes lock for 15 minutes (429 with Retry-After). The access token has `aud` = platform, `sub` = `user:<id>`, `tenant_id`.',
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
      },
    }),
    async (c) => {
      const body = c.req.valid('json')
      const settings = authSettings(c.env)
      const keys = loginThrottleKeys(body.email, clientAddress(c.req.raw), settings)
      const result = await withDatabase(c, async (db) => {
        const counted = await assertNotThrottled(db, keys)
        const [user] = await db
          .select({ id: users.id, passwordHash: users.passwordHash })
          .from(users)
          .where(sql`lower(${users.email}) = lower(${body.email.trim()})`)
          .limit(1)
        if (!user || !(await verifyAgainst(user.passwordHash, body.password))) {
          await recordFailure(db, keys, settings)
          throw new AppError(401, 'invalid_credentials', 'The email or password is wrong.')
        }
        if (counted.has(keys[0]!.key)) await clearAccount(db, keys[0]!)
        if (user.passwordHash && needsRehash(user.passwordHash)) {
          const fresh = await hashPassword(body.password)
          await db.update(users).set({ passwordHash: fresh }).where(eq(users.id, user.id))
        }

        const memberships = await db
          .select({ tenantId: members.tenantId })
          .from(members)
          .where(eq(members.userId, user.id))
        const tenantIds = memberships.map((m) => m.tenantId)
        let tenantId: string
        if (body.tenant_id) {
          if (!tenantIds.includes(body.tenant_id)) {
            throw new AppError(403, 'not_a_member', `You are not a member of workspace ${body.tenant_id}.`, {
              param: 'tenant_id',
            })
          }
          tenantId = body.tenant_id
        } else if (tenantIds.length === 1) {
          tenantId = tenantIds[0]!
        } else if (tenantIds.length === 0) {
          throw new AppError(
            403,
            'no_workspace',
            'This account belongs to no workspace; ask an owner to add you.',
          )
        } else {
          throw new AppError(
            400,
            'tenant_required',
            `You belong to ${tenantIds.length} workspaces; pass tenant_id, one of ${tenantIds.join(', ')}.`,
            { param: 'tenant_id' },
          )
        }

        const token = await issueAccessToken(db, c.env, c.executionCtx, {
          tenantId,
          sub: userSubject(user.id),
          aud: 'platform',
          ...(body.alg ? { alg: body.alg } : {}),
          requestId: c.get('request').requestId,
          method: c.req.method,
          path: '/auth/login',
        })
        const refreshToken = await startRefreshFamily(db, {
          tenantId,
          userId: user.id,
          ttlSeconds: settings.refreshTokenTtlSeconds,
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
