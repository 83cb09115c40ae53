/**
 * Signing and verification keys as JWKs, and the JWKS the auth worker publishes.
 *
 * JWK formats:
 * - ML-DSA (RFC 9964): `{kty:"AKP", alg:"ML-DSA-65", pub}`; the private form adds `priv`, the
 *   32-byte seed ξ (FIPS 204 Algorithm 6 input), never the expanded secret key.
 * - Ed25519 (RFC 8037): `{kty:"OKP", crv:"Ed25519", x}`; the private form adds `d`.
 *
 * `kid` is the RFC 7638 JWK thumbprint (SHA-256, base64url) over the required members
 * (`alg`,`kty`,`pub` for AKP as RFC 9964 §6 defines them; `crv`,`kty`,`x` for OKP), unless the JWK
 * being imported carries its own `kid`, which is kept so third-party key sets resolve as published.
 *
 * Cost model: importing a key expands it once (ML-DSA keygen from the seed: well under a
 * millisecond natively, ~2-3 ms on noble, see post-quantum.ts; a WebCrypto import for Ed25519).
 * Callers keep the returned `SigningKey` / `VerificationKey` for the life of the isolate (see
 * `signingKeyFromSecret` and `createVerificationKeySet`) and never import per request.
 */
import { calculateJwkThumbprint } from 'jose'
import { z } from 'zod'
import { AppError } from '../http/errors'
import { describeIssues } from '../http/validation'
import { base64urlDecode, base64urlEncode, ownBytes, utf8 } from './encoding'
import {
  isJwsAlgorithm,
  isMlDsaAlgorithm,
  JWS_ALGORITHMS,
  type JwsAlgorithm,
  ML_DSA_ALGORITHMS,
  type MlDsaAlgorithm,
  PRIVATE_KEY_BYTES,
  PUBLIC_KEY_BYTES,
  SELF_TEST_GROUP,
  SIGNATURE_BYTES,
} from './jws-algorithms'
import { mlDsaFor } from './post-quantum'
import { defaultSelfTestSuite } from './self-test'

const base64urlText = z.string().regex(/^[A-Za-z0-9_-]+$/, 'must be unpadded base64url')
const kidText = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')

const commonMembers = {
  kid: kidText.optional(),
  use: z.literal('sig').optional(),
  key_ops: z.array(z.string()).optional(),
}

export const AkpPublicJwkSchema = z.object({
  kty: z.literal('AKP'),
  alg: z.enum(ML_DSA_ALGORITHMS),
  pub: base64urlText,
  ...commonMembers,
})
export const AkpPrivateJwkSchema = AkpPublicJwkSchema.extend({ priv: base64urlText })

export const OkpPublicJwkSchema = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: base64urlText,
  alg: z.literal('EdDSA').optional(),
  ...commonMembers,
})
export const OkpPrivateJwkSchema = OkpPublicJwkSchema.extend({ d: base64urlText })

const PublicJwkSchema = z.discriminatedUnion('kty', [AkpPublicJwkSchema, OkpPublicJwkSchema])
const PrivateJwkSchema = z.discriminatedUnion('kty', [AkpPrivateJwkSchema, OkpPrivateJwkSchema])

/** A public JWK as this module emits it: always with `kid`, `use:"sig"` and `alg`. */
export type PublicJwk =
  | { kty: 'AKP'; alg: MlDsaAlgorithm; pub: string; kid: string; use: 'sig' }
  | { kty: 'OKP'; crv: 'Ed25519'; x: string; alg: 'EdDSA'; kid: string; use: 'sig' }

/** A private JWK as this module emits it (public members plus `priv` or `d`). */
export type PrivateJwk =
  | { kty: 'AKP'; alg: MlDsaAlgorithm; pub: string; priv: string; kid: string; use: 'sig' }
  | { kty: 'OKP'; crv: 'Ed25519'; x: string; d: string; alg: 'EdDSA'; kid: string; use: 'sig' }

export interface Jwks {
  keys: PublicJwk[]
}

export interface VerificationKey {
  readonly kid: string
  readonly alg: JwsAlgorithm
  readonly publicJwk: PublicJwk
  /** False for a wrong signature, a wrong length or a malformed input; never throws for those. */
  verify(data: Uint8Array, signature: Uint8Array): Promise<boolean>
}

export interface SigningKey extends VerificationKey {
  sign(data: Uint8Array): Promise<Uint8Array>
  /** The private JWK (seed form for ML-DSA). Handle as a secret. */
  exportPrivateJwk(): PrivateJwk
}

const invalidJwk = (message: string) => new AppError(400, 'invalid_jwk', message, { param: 'jwk' })

