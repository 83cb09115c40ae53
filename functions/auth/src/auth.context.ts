import { z } from 'zod'
import type { AuditLogNamespace } from '../../../durable-objects/audit-log/audit-client'
import { envReader, textVar, wholeNumberVar } from '../../../shared/config/worker-env'
import { DATABASE_VARS, type DatabaseEnv } from '../../../shared/db/client'

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
  /** Failed logins to one account from one client address within the window before that address is locked out of it (default 5). */
  AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS?: string
  /** Failed logins to one account from all addresses within the window before it is locked for everyone (default 100). */
  AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT?: string
  /** Failed logins per client address within the window before a lockout (default 20). */
  AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS?: string
  /** Counting window for failed logins in seconds (default 900). */
  AUTH_LOGIN_WINDOW_SECONDS?: string
  /** Lockout after too many failures, in seconds (default 900). */
  AUTH_LOGIN_LOCKOUT_SECONDS?: string
  /** OAuth client registrations one client address may make per window (default 10). */
  OAUTH_REGISTRATIONS_PER_ADDRESS?: string
  /** The window of OAUTH_REGISTRATIONS_PER_ADDRESS, in seconds (default 3600). */
  OAUTH_REGISTRATION_WINDOW_SECONDS?: string
  /** A registered OAuth client that has not completed an authorization this long after registering is deleted (seconds, default 86400). */
  OAUTH_UNUSED_CLIENT_TTL_SECONDS?: string
}

export const DEFAULT_ISSUER = 'svc'

export interface AuthSettings {
  issuer: string
  accessTokenTtlSeconds: number
  refreshTokenTtlSeconds: number
  maxFailuresPerAccountAddress: number
  maxFailuresPerAccount: number
  maxFailuresPerAddress: number
  windowSeconds: number
  lockoutSeconds: number
  registrationsPerAddress: number
  registrationWindowSeconds: number
  unusedClientTtlSeconds: number
}

/** The auth worker's configuration (README's table): one schema, parsed once per isolate. */
export const AuthSettingsSchema = z
  .object({
    ...DATABASE_VARS,
    JWT_ISSUER: textVar(DEFAULT_ISSUER),
    AUTH_ACCESS_TOKEN_TTL_SECONDS: wholeNumberVar(900),
    AUTH_REFRESH_TOKEN_TTL_SECONDS: wholeNumberVar(30 * 24 * 3600),
    AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS: wholeNumberVar(5),
    AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT: wholeNumberVar(100),
    AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS: wholeNumberVar(20),
    AUTH_LOGIN_WINDOW_SECONDS: wholeNumberVar(900),
    AUTH_LOGIN_LOCKOUT_SECONDS: wholeNumberVar(900),
    OAUTH_REGISTRATIONS_PER_ADDRESS: wholeNumberVar(10),
    OAUTH_REGISTRATION_WINDOW_SECONDS: wholeNumberVar(3600),
    OAUTH_UNUSED_CLIENT_TTL_SECONDS: wholeNumberVar(24 * 3600),
  })
  .transform(
    (v): AuthSettings => ({
      issuer: v.JWT_ISSUER,
      accessTokenTtlSeconds: v.AUTH_ACCESS_TOKEN_TTL_SECONDS,
      refreshTokenTtlSeconds: v.AUTH_REFRESH_TOKEN_TTL_SECONDS,
      maxFailuresPerAccountAddress: v.AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS,
      maxFailuresPerAccount: v.AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT,
      maxFailuresPerAddress: v.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS,
      windowSeconds: v.AUTH_LOGIN_WINDOW_SECONDS,
      lockoutSeconds: v.AUTH_LOGIN_LOCKOUT_SECONDS,
      registrationsPerAddress: v.OAUTH_REGISTRATIONS_PER_ADDRESS,
      registrationWindowSeconds: v.OAUTH_REGISTRATION_WINDOW_SECONDS,
      unusedClientTtlSeconds: v.OAUTH_UNUSED_CLIENT_TTL_SECONDS,
    }),
  )
export const authSettings: (env: AuthEnv) => AuthSettings = envReader('auth', AuthSettingsSchema)
