import type { DatabaseEnv } from '../../../shared/db/client'
import type { FamilyEntrypoint } from '../../../shared/worker/family-entrypoint'
import type AuthWorker from '../../auth/src/index'

type FamilyBinding = Service<FamilyEntrypoint>

/** Bindings and configuration of the gateway (wrangler.toml at the repository root). */
export interface GatewayEnv extends DatabaseEnv {
  MODELS: FamilyBinding
  CHAT: FamilyBinding
  CODE: FamilyBinding
  KNOWLEDGE: FamilyBinding
  REASONING: FamilyBinding
  MCP: FamilyBinding
  /** The auth family; besides `handle` it answers `verificationKeys()` (the public JWKS). */
  AUTH: Service<AuthWorker>
  TELEMETRY: FamilyBinding
  PLATFORM: FamilyBinding
  /** How long a verified API key (or token principal) stays cached in an isolate (seconds, default 30). */
  API_KEY_CACHE_TTL_SECONDS?: string
  /** How long a tenant's crypto policy stays cached in an isolate (seconds, default 30). */
  CRYPTO_POLICY_CACHE_TTL_SECONDS?: string
  /** `iss` accepted on access tokens (default `svc`; must equal the auth worker's JWT_ISSUER). */
  JWT_ISSUER?: string
  /** Clock skew tolerated on exp / nbf / iat, seconds (default 30, at most 300). */
  JWT_LEEWAY_SECONDS?: string
  /**
   * The auth worker's access-token lifetime in seconds (default 900; set the same value on both):
   * a token declaring a longer lifetime (exp - iat, beyond the leeway) is refused.
   */
  AUTH_ACCESS_TOKEN_TTL_SECONDS?: string
  /** Public base URL when the gateway sits behind another proxy (default: the request's origin). */
  PUBLIC_BASE_URL?: string
  /** Comma-separated browser origins allowed by CORS (default `*`). */
  CORS_ALLOWED_ORIGINS?: string
}

export interface GatewayVariables {
  requestId: string
  /** The request URL, parsed once. */
  url: URL
  baseUrl: string
  /** The request's Origin when CORS allows it (null otherwise). */
  origin: string | null
}

export interface GatewayApp {
  Bindings: GatewayEnv
  Variables: GatewayVariables
}
