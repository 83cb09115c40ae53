/**
 * Access tokens: compact JWS (RFC 7515) carrying JWT claims (RFC 7519), signed with ML-DSA
 * (RFC 9964) or Ed25519, with the header `{alg, kid, typ:"JWT"}`.
 *
 * Verification order (nothing in the payload is trusted before the signature checks out):
 * 1. shape: three canonical base64url segments, bounded length;
 * 2. header: JSON object, `typ` JWT, no `crit`, `kid` present, `alg` in the caller's allow-list
 *    (so `none`, HS*, RS*, ... never get further);
 * 3. key: found by `kid` and of the same algorithm as the header (a swapped `kid` is refused);
 * 4. signature: exact length for the algorithm, then the cryptographic check;
 * 5. claims: schema, issuer, lifetime (exp - iat at most the issuer's maximum plus leeway, when the
 *    caller knows it), time (exp, nbf, iat with leeway), audience.
 *
 * Error codes (AppError): 401 `token_malformed`, `token_algorithm_not_allowed`, `token_unknown_kid`,
 * `token_key_mismatch`, `token_signature_invalid`, `token_claims_invalid`, `token_issuer_invalid`,
 * `token_lifetime_too_long`, `token_expired`, `token_not_yet_valid`; 403 `token_wrong_audience` (a genuine token for another
 * audience); 503 `crypto_self_test_failed` (the algorithm's self-tests, run before its first use,
 * failed: fail closed).
 */
import { z } from 'zod'
import { AUDIENCES, type Audience } from '../db/schema'
import { AppError } from '../http/errors'
import { describeIssues } from '../http/validation'
import { base64urlDecode, base64urlEncode, utf8, utf8Decode } from './encoding'
import {
  createVerificationKeySet,
  type SigningKey,
  type VerificationKey,
  type VerificationKeySet,
} from './jwk'
import { isJwsAlgorithm, type JwsAlgorithm, SELF_TEST_GROUP, SIGNATURE_BYTES } from './jws-algorithms'
import { defaultSelfTestSuite, type SelfTestSuite } from './self-test'

export { AUDIENCES, type Audience }

/** Longest token accepted (an ML-DSA-87 signature alone is 6,170 base64url characters). */
export const MAX_TOKEN_LENGTH = 16_384
export const DEFAULT_LEEWAY_SECONDS = 30
export const MAX_LEEWAY_SECONDS = 300

const numericDate = z.int().positive().max(253_402_300_799) // up to 9999-12-31

/**
 * A resource indicator (RFC 8707) as an audience: the absolute http(s) URL of the one resource a
 * token from the OAuth authorization server is valid at (e.g. `https://api.example.com/mcp`).
 */
export const ResourceAudienceSchema = z
  .string()
  .max(2048)
  .refine((value) => isResourceAudience(value), 'an absolute http(s) URL without fragment')