function decodeMember(value: string, member: string, expectedBytes: number): Uint8Array {
  const bytes = base64urlDecode(value)
  if (!bytes) throw invalidJwk(`JWK member "${member}" is not canonical unpadded base64url`)
  if (bytes.length !== expectedBytes) {
    throw invalidJwk(`JWK member "${member}" must decode to ${expectedBytes} bytes (got ${bytes.length})`)
  }
  return bytes
}

/** RFC 7638 thumbprint (SHA-256, base64url) over the members RFC 9964 / RFC 8037 name as required. */
export function jwkThumbprint(
  jwk: { kty: 'AKP'; alg: MlDsaAlgorithm; pub: string } | { kty: 'OKP'; crv: 'Ed25519'; x: string },
): Promise<string> {
  const required =
    jwk.kty === 'AKP'
      ? { alg: jwk.alg, kty: jwk.kty, pub: jwk.pub }
      : { crv: jwk.crv, kty: jwk.kty, x: jwk.x }
  return calculateJwkThumbprint(required, 'sha256')
}

// ---------------------------------------------------------------------------------------------
// ML-DSA

async function mlDsaVerifier(alg: MlDsaAlgorithm, publicKey: Uint8Array) {
  const verifier = await mlDsaFor(alg).verifierFor(alg, publicKey)
  return (data: Uint8Array, signature: Uint8Array): Promise<boolean> =>
    signature.length === SIGNATURE_BYTES[alg] ? verifier.verify(data, signature) : Promise.resolve(false)
}

async function mlDsaVerificationKey(alg: MlDsaAlgorithm, publicKey: Uint8Array, kid?: string) {
  const pub = base64urlEncode(publicKey)
  const resolvedKid = kid ?? (await jwkThumbprint({ kty: 'AKP', alg, pub }))
  const publicJwk = Object.freeze({ kty: 'AKP', alg, pub, kid: resolvedKid, use: 'sig' } as const)
  return { kid: resolvedKid, alg, publicJwk, verify: await mlDsaVerifier(alg, publicKey) }
}

/** Expands an ML-DSA seed into a signing key. The expansion happens here, once. */
async function mlDsaSigningKey(alg: MlDsaAlgorithm, seed: Uint8Array, kid?: string): Promise<SigningKey> {
  const ownSeed = Uint8Array.from(seed)
  const signer = await mlDsaFor(alg).signerFromSeed(alg, ownSeed)
  const verification = await mlDsaVerificationKey(alg, signer.publicKey, kid)
  const priv = base64urlEncode(ownSeed)
  const { pub, kid: resolvedKid } = verification.publicJwk
  return Object.freeze({
    ...verification,
    // Hedged signing (FIPS 204 default): fresh randomness mixed into every signature.
    sign: (data: Uint8Array) => signer.sign(data),
    exportPrivateJwk: (): PrivateJwk => ({ kty: 'AKP', alg, pub, priv, kid: resolvedKid, use: 'sig' }),
  })
}

// ---------------------------------------------------------------------------------------------
// Ed25519 (WebCrypto)

const ED25519 = { name: 'Ed25519' }

async function ed25519VerificationKey(x: string, kid?: string) {
  const cryptoKey = await crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x }, ED25519, false, [
    'verify',
  ])
  const resolvedKid = kid ?? (await jwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x }))
  const publicJwk = Object.freeze({
    kty: 'OKP',
    crv: 'Ed25519',
    x,
    alg: 'EdDSA',
    kid: resolvedKid,
    use: 'sig',
  } as const)
  const verify = async (data: Uint8Array, signature: Uint8Array): Promise<boolean> => {
    if (signature.length !== SIGNATURE_BYTES.EdDSA) return false
    try {
      return await crypto.subtle.verify(ED25519, cryptoKey, ownBytes(signature), ownBytes(data))
    } catch {
      return false
    }
  }
  return { kid: resolvedKid, alg: 'EdDSA' as const, publicJwk, verify }
}

async function ed25519SigningKey(x: string, d: string, kid?: string): Promise<SigningKey> {
  const verification = await ed25519VerificationKey(x, kid)
  const privateKey = await crypto.subtle.importKey(
    'jwk',
    { kty: 'OKP', crv: 'Ed25519', x, d },
    ED25519,
    false,
    ['sign'],
  )
  return Object.freeze({
    ...verification,
    sign: async (data: Uint8Array) =>
      new Uint8Array(await crypto.subtle.sign(ED25519, privateKey, ownBytes(data))),
    exportPrivateJwk: (): PrivateJwk => ({
      kty: 'OKP',
      crv: 'Ed25519',
      x,
      d,
      alg: 'EdDSA',
      kid: verification.kid,
      use: 'sig',
    }),
  })
}

