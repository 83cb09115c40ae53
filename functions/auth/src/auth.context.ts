import type { AuditLogNamespace } from '../../../shared/audit/audit-client'
import type { DatabaseEnv } from '../../../shared/db/client'

/** Bindings and configuration of the auth worker (functions/auth/wrangler.toml). See README. */
export interface AuthEnv extends DatabaseEnv {
  /** The audit logs (hosted by svc-platform): issued tokens, revoked sessions, key changes. */
  AUDIT_LOG?: AuditLogNamespace
  /**
   * Secret: JSON array of private JWKs (ML-DSA `AKP` with `priv`, Ed25519 `OKP` with `d`), newest
   * first. The first key of each algorithm signs; the others only verify (keep a rotated-out key
   * until the tokens it signed have expired: AUTH_ACCESS_TOKEN_TTL_SECONDS plus leeway).
   */
  JWT_SIGNING_KEYS?: string
  /** `iss` of issued tokens; the gateway accepts only this issuer (default `svc`). */
  JWT_ISSUER?: string
  /** Lifetime of access tokens in seconds (default 900). */
  AUTH_ACCESS_TOKEN_TTL_SECONDS?: string
  /** Lifetime of each refresh token in seconds (default 2592000, 30 days). */
  AUTH_REFRESH_TOKEN_TTL_SECONDS?: string
  /** Failed logins per account within the window before a lockout (default 5). */
  AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT?: string
  /** Failed logins per client address within the window before a lockout (default 20). */
  AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS?: string
  /** Counting window for failed logins in seconds (default 900). */
  AUTH_LOGIN_WINDOW_SECONDS?: string
  /** Lockout after too many failures, in seconds (default 900). */
  AUTH_LOGIN_LOCKOUT_SECONDS?: string
}

export const DEFAULT_ISSUER = 'svc'

function positiveInt(value: string | undefined, fallback: number): number {
  const n = Number(value)
  return value !== undefined && Number.isInteger(n) && n > 0 ? n : fallback
}

export interface AuthSettings {
  issuer: string
  accessTokenTtlSeconds: number
  refreshTokenTtlSeconds: number
  maxFailuresPerAccount: number
  maxFailuresPerAddress: number
  windowSeconds: number
  lockoutSeconds: number
}

export function authSettings(env: AuthEnv): AuthSettings {
  return {
    issuer: env.JWT_ISSUER?.trim() || DEFAULT_ISSUER,
    accessTokenTtlSeconds: positiveInt(env.AUTH_ACCESS_TOKEN_TTL_SECONDS, 900),
    refreshTokenTtlSeconds: positiveInt(env.AUTH_REFRESH_TOKEN_TTL_SECONDS, 30 * 24 * 3600),
    maxFailuresPerAccount: positiveInt(env.AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT, 5),
    maxFailuresPerAddress: positiveInt(env.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS, 20),
    windowSeconds: positiveInt(env.AUTH_LOGIN_WINDOW_SECONDS, 900),
    lockoutSeconds: positiveInt(env.AUTH_LOGIN_LOCKOUT_SECONDS, 900),
  }
}
