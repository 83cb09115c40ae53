import { z } from 'zod'
import type { AuditLogNamespace } from '../../../durable-objects/audit-log/audit-client'
import { envReader, textVar, urlVar, wholeNumberVar } from '../../../shared/config/worker-env'
import { DATABASE_VARS, type DatabaseEnv } from '../../../shared/db/client'
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
  /** The workspace console (/console) and the API reference page (/docs). */
  CONSOLE: FamilyBinding
  /** The tenants' audit logs (hosted by svc-platform): enforcement decisions are appended first. */
  AUDIT_LOG?: AuditLogNamespace
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
  /**
   * The URL clients reach the gateway at: the OAuth issuer, the protected resource, links. Required
   * in a deployment; unset (a local stack), the request's origin, and only loopback Hosts answered.
   */
  PUBLIC_BASE_URL?: string
  /** Comma-separated browser origins allowed by CORS (default `*`). */
  CORS_ALLOWED_ORIGINS?: string
}

/** The gateway's configuration (README's table): one schema, parsed once per isolate. */
export const GatewaySettingsSchema = z.object({
  ...DATABASE_VARS,
  API_KEY_CACHE_TTL_SECONDS: wholeNumberVar(30, { min: 0 }),
  CRYPTO_POLICY_CACHE_TTL_SECONDS: wholeNumberVar(30, { min: 0 }),
  JWT_ISSUER: textVar('svc'),
  JWT_LEEWAY_SECONDS: wholeNumberVar(30, { min: 0, max: 300 }),
  AUTH_ACCESS_TOKEN_TTL_SECONDS: wholeNumberVar(900),
  PUBLIC_BASE_URL: urlVar(),
  CORS_ALLOWED_ORIGINS: textVar(undefined),
})
export const gatewaySettings = envReader('gateway', GatewaySettingsSchema)

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
