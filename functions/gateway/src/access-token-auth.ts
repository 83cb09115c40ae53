/**
 * Access-token (JWT) verification seam. Tokens are issued by the auth family and signed with
 * ML-DSA or EdDSA; the verifier checks the algorithm against the tenant's crypto policy,
 * signature, expiry, audience and tenant. Until a signing key set is configured the gateway
 * accepts API keys only and says so.
 */
import { AppError } from '../../../shared/http/errors'
import type { Identity } from '../../../shared/worker/request-context'
import type { GatewayEnv } from './gateway.context'

export async function authenticateAccessToken(
  _token: string,
  _request: Request,
  _env: GatewayEnv,
): Promise<Identity> {
  throw new AppError(
    401,
    'access_tokens_unavailable',
    'Access tokens are not accepted by this deployment yet; use an API key.',
  )
}