// ---------------------------------------------------------------------------------------------
// Public API

const PCT_MESSAGE = utf8.encode('svc pairwise consistency test')

/**
 * Pairwise consistency test (FIPS 140-3 IG 10.3.A): sign a fixed message with the private key and
 * verify it with a verifier built independently from the public JWK.
 */
export async function pairwiseConsistencyTest(key: SigningKey): Promise<boolean> {
  try {
    const verifier = await importVerificationKey(key.publicJwk)
    const signature = await key.sign(PCT_MESSAGE)
    return await verifier.verify(PCT_MESSAGE, signature)
  } catch {
    return false
  }
}

/** Generates a fresh signing key; refuses to return it unless the pairwise consistency test passes. */
export async function generateSigningKey(alg: JwsAlgorithm): Promise<SigningKey> {
  if (isJwsAlgorithm(alg)) await defaultSelfTestSuite().assertAlgorithm(SELF_TEST_GROUP[alg])
  let key: SigningKey
  if (alg === 'EdDSA') {
    const pair = (await crypto.subtle.generateKey(ED25519, true, ['sign', 'verify'])) as CryptoKeyPair
    const jwk = (await crypto.subtle.exportKey('jwk', pair.privateKey)) as JsonWebKey
    if (typeof jwk.x !== 'string' || typeof jwk.d !== 'string') {
      throw new AppError(
        500,
        'crypto_key_generation_failed',
        'Ed25519 key generation returned no key material.',
      )
    }
    key = await ed25519SigningKey(jwk.x, jwk.d)
  } else if (isMlDsaAlgorithm(alg)) {
    key = await mlDsaSigningKey(alg, crypto.getRandomValues(new Uint8Array(PRIVATE_KEY_BYTES)))
  } else {
    throw new AppError(500, 'crypto_key_generation_failed', `Unsupported signing algorithm ${String(alg)}.`)
  }
  if (!(await pairwiseConsistencyTest(key))) {
    throw new AppError(
      500,
      'crypto_pairwise_consistency_failed',
      `The newly generated ${alg} key failed its pairwise consistency test and was discarded. Retry; if it repeats, the crypto module is faulty.`,
    )
  }
  return key
}

/**
 * Imports a private JWK (AKP with `priv` seed, or OKP Ed25519 with `d`). The public member must
 * match the private one: ML-DSA `pub` is compared with the key expanded from `priv`, Ed25519 is
 * checked with a pairwise consistency test.
 */
export async function importSigningKey(jwk: unknown): Promise<SigningKey> {
  const parsed = PrivateJwkSchema.safeParse(jwk, { reportInput: true })
  if (!parsed.success)
    throw invalidJwk(
      `Private JWK is invalid: ${describeIssues(parsed.error, jwk, { root: 'the key', showValues: false })}`,
    )
  const value = parsed.data
  await defaultSelfTestSuite().assertAlgorithm(SELF_TEST_GROUP[value.kty === 'AKP' ? value.alg : 'EdDSA'])
  if (value.kty === 'AKP') {
    const seed = decodeMember(value.priv, 'priv', PRIVATE_KEY_BYTES)
    decodeMember(value.pub, 'pub', PUBLIC_KEY_BYTES[value.alg])
    const key = await mlDsaSigningKey(value.alg, seed, value.kid)
    // Both sides are canonical base64url of public bytes, so comparing the text is exact.
    if (key.publicJwk.kty !== 'AKP' || key.publicJwk.pub !== value.pub) {
      throw invalidJwk(`JWK "pub" does not match the ${value.alg} public key derived from "priv"`)
    }
    return key
  }
  decodeMember(value.x, 'x', PUBLIC_KEY_BYTES.EdDSA)
  decodeMember(value.d, 'd', PRIVATE_KEY_BYTES)
  const key = await ed25519SigningKey(value.x, value.d, value.kid)
  if (!(await pairwiseConsistencyTest(key))) {
    throw invalidJwk('JWK "x" does not match the Ed25519 public key of "d"')
  }
  return key
}

