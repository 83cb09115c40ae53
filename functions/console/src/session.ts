/**
 * Console sessions. A person signs in with the product's password login (POST /auth/login through
 * the gateway, so throttling, Argon2id, membership and the `token.issued` audit entry are the
 * API's own); the browser then holds one opaque secret (`svc_cs_…`, 256 bits) in a cookie that is
 * HttpOnly, Secure and SameSite=Strict with the `__Host-` prefix (no Domain, Path=/). The access
 * and refresh tokens never reach the browser: they are sealed with AES-256-GCM under a key derived
 * (HKDF-SHA-256) from that secret and stored beside the secret's SHA-256 in `console_sessions`,
 * so neither a stolen database nor a stolen page opens a session on its own. The console calls the
 * API with the access token like any client and refreshes it with the refresh token when it runs
 * out (a refused refresh, e.g. membership ended, ends the session).
 *
 * A session ends on sign-out, after CONSOLE_SESSION_TTL_SECONDS (absolute, default 8 h) or
 * CONSOLE_SESSION_IDLE_SECONDS without a request (default 30 min). CSRF: every state-changing
 * request carries a token derived from the session secret (HMAC-SHA-256; the page embeds it, a
 * cross-site page cannot read it) and must come from the console's own origin (Origin or
 * Sec-Fetch-Site); the sign-in form, before any session, uses a double-submit cookie.
 */
import { and, eq, gt, isNull, lt } from 'drizzle-orm'
import { base62, hashApiKey } from '../../../shared/auth/api-keys'
import { base64urlDecode, base64urlEncode, constantTimeEqual, utf8 } from '../../../shared/crypto/encoding'
import type { Drizzle } from '../../../shared/db/client'
import { consoleSessions } from '../../../shared/db/schema'
import { AppError } from '../../../shared/http/errors'

export const SESSION_COOKIE = '__Host-svc_console'
export const SIGN_IN_CSRF_COOKIE = '__Host-svc_console_csrf'
const SECRET_PREFIX = 'svc_cs_'
const SECRET_SHAPE = /^svc_cs_[0-9A-Za-z]{43}$/

export interface SessionSettings {
  ttlSeconds: number
  idleSeconds: number
}

export function sessionSettings(env: {
  CONSOLE_SESSION_TTL_SECONDS?: string
  CONSOLE_SESSION_IDLE_SECONDS?: string
}): SessionSettings {
  const seconds = (value: string | undefined, fallback: number) => {
    const n = Number(value)
    return value !== undefined && Number.isInteger(n) && n > 0 ? n : fallback
  }
  return {
    ttlSeconds: seconds(env.CONSOLE_SESSION_TTL_SECONDS, 8 * 3600),
    idleSeconds: seconds(env.CONSOLE_SESSION_IDLE_SECONDS, 30 * 60),
  }
}

/** What a session holds for the console to call the API with. */
export interface SessionTokens {
  accessToken: string
  refreshToken: string
  /** When the access token expires (ms since the epoch). */
  accessExpiresAt: number
}

export interface ConsoleSession {
  id: string
  secret: string
  tenantId: string
  userId: string
  tokens: SessionTokens
  expiresAt: Date
  lastSeenAt: Date
}

export function newSessionSecret(): string {
  return SECRET_PREFIX + base62(crypto.getRandomValues(new Uint8Array(32)))
}

async function hmac(secret: string, label: string): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey(
    'raw',
    utf8.encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  )
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, utf8.encode(label)))
}

/** The CSRF token of a session (or of a sign-in cookie): HMAC-SHA-256(secret, "csrf"), base64url. */
export async function csrfTokenFor(secret: string): Promise<string> {
  return base64urlEncode(await hmac(secret, 'svc console csrf v1'))
}

export async function csrfMatches(secret: string, presented: string | undefined): Promise<boolean> {
  if (!presented) return false
  const expected = utf8.encode(await csrfTokenFor(secret))
  const given = utf8.encode(presented)
  return expected.length === given.length && constantTimeEqual(expected, given)
}

async function sealingKey(secret: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey('raw', utf8.encode(secret), 'HKDF', false, ['deriveKey'])
  return crypto.subtle.deriveKey(
    {
      name: 'HKDF',
      hash: 'SHA-256',
      salt: new Uint8Array(32),
      info: utf8.encode('svc console session tokens v1'),
    },
    material,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  )
}

/** `v1.<iv>.<ciphertext>` (base64url), AES-256-GCM, the session id as associated data. */
export async function sealTokens(secret: string, sessionId: string, tokens: SessionTokens): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const sealed = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: utf8.encode(sessionId) },
    await sealingKey(secret),
    utf8.encode(JSON.stringify(tokens)),
  )
  return `v1.${base64urlEncode(iv)}.${base64urlEncode(new Uint8Array(sealed))}`
}

