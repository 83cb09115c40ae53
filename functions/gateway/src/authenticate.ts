/**
 * Credential dispatch: `Authorization: Bearer <credential>` carries either an API key
 * (`svc_sk_live_...` / `svc_sk_test_...`) or a signed access token (JWT). Each kind has its own
 * verifier; both produce the same `Identity`.
 */
import { AppError } from '../../../shared/http/errors'
import type { Audience, Identity } from '../../../shared/worker/request-context'
import { authenticateAccessToken } from './access-token-auth'
import { authenticateApiKey } from './api-key-auth'
import type { GatewayEnv } from './gateway.context'

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
): Promise<Identity> {
  const credential = bearerCredential(request.headers.get('authorization'))
  if (credential.startsWith('svc_sk_')) return authenticateApiKey(credential, env, ctx)
  if (JWT_SHAPE.test(credential)) return authenticateAccessToken(credential, audiences, env, ctx)
  throw new AppError(
    401,
    'invalid_credential',
    'The bearer credential is neither an API key nor an access token.',
  )
}