/** Imports a public JWK. Refuses JWKs that carry private members, so a leaked secret is noticed. */
export async function importVerificationKey(jwk: unknown): Promise<VerificationKey> {
  if (typeof jwk === 'object' && jwk !== null && ('priv' in jwk || 'd' in jwk)) {
    throw invalidJwk(
      'A public JWK must not contain private key material ("priv" or "d"); publish the public part only',
    )
  }
  const parsed = PublicJwkSchema.safeParse(jwk, { reportInput: true })
  if (!parsed.success)
    throw invalidJwk(`Public JWK is invalid: ${describeIssues(parsed.error, jwk, { root: 'the key' })}`)
  const value = parsed.data
  if (value.kty === 'AKP') {
    const pub = decodeMember(value.pub, 'pub', PUBLIC_KEY_BYTES[value.alg])
    const key = await mlDsaVerificationKey(value.alg, pub, value.kid).catch(() => {
      throw invalidJwk(`JWK "pub" is not a valid ${value.alg} public key`)
    })
    return Object.freeze(key)
  }
  decodeMember(value.x, 'x', PUBLIC_KEY_BYTES.EdDSA)
  return Object.freeze(await ed25519VerificationKey(value.x, value.kid))
}

/** The JWKS document to publish: public members only, `use:"sig"`, one entry per `kid`. */
export function buildJwks(keys: readonly VerificationKey[]): Jwks {
  const seen = new Set<string>()
  for (const key of keys) {
    if (seen.has(key.kid)) {
      throw new AppError(
        500,
        'jwks_duplicate_kid',
        `Two keys share kid "${key.kid}"; every key in a JWKS needs its own kid.`,
      )
    }
    seen.add(key.kid)
  }
  return { keys: keys.map((key) => ({ ...key.publicJwk })) }
}

export interface VerificationKeySet {
  resolve(kid: string): VerificationKey | undefined
  readonly kids: readonly string[]
  /** Entries that were skipped because they are not signature keys of a supported type. */
  readonly ignored: readonly string[]
}

const JwksSchema = z.object({ keys: z.array(z.unknown()).max(100) })
const SUPPORTED_KTY = new Set(['AKP', 'OKP'])

/**
 * Imports every usable key of a JWKS once. Entries that are not signature keys this module
 * supports (other `kty`, `use:"enc"`, non-Ed25519 curves, unknown `alg`) are skipped and listed in
 * `ignored`; a supported entry that is malformed fails the whole set, as do duplicate kids.
 */
export async function createVerificationKeySet(jwks: unknown): Promise<VerificationKeySet> {
  const parsed = JwksSchema.safeParse(jwks, { reportInput: true })
  if (!parsed.success)
    throw invalidJwk(`JWKS is invalid: ${describeIssues(parsed.error, jwks, { root: 'the key set' })}`)
  const byKid = new Map<string, VerificationKey>()
  const ignored: string[] = []
  for (const [index, entry] of parsed.data.keys.entries()) {
    const record = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>
    const label = typeof record.kid === 'string' ? record.kid : `#${index}`
    const supported =
      SUPPORTED_KTY.has(String(record.kty)) &&
      (record.use === undefined || record.use === 'sig') &&
      (record.kty !== 'OKP' || record.crv === 'Ed25519') &&
      (record.alg === undefined || (JWS_ALGORITHMS as readonly unknown[]).includes(record.alg))
    if (!supported) {
      ignored.push(label)
      continue
    }
    const key = await importVerificationKey(entry)
    if (byKid.has(key.kid)) throw invalidJwk(`JWKS has two keys with kid "${key.kid}"`)
    byKid.set(key.kid, key)
  }
  return Object.freeze({
    resolve: (kid: string) => byKid.get(kid),
    kids: Object.freeze([...byKid.keys()]),
    ignored: Object.freeze(ignored),
  })
}

const signingKeyCache = new Map<string, SigningKey>()
const SIGNING_KEY_CACHE_LIMIT = 16

/**
 * The signing key for a private JWK held as a secret string (e.g. `env.TOKEN_SIGNING_JWK`),
 * imported once per isolate and then served from memory. Only imported keys are cached (never a
 * pending promise, which workerd must not share between requests); a failed import is retried.
 */
export async function signingKeyFromSecret(secretJson: string): Promise<SigningKey> {
  const cached = signingKeyCache.get(secretJson)
  if (cached) return cached
  // A broken secret is the server's configuration problem, never the caller's: 500, reason logged only.
  const misconfigured = (reason: string) =>
    new AppError(500, 'signing_key_invalid', 'The token signing key is not configured correctly.', {
      internalMessage: `signing key secret rejected: ${reason}`,
    })
  let jwk: unknown
  try {
    jwk = JSON.parse(secretJson)
  } catch {
    // The parser's message quotes the input, which is a secret: say only what kind of problem it is.
    throw misconfigured('not JSON')
  }
  let key: SigningKey
  try {
    key = await importSigningKey(jwk)
  } catch (err) {
    throw misconfigured(err instanceof AppError ? err.message : 'import failed')
  }
  if (signingKeyCache.size >= SIGNING_KEY_CACHE_LIMIT) signingKeyCache.clear()
  signingKeyCache.set(secretJson, key)
  return key
}