export function isResourceAudience(value: string): boolean {
  if (!/^https?:\/\//.test(value)) return false
  try {
    return new URL(value).hash === ''
  } catch {
    return false
  }
}

/** The claims this product issues. Closed: an unknown claim is a bug in the issuer. */
export const AccessTokenClaimsSchema = z.strictObject({
  sub: z.string().min(1).max(256),
  aud: z.union([z.enum(AUDIENCES), ResourceAudienceSchema]),
  iss: z.string().min(1).max(256),
  exp: numericDate,
  iat: numericDate,
  nbf: numericDate.optional(),
  jti: z.string().min(16).max(128),
  tenant_id: z.string().min(1).max(128).optional(),
  /** OAuth tokens: the granted scopes, space-separated (RFC 8693 §4.2 / RFC 9068 claim). */
  scope: z.string().min(1).max(1024).optional(),
  /** OAuth tokens: the client the token was issued to (RFC 9068). */
  client_id: z.string().min(1).max(256).optional(),
  /**
   * Tokens issued from a refresh-token family (a login, or an OAuth authorization): the family's
   * id (the registered `sid`, session id, claim). Revoking the family refuses its access tokens.
   */
  sid: z.uuid().optional(),
})
export type AccessTokenClaims = z.infer<typeof AccessTokenClaimsSchema>

/** What a verifier accepts: RFC 7519 allows an audience array and fractional NumericDates. */
const VerifiedClaimsSchema = z.looseObject({
  sub: z.string().min(1),
  aud: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  iss: z.string().min(1),
  exp: z.number().finite(),
  iat: z.number().finite(),
  nbf: z.number().finite().optional(),
  jti: z.string().min(1),
  tenant_id: z.string().min(1).optional(),
  scope: z.string().optional(),
  client_id: z.string().optional(),
  sid: z.string().optional(),
})
export type VerifiedClaims = z.infer<typeof VerifiedClaimsSchema>

const HeaderSchema = z.looseObject({
  alg: z.string(),
  kid: z.string().min(1).max(128).optional(),
  typ: z.string().optional(),
  crit: z.unknown().optional(),
})

export interface AccessTokenHeader {
  alg: JwsAlgorithm
  kid: string
  typ: 'JWT'
}

export interface VerifiedAccessToken {
  header: AccessTokenHeader
  claims: VerifiedClaims
  /** The expected audience that the token's `aud` matched (a resource URL when `acceptResources`). */
  audience: Audience | string
}

/** Looks a verification key up by `kid`; `undefined` means unknown. */
export type KeyResolver = (kid: string) => VerificationKey | undefined | Promise<VerificationKey | undefined>

export interface VerifyAccessTokenOptions {
  /** A JWKS document, a key set built once with `createVerificationKeySet`, or a resolver. */
  keys: { keys: unknown[] } | VerificationKeySet | KeyResolver
  /** Algorithms accepted for this request (e.g. from the tenant's crypto policy). */
  allowedAlgorithms: readonly JwsAlgorithm[]
  audience: Audience | readonly Audience[]
  /**
   * Also accept a token whose audience is a resource indicator (an absolute http(s) URL); the
   * caller then checks that it names the resource being called.
   */
  acceptResources?: boolean
  issuer: string | readonly string[]
  /** Clock skew tolerated for exp / nbf / iat, 0..300 s. Default 30. */
  leewaySeconds?: number
  /**
   * The longest lifetime (exp - iat, seconds) the issuer grants. A token declaring a longer one is
   * refused (401 `token_lifetime_too_long`) even with a genuine signature: a leaked or misused
   * signing key cannot mint tokens that outlive every rotation. Unset: not checked.
   */
  maxLifetimeSeconds?: number
  now?: Date
  /** Injected in tests; defaults to the isolate's memoised self-test suite. */
  selfTests?: SelfTestSuite
}

export interface SignAccessTokenOptions {
  selfTests?: SelfTestSuite
}

const unauthorized = (code: string, message: string) =>
  new AppError(401, code, message, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } })

function decodeJsonSegment(segment: string, what: string): unknown {
  const bytes = base64urlDecode(segment)
  const text = bytes && utf8Decode(bytes)
  if (text == null)
    throw unauthorized('token_malformed', `The token ${what} is not canonical base64url-encoded UTF-8.`)
  try {
    return JSON.parse(text)
  } catch {
    throw unauthorized('token_malformed', `The token ${what} is not JSON.`)
  }
}

/** Claims for a new token: `iat` now, `exp` after `ttlSeconds`, a random `jti`. */
export function buildAccessTokenClaims(input: {
  sub: string
  /** One of the audiences, or the resource URL an OAuth token is bound to. */
  aud: Audience | string
  iss: string
  ttlSeconds: number
  tenantId?: string
  scope?: string
  clientId?: string
  /** The refresh-token family the token is issued from (`sid`). */
  sessionId?: string
  now?: Date
}): AccessTokenClaims {
  const iat = Math.floor((input.now ?? new Date()).getTime() / 1000)
  const claims: AccessTokenClaims = {
    sub: input.sub,
    aud: input.aud,
    iss: input.iss,
    iat,
    exp: iat + input.ttlSeconds,
    jti: crypto.randomUUID(),
  }
  if (input.tenantId !== undefined) claims.tenant_id = input.tenantId
  if (input.scope !== undefined) claims.scope = input.scope
  if (input.clientId !== undefined) claims.client_id = input.clientId
  if (input.sessionId !== undefined) claims.sid = input.sessionId
  return claims
}

/**
 * Signs the claims as a compact JWS with header `{alg, kid, typ:"JWT"}`. The algorithm's
 * self-tests run before its first use; a failed self-test fails closed (503).
 */