export async function openTokens(
  secret: string,
  sessionId: string,
  sealed: string,
): Promise<SessionTokens | null> {
  const [version, ivText, dataText] = sealed.split('.')
  const iv = ivText ? base64urlDecode(ivText) : null
  const data = dataText ? base64urlDecode(dataText) : null
  if (version !== 'v1' || !iv || !data) return null
  try {
    const plain = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: new Uint8Array(iv), additionalData: utf8.encode(sessionId) },
      await sealingKey(secret),
      new Uint8Array(data),
    )
    const parsed = JSON.parse(new TextDecoder().decode(plain)) as SessionTokens
    return typeof parsed.accessToken === 'string' && typeof parsed.refreshToken === 'string' ? parsed : null
  } catch {
    return null
  }
}

/** The cookie that carries a session secret (or clears it with maxAge 0). */
export function sessionCookie(secret: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${secret}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=${maxAgeSeconds}`
}

export function signInCsrfCookie(value: string, maxAgeSeconds: number): string {
  return `${SIGN_IN_CSRF_COOKIE}=${value}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=${maxAgeSeconds}`
}

export function cookieValue(header: string | null | undefined, name: string): string | undefined {
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

export function isSessionSecret(value: string | undefined): value is string {
  return value !== undefined && SECRET_SHAPE.test(value)
}

export async function createSession(
  db: Drizzle,
  input: { tenantId: string; userId: string; tokens: SessionTokens; settings: SessionSettings; now?: Date },
): Promise<{ secret: string; expiresAt: Date }> {
  const now = input.now ?? new Date()
  const secret = newSessionSecret()
  const id = crypto.randomUUID()
  const expiresAt = new Date(now.getTime() + input.settings.ttlSeconds * 1000)
  await db.insert(consoleSessions).values({
    id,
    secretHash: await hashApiKey(secret),
    tenantId: input.tenantId,
    userId: input.userId,
    sealedTokens: await sealTokens(secret, id, input.tokens),
    accessExpiresAt: new Date(input.tokens.accessExpiresAt),
    createdAt: now,
    lastSeenAt: now,
    expiresAt,
  })
  return { secret, expiresAt }
}

/** The live session a cookie names, or null (unknown, ended, expired, idle too long, unreadable). */
export async function loadSession(
  db: Drizzle,
  secret: string,
  settings: SessionSettings,
  now = new Date(),
): Promise<ConsoleSession | null> {
  const [row] = await db
    .select()
    .from(consoleSessions)
    .where(
      and(
        eq(consoleSessions.secretHash, await hashApiKey(secret)),
        isNull(consoleSessions.endedAt),
        gt(consoleSessions.expiresAt, now),
        gt(consoleSessions.lastSeenAt, new Date(now.getTime() - settings.idleSeconds * 1000)),
      ),
    )
    .limit(1)
  if (!row) return null
  const tokens = await openTokens(secret, row.id, row.sealedTokens)
  if (!tokens) return null
  // Idle time is counted from the last request, written at most once a minute.
  if (now.getTime() - row.lastSeenAt.getTime() > 60_000) {
    await db
      .update(consoleSessions)
      .set({ lastSeenAt: now })
      .where(and(eq(consoleSessions.id, row.id), lt(consoleSessions.lastSeenAt, now)))
  }
  return {
    id: row.id,
    secret,
    tenantId: row.tenantId,
    userId: row.userId,
    tokens,
    expiresAt: row.expiresAt,
    lastSeenAt: row.lastSeenAt,
  }
}

export async function storeRefreshedTokens(
  db: Drizzle,
  session: ConsoleSession,
  tokens: SessionTokens,
): Promise<void> {
  await db
    .update(consoleSessions)
    .set({
      sealedTokens: await sealTokens(session.secret, session.id, tokens),
      accessExpiresAt: new Date(tokens.accessExpiresAt),
    })
    .where(eq(consoleSessions.id, session.id))
  session.tokens = tokens
}

/** Ends a session and drops its sealed tokens, so not even the old cookie could open them again. */
export async function endSession(db: Drizzle, sessionId: string, now = new Date()): Promise<void> {
  await db
    .update(consoleSessions)
    .set({ endedAt: now, sealedTokens: '' })
    .where(and(eq(consoleSessions.id, sessionId), isNull(consoleSessions.endedAt)))
}

/**
 * A state change must come from the console's own pages: the Origin header, when the browser sends
 * one, must be the console's origin, and Sec-Fetch-Site must not say cross-site. (The CSRF token is
 * checked as well; either defence alone would stop a cross-site form.)
 */
export function checkSameOrigin(request: Request, expectedOrigin: string): void {
  const origin = request.headers.get('origin')
  const site = request.headers.get('sec-fetch-site')
  if ((origin !== null && origin !== expectedOrigin) || site === 'cross-site' || site === 'same-site') {
    throw new AppError(
      403,
      'csrf_origin_mismatch',
      `This form was sent from ${origin ?? site ?? 'another site'}, not from the console at ${expectedOrigin}.`,
    )
  }
}
