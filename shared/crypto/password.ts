/**
 * Password hashing with Argon2id (RFC 9106) from @noble/hashes, stored as a PHC string:
 *
 *   $argon2id$v=19$m=19456,t=2,p=1$<salt, base64 without padding>$<32-byte hash, base64 without padding>
 *
 * which is the format libargon2, argon2-cffi, Passlib and PHP read, so stored hashes can move.
 *
 * Why Argon2id and these parameters (measured inside workerd, see docs/crypto.md):
 * - PBKDF2-SHA-256 via WebCrypto is native and fast (~17 ms per 100k iterations), but production
 *   Workers refuse more than 100,000 iterations (workerd issue #1346), a sixth of OWASP's 600,000.
 * - scrypt in JS costs 1.5 s at N=2^14 (r=8, p=1) and 4.7 s at OWASP's N=2^14, p=5: too slow.
 * - Argon2id at OWASP's first recommendation (m=19 MiB, t=2, p=1) costs ~280 ms of CPU and 19 MiB,
 *   well inside a paid Worker's CPU and 128 MB memory limits.
 *
 * `needsRehash` tells the login handler to re-hash after a successful verify when the stored
 * parameters differ from the current ones, so the cost can be raised later without a migration.
 */
import { argon2id } from '@noble/hashes/argon2.js'
import { AppError } from '../http/errors'
import { base64Decode, base64Encode, constantTimeEqual, utf8 } from './encoding'
import { defaultSelfTestSuite } from './self-test'

export interface Argon2idParams {
  /** Memory in KiB. */
  m: number
  /** Passes. */
  t: number
  /** Lanes. */
  p: number
}

/** OWASP Password Storage Cheat Sheet, first Argon2id option. */
export const CURRENT_PASSWORD_PARAMS: Readonly<Argon2idParams> = Object.freeze({ m: 19_456, t: 2, p: 1 })

/** Upper bounds accepted when verifying a stored hash, so a tampered record cannot exhaust the isolate. */
const LIMITS: Readonly<Argon2idParams> = { m: 65_536, t: 10, p: 4 }
const SALT_BYTES = 16
const HASH_BYTES = 32
const ARGON2_VERSION = 19
/** Longest password accepted, in UTF-8 bytes after NFKC normalisation. */
export const MAX_PASSWORD_BYTES = 1024

const PHC = /^\$argon2id\$v=(\d+)\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/

/** PHC base64: the standard alphabet without padding. */
const encodeB64 = (bytes: Uint8Array) => base64Encode(bytes).replace(/=+$/, '')

/** Decodes PHC base64; null unless canonical, so one hash has exactly one spelling. */
function decodeB64(text: string): Uint8Array | null {
  if (text.includes('=') || text.length % 4 === 1) return null
  return base64Decode(text + '='.repeat((4 - (text.length % 4)) % 4))
}

/** NIST SP 800-63B §5.1.1.2: normalise Unicode so the same password typed differently matches. */
function passwordBytes(password: string): Uint8Array {
  return utf8.encode(password.normalize('NFKC'))
}

interface ParsedHash {
  version: number
  params: Argon2idParams
  salt: Uint8Array
  hash: Uint8Array
}

function parsePhc(encoded: string): ParsedHash | null {
  const match = PHC.exec(encoded)
  if (!match) return null
  const [, version = '', m = '', t = '', p = '', saltText = '', hashText = ''] = match
  const salt = decodeB64(saltText)
  const hash = decodeB64(hashText)
  if (!salt || !hash) return null
  return { version: Number(version), params: { m: Number(m), t: Number(t), p: Number(p) }, salt, hash }
}

function derive(password: Uint8Array, salt: Uint8Array, params: Argon2idParams, dkLen: number): Uint8Array {
  return argon2id(password, salt, { m: params.m, t: params.t, p: params.p, dkLen, version: 0x13 })
}

function assertParams(params: Argon2idParams): void {
  const ok =
    Number.isInteger(params.m) &&
    Number.isInteger(params.t) &&
    Number.isInteger(params.p) &&
    params.p >= 1 &&
    params.p <= LIMITS.p &&
    params.t >= 1 &&
    params.t <= LIMITS.t &&
    params.m >= 8 * params.p &&
    params.m <= LIMITS.m
  if (!ok) {
    throw new AppError(
      500,
      'password_hash_unsupported',
      'The stored password hash uses parameters this service does not accept.',
      {
        internalMessage: `argon2id m=${params.m},t=${params.t},p=${params.p} outside m<=${LIMITS.m}, t 1..${LIMITS.t}, p 1..${LIMITS.p}`,
      },
    )
  }
}

/** Hashes a password for storage. Throws 400 `password_invalid` for an empty or over-long password. */
export async function hashPassword(
  password: string,
  params: Argon2idParams = CURRENT_PASSWORD_PARAMS,
): Promise<string> {
  const bytes = passwordBytes(password)
  if (bytes.length === 0)
    throw new AppError(400, 'password_invalid', 'The password must not be empty.', { param: 'password' })
  if (bytes.length > MAX_PASSWORD_BYTES) {
    throw new AppError(
      400,
      'password_invalid',
      `The password must be at most ${MAX_PASSWORD_BYTES} bytes long.`,
      {
        param: 'password',
      },
    )
  }
  assertParams(params)
  await defaultSelfTestSuite().assertAlgorithm('Argon2id')
  const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES))
  const hash = derive(bytes, salt, params, HASH_BYTES)
  return `$argon2id$v=${ARGON2_VERSION}$m=${params.m},t=${params.t},p=${params.p}$${encodeB64(salt)}$${encodeB64(hash)}`
}

/**
 * Checks a password against a stored PHC string with a constant-time comparison. Returns false
 * for a wrong password (including empty or over-long input); throws AppError 500 when the stored
 * value is not an Argon2id PHC string this service can verify (a data problem, not a bad login).
 */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const parsed = parsePhc(encoded)
  if (!parsed || parsed.version !== ARGON2_VERSION || parsed.salt.length < 8 || parsed.hash.length < 16) {
    throw new AppError(
      500,
      'password_hash_unsupported',
      'The stored password hash is not in a format this service can verify.',
      {
        internalMessage: `unparseable or unsupported PHC string (prefix ${encoded.slice(0, 16)})`,
      },
    )
  }
  assertParams(parsed.params)
  await defaultSelfTestSuite().assertAlgorithm('Argon2id')
  const bytes = passwordBytes(password)
  if (bytes.length === 0 || bytes.length > MAX_PASSWORD_BYTES) return false
  const candidate = derive(bytes, parsed.salt, parsed.params, parsed.hash.length)
  return constantTimeEqual(candidate, parsed.hash)
}

/** True when the stored hash should be replaced with one made with `params` (call after a successful verify). */
export function needsRehash(encoded: string, params: Argon2idParams = CURRENT_PASSWORD_PARAMS): boolean {
  const parsed = parsePhc(encoded)
  if (
    !parsed ||
    parsed.version !== ARGON2_VERSION ||
    parsed.hash.length !== HASH_BYTES ||
    parsed.salt.length < SALT_BYTES
  ) {
    return true
  }
  return parsed.params.m !== params.m || parsed.params.t !== params.t || parsed.params.p !== params.p
}
