/** POST /auth/service-token: a service account's id and secret → an access token (client credentials). */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi'
import { eq } from 'drizzle-orm'
import { isServiceAccountSecret } from '../../../shared/auth/opaque-credentials'
import { SERVICE_ACCOUNT_AUDIENCES, type ServiceAccountAudience } from '../../../shared/auth/service-accounts'
import { serviceAccountSubject } from '../../../shared/auth/subjects'
import { serviceAccounts } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'
import type { FamilyEnv } from '../../../shared/worker/family-app'
import { withRequestDatabase } from '../../../shared/worker/request-database'
import { type AuthEnv, authSettings } from './auth.context'
import { errorResponse, ServiceTokenRequestSchema, ServiceTokenResponseSchema } from './auth.schemas'
import {
  assertNotThrottled,
  clearAccount,
  clientAddress,
  clientThrottleKeys,
  recordFailure,
} from './login-throttle'
import { verifyServiceSecret } from './secret-verification'
import { issueAccessToken } from './token-issuer'

const invalidClient = () =>
  new AppError(401, 'invalid_client', 'The client_id or client_secret is wrong.', {
    headers: { 'www-authenticate': 'Bearer error="invalid_client"' },
  })

function isAllowed(
  audience: string,
  allowed: readonly ServiceAccountAudience[],
): audience is ServiceAccountAudience {
  return (allowed as readonly string[]).includes(audience)
}

export function serviceTokenRoutes(app: OpenAPIHono<FamilyEnv<AuthEnv>>): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/auth/service-token',
      tags: ['Auth'],
      summary: 'Exchange a service account id and secret for an access token (public)',
      description:
        'OAuth 2.0 client credentials in JSON. The token carries `sub` = `sa:<service account id>`, `aud` = the requested audience (internal-service or external-api, as the account allows), `tenant_id`, `iss`, `iat`, `exp`, `jti`. Failed attempts are throttled like logins: per (client id, address), with a per-client-id backstop and a per-address limit.',
      request: {
        body: { required: true, content: { 'application/json': { schema: ServiceTokenRequestSchema } } },
      },
      responses: {
        200: {
          description: 'Issued',
          content: { 'application/json': { schema: ServiceTokenResponseSchema } },
        },
        401: errorResponse('invalid_client (wrong id or secret) or service_account_revoked'),
        403: errorResponse('audience_not_allowed, or crypto_policy_violation for a requested alg'),
        429: errorResponse('login_throttled: too many failures; see Retry-After'),
        503: errorResponse('signing keys not configured, no key the policy allows, or a failed self-test'),
      },
    }),
    async (c) => {
      const body = c.req.valid('json')
      const settings = authSettings(c.env)
      const keys = clientThrottleKeys(body.client_id, clientAddress(c.req.raw), settings)
      const issued = await withRequestDatabase(c, 'identity', async (db) => {
        const throttled = await assertNotThrottled(db, keys)
        const [account] = await db
          .select()
          .from(serviceAccounts)
          .where(eq(serviceAccounts.id, body.client_id))
          .limit(1)
        // The secret's format is public: a malformed one costs no hashing.
        const ok = isServiceAccountSecret(body.client_secret)
          ? await verifyServiceSecret(account?.secretHash, body.client_secret)
          : false
        if (!ok || !account) {
          await recordFailure(db, keys, settings)
          throw invalidClient()
        }
        if (throttled.has(keys[0]!.key)) await clearAccount(db, keys)
        if (account.revokedAt) {
          throw new AppError(
            401,
            'service_account_revoked',
            `Service account ${account.id} was revoked on ${account.revokedAt.toISOString()}; create a new one.`,
          )
        }
        const allowed = account.audiences.filter((a): a is ServiceAccountAudience =>
          (SERVICE_ACCOUNT_AUDIENCES as readonly string[]).includes(a),
        )
        const audience = body.audience ?? allowed[0]
        if (!audience || !isAllowed(audience, allowed)) {
          throw new AppError(
            403,
            'audience_not_allowed',
            `Service account ${account.id} may request audience ${allowed.map((a) => `"${a}"`).join(' or ') || '(none)'}; it asked for "${body.audience}".${audience === 'platform' ? ' Platform tokens are issued to people: POST /auth/login.' : ''}`,
            { param: 'audience' },
          )
        }
        const token = await issueAccessToken(db, c.env, c.executionCtx, {
          tenantId: account.tenantId,
          sub: serviceAccountSubject(account.id),
          aud: audience,
          ...(body.alg ? { alg: body.alg } : {}),
          requestId: c.get('request').requestId,
          method: c.req.method,
          path: '/auth/service-token',
        })
        return { ...token, tenant_id: account.tenantId, audience }
      })
      return c.json(issued, 200, { 'cache-control': 'no-store' })
    },
  )
}
