/**
 * Errors of the OAuth endpoints in the shape their RFCs prescribe, `{"error","error_description"}`
 * (RFC 6749 §5.2, RFC 7591 §3.2.2), rendered by the worker's one error handler like any AppError
 * (only the body differs), so clients' OAuth libraries read them.
 */
import { AppError } from '../../../../shared/http/errors'

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'access_denied'
  | 'unsupported_response_type'
  | 'server_error'
  | 'temporarily_unavailable'
  /** Not an RFC code: too many registrations from one address (registration-throttle.ts). */
  | 'registration_throttled'

export class OAuthError extends AppError {
  constructor(
    status: number,
    error: OAuthErrorCode,
    description: string,
    headers: Record<string, string> = {},
  ) {
    super(status, error, description, { headers: { 'cache-control': 'no-store', ...headers } })
  }

  override toBody(): Record<string, unknown> {
    return { error: this.code, error_description: this.message }
  }
}

/** 400 unless said otherwise; `invalid_client` is 401 (RFC 6749 §5.2). */
export const oauthError = (error: OAuthErrorCode, description: string) =>
  new OAuthError(error === 'invalid_client' ? 401 : 400, error, description)