export async function signAccessToken(
  claims: AccessTokenClaims,
  key: SigningKey,
  options: SignAccessTokenOptions = {},
): Promise<string> {
  await (options.selfTests ?? defaultSelfTestSuite()).assertAlgorithm(SELF_TEST_GROUP[key.alg])
  const parsed = AccessTokenClaimsSchema.safeParse(claims)
  if (!parsed.success || parsed.data.exp <= parsed.data.iat) {
    throw new AppError(
      500,
      'token_claims_invalid',
      'The access token could not be issued because its claims are invalid.',
      {
        internalMessage: parsed.success
          ? `exp ${parsed.data.exp} is not after iat ${parsed.data.iat}`
          : describeIssues(parsed.error, claims, { root: 'the claims' }),
      },
    )
  }
  const header: AccessTokenHeader = { alg: key.alg, kid: key.kid, typ: 'JWT' }
  const signingInput = `${base64urlEncode(utf8.encode(JSON.stringify(header)))}.${base64urlEncode(utf8.encode(JSON.stringify(parsed.data)))}`
  const signature = await key.sign(utf8.encode(signingInput))
  return `${signingInput}.${base64urlEncode(signature)}`
}

const keySetCache = new WeakMap<object, VerificationKeySet>()

async function resolveKey(
  keys: VerifyAccessTokenOptions['keys'],
  kid: string,
): Promise<VerificationKey | undefined> {
  if (typeof keys === 'function') return keys(kid)
  if ('resolve' in keys) return keys.resolve(kid)
  let set = keySetCache.get(keys)
  if (!set) {
    set = await createVerificationKeySet(keys)
    keySetCache.set(keys, set)
  }
  return set.resolve(kid)
}

function checkOptions(options: VerifyAccessTokenOptions): number {
  const leeway = options.leewaySeconds ?? DEFAULT_LEEWAY_SECONDS
  const unsupported = options.allowedAlgorithms.filter((alg) => !isJwsAlgorithm(alg))
  let problem: string | null = null
  if (options.allowedAlgorithms.length === 0) problem = 'allowedAlgorithms is empty'
  else if (unsupported.length > 0)
    problem = `allowedAlgorithms contains unsupported ${unsupported.join(', ')}`
  else if (!Number.isFinite(leeway) || leeway < 0 || leeway > MAX_LEEWAY_SECONDS) {
    problem = `leewaySeconds must be 0..${MAX_LEEWAY_SECONDS} (got ${leeway})`
  } else if (
    options.maxLifetimeSeconds !== undefined &&
    !(Number.isFinite(options.maxLifetimeSeconds) && options.maxLifetimeSeconds > 0)
  ) {
    problem = `maxLifetimeSeconds must be a positive number of seconds (got ${options.maxLifetimeSeconds})`
  }
  if (problem) {
    throw new AppError(500, 'token_verifier_misconfigured', 'The token verifier is misconfigured.', {
      internalMessage: problem,
    })
  }
  return leeway
}

