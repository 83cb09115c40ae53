/**
 * Opaque credentials other than API keys, each a prefix plus 43 base62 characters (256 random
 * bits), so a leaked one is recognisable by secret scanners and by eye:
 * - `svc_sa_…`: a service-account secret (stored as an Argon2id hash, see service-accounts.ts);
 * - `svc_rt_…`: a refresh token (stored as its SHA-256: 256-bit secrets need no slow hash);
 * - `svc_ot_…`: an observability token, for OTLP ingestion only (stored as its SHA-256);
 * - `svc_ac_…`: an OAuth authorization code (stored as its SHA-256, single use, short-lived).
 * OAuth client ids (`svc_oc_…`) have the same shape but are public identifiers, not secrets.
 */
import { base62 } from './api-keys'

export const SERVICE_ACCOUNT_SECRET_PREFIX = 'svc_sa_'
export const REFRESH_TOKEN_PREFIX = 'svc_rt_'
export const OBSERVABILITY_TOKEN_PREFIX = 'svc_ot_'
export const AUTHORIZATION_CODE_PREFIX = 'svc_ac_'
export const OAUTH_CLIENT_ID_PREFIX = 'svc_oc_'

const SHAPE = (prefix: string) => new RegExp(`^${prefix}[0-9A-Za-z]{43}$`)
const SERVICE_ACCOUNT_SECRET = SHAPE(SERVICE_ACCOUNT_SECRET_PREFIX)
const REFRESH_TOKEN = SHAPE(REFRESH_TOKEN_PREFIX)
const OBSERVABILITY_TOKEN = SHAPE(OBSERVABILITY_TOKEN_PREFIX)
const AUTHORIZATION_CODE = SHAPE(AUTHORIZATION_CODE_PREFIX)

function generate(prefix: string): string {
  return prefix + base62(crypto.getRandomValues(new Uint8Array(32)))
}

export const generateServiceAccountSecret = () => generate(SERVICE_ACCOUNT_SECRET_PREFIX)
export const generateRefreshToken = () => generate(REFRESH_TOKEN_PREFIX)
export const generateObservabilityToken = () => generate(OBSERVABILITY_TOKEN_PREFIX)

export const isServiceAccountSecret = (value: string) => SERVICE_ACCOUNT_SECRET.test(value)
export const isRefreshToken = (value: string) => REFRESH_TOKEN.test(value)
export const isObservabilityToken = (value: string) => OBSERVABILITY_TOKEN.test(value)
export const generateAuthorizationCode = () => generate(AUTHORIZATION_CODE_PREFIX)
export const generateOAuthClientId = () => generate(OAUTH_CLIENT_ID_PREFIX)

export const isAuthorizationCode = (value: string) => AUTHORIZATION_CODE.test(value)
