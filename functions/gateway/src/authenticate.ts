/**
 * Credential dispatch: `Authorization: Bearer <credential>` carries an API key
 * (`svc_sk_live_...` / `svc_sk_test_...`), an observability token (`svc_ot_...`, OTLP ingestion
 * only) or a signed access token (JWT). Each kind has its own verifier; all produce the same
 * `Identity`. Which kinds a route takes is the gateway's check (checkCredentialKind).
 */
import { OBSERVABILITY_TOKEN_PREFIX } from '../../../shared/auth/opaque-credentials'
import { AppError } from '../../../shared/http/errors'
import type { Audience, Identity } from '../../../shared/worker/request-context'
import { authenticateAccessToken } from './access-token-auth'
import { authenticateApiKey } from './api-key-auth'
import type { GatewayEnv } from './gateway.context'
import { authenticateObservabilityToken } from './observability-token-auth'

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/

export function bearerCredential(header: string | null): string {
  if (!header) {
    throw new AppError(
      401,
      'missing_credential',
      'Send a credential as "Authorization: Bearer <API key or access token>".',
    )
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
  if (!match) {
    throw new AppError(
      401,
      'invalid_authorization_header',
      'The Authorization header must be "Bearer <API key or access token>".',
    )
  }
  return match[1]!
}

/**
 * `audiences`: the access-token audiences the matched route accepts (null when the path matched no
 * route). API keys are accepted on every credential route.
 */
export async function authenticate(
  request: Request,
  audiences: readonly Audience[] | null,
  env: GatewayEnv,
  ctx: Pick<ExecutionContext, 'waitUntil'>,
  /** The OAuth protected resource the route is (the MCP endpoint), for resource-bound tokens. */
  resource: string | null = null,
): Promise<Identity> {
  const credential = bearerCredential(request.headers.get('authorization'))
  if (credential.startsWith('svc_sk_')) return authenticateApiKey(credential, env, ctx)
  if (credential.startsWith(OBSERVABILITY_TOKEN_PREFIX))
    return authenticateObservabilityToken(credential, env, ctx)
  if (JWT_SHAPE.test(credential)) return authenticateAccessToken(credential, audiences, env, ctx, resource)
  throw new AppError(
    401,
    'invalid_credential',
    'The bearer credential is neither an API key nor an access token.',
  )
}