/** Verifies a compact JWS access token; see the module comment for the order of checks and the error codes. */
export async function verifyAccessToken(
  token: string,
  options: VerifyAccessTokenOptions,
): Promise<VerifiedAccessToken> {
  const leeway = checkOptions(options)

  if (typeof token !== 'string' || token.length === 0)
    throw unauthorized('token_malformed', 'The bearer token is empty.')
  if (token.length > MAX_TOKEN_LENGTH) {
    throw unauthorized('token_malformed', `The bearer token is longer than ${MAX_TOKEN_LENGTH} characters.`)
  }
  const segments = token.split('.')
  // An empty signature part is left to the algorithm and length checks, so `alg: none` tokens are
  // reported as a refused algorithm rather than as a malformed token.
  if (segments.length !== 3 || segments[0] === '' || segments[1] === '') {
    throw unauthorized(
      'token_malformed',
      'The bearer token must be a compact JWS: three base64url parts separated by dots.',
    )
  }
  const [headerSegment, payloadSegment, signatureSegment] = segments as [string, string, string]

  const headerJson = decodeJsonSegment(headerSegment, 'header')
  const header = HeaderSchema.safeParse(headerJson, { reportInput: true })
  if (!header.success)
    throw unauthorized(
      'token_malformed',
      `The token header is invalid: ${describeIssues(header.error, headerJson, { root: 'the header' })}.`,
    )
  const { alg, kid, typ, crit } = header.data
  const allowed = options.allowedAlgorithms as readonly string[]
  if (alg.toLowerCase() === 'none') {
    throw unauthorized('token_algorithm_not_allowed', 'Unsecured tokens (alg "none") are never accepted.')
  }
  if (!allowed.includes(alg)) {
    throw unauthorized(
      'token_algorithm_not_allowed',
      `Token algorithm "${alg}" is not accepted here; accepted algorithms: ${allowed.join(', ')}.`,
    )
  }
  if (typ === undefined || typ.toUpperCase() !== 'JWT') {
    throw unauthorized(
      'token_malformed',
      `The token header must have typ "JWT" (got ${typ === undefined ? 'none' : `"${typ}"`}).`,
    )
  }
  if (crit !== undefined) {
    throw unauthorized(
      'token_malformed',
      'The token header lists critical extensions ("crit"), which this service does not support.',
    )
  }
  if (kid === undefined) throw unauthorized('token_malformed', 'The token header has no "kid".')

  const key = await resolveKey(options.keys, kid)
  if (!key)
    throw unauthorized('token_unknown_kid', `No signing key with kid "${kid}" is known; fetch a fresh token.`)
  if (key.alg !== alg) {
    throw unauthorized(
      'token_key_mismatch',
      `Key "${kid}" is a ${key.alg} key, but the token header says ${alg}.`,
    )
  }

  // Self-tests of the algorithm before its first use here; fails closed with 503.
  await (options.selfTests ?? defaultSelfTestSuite()).assertAlgorithm(SELF_TEST_GROUP[key.alg])

  const signature = base64urlDecode(signatureSegment)
  if (!signature) throw unauthorized('token_malformed', 'The token signature is not canonical base64url.')
  const expectedLength = SIGNATURE_BYTES[key.alg]
  if (signature.length !== expectedLength) {
    throw unauthorized(
      'token_signature_invalid',
      `A ${key.alg} signature is ${expectedLength} bytes; this token's is ${signature.length}.`,
    )
  }
  if (!(await key.verify(utf8.encode(`${headerSegment}.${payloadSegment}`), signature))) {
    throw unauthorized('token_signature_invalid', 'The token signature does not verify.')
  }

  const claimsJson = decodeJsonSegment(payloadSegment, 'payload')
  const parsedClaims = VerifiedClaimsSchema.safeParse(claimsJson, { reportInput: true })
  if (!parsedClaims.success) {
    throw unauthorized(
      'token_claims_invalid',
      `The token claims are invalid: ${describeIssues(parsedClaims.error, claimsJson, { root: 'the claims' })}.`,
    )
  }
  const claims = parsedClaims.data

  const issuers: readonly string[] = typeof options.issuer === 'string' ? [options.issuer] : options.issuer
  if (!issuers.includes(claims.iss))
    throw unauthorized('token_issuer_invalid', `Tokens from issuer "${claims.iss}" are not accepted.`)

  const lifetime = claims.exp - claims.iat
  if (options.maxLifetimeSeconds !== undefined && lifetime > options.maxLifetimeSeconds + leeway) {
    throw unauthorized(
      'token_lifetime_too_long',
      `The token declares a lifetime of ${lifetime} s (exp - iat), longer than the ${options.maxLifetimeSeconds} s this issuer grants; get a new token from the issuer.`,
    )
  }

  const now = (options.now ?? new Date()).getTime() / 1000
  if (now >= claims.exp + leeway) {
    throw unauthorized(
      'token_expired',
      `The token expired at ${new Date(claims.exp * 1000).toISOString()}; refresh it.`,
    )
  }
  if (claims.nbf !== undefined && claims.nbf > now + leeway) {
    throw unauthorized(
      'token_not_yet_valid',
      `The token is not valid before ${new Date(claims.nbf * 1000).toISOString()}.`,
    )
  }
  if (claims.iat > now + leeway) {
    throw unauthorized(
      'token_not_yet_valid',
      `The token was issued in the future (${new Date(claims.iat * 1000).toISOString()}).`,
    )
  }

  const expected: readonly Audience[] =
    typeof options.audience === 'string' ? [options.audience] : options.audience
  const tokenAudiences = typeof claims.aud === 'string' ? [claims.aud] : claims.aud
  const audience =
    expected.find((a) => tokenAudiences.includes(a)) ??
    (options.acceptResources ? tokenAudiences.find(isResourceAudience) : undefined)
  if (!audience) {
    throw new AppError(
      403,
      'token_wrong_audience',
      `This token is for audience ${tokenAudiences.map((a) => `"${a}"`).join(', ')}; this endpoint requires ${expected.map((a) => `"${a}"`).join(' or ')}.`,
    )
  }
  return { header: { alg: key.alg, kid, typ: 'JWT' }, claims, audience }
}
