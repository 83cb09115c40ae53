/**
 * The auth worker's signing keys, from the `JWT_SIGNING_KEYS` secret: a JSON array of private
 * JWKs, newest first (a JWKS-shaped `{"keys":[...]}` is accepted too). The first key of each
 * algorithm signs; every key is published in the JWKS and stays valid for verification, so a
 * rotation is: put the new key first, redeploy, and remove the old key once the tokens it signed
 * have expired.
 *
 * Keys are imported (ML-DSA expanded from the seed, ~2-3 ms each) once per isolate and secret value.
 */
import { z } from 'zod'
import { buildJwks, importSigningKey, type Jwks, type SigningKey } from '../../../shared/crypto'
import type { JwsAlgorithm } from '../../../shared/crypto/jws-algorithms'
import { AppError } from '../../../shared/http/errors'

/** Signing preference when the tenant's policy leaves the choice: ML-DSA-65 first (the default). */
export const SIGNING_PREFERENCE: readonly JwsAlgorithm[] = ['ML-DSA-65', 'ML-DSA-87', 'ML-DSA-44', 'EdDSA']

export interface KeyRing {
  /** The signing key of each algorithm present (the first of that algorithm in the secret). */
  signers: ReadonlyMap<JwsAlgorithm, SigningKey>
  /** Algorithms that can sign, in `SIGNING_PREFERENCE` order. */
  available: readonly JwsAlgorithm[]
  /** Every key's public JWK: what /.well-known/jwks.json publishes and the gateway verifies with. */
  jwks: Jwks
}

const SecretShape = z.union([
  z.array(z.unknown()).min(1).max(32),
  z.object({ keys: z.array(z.unknown()).min(1).max(32) }),
])

let cached: { secret: string; ring: KeyRing } | undefined

function misconfigured(reason: string): AppError {
  return new AppError(
    503,
    'signing_keys_unavailable',
    'Access tokens cannot be issued or checked right now: the token signing keys are not configured. Retry later or contact the operator.',
    { internalMessage: `JWT_SIGNING_KEYS: ${reason}`, headers: { 'retry-after': '30' } },
  )
}

/** Builds the key ring from the secret's value (exported for tests; use `keyRingFor` in handlers). */
export async function loadKeyRing(secret: string | undefined): Promise<KeyRing> {
  if (!secret?.trim()) throw misconfigured('not set')
  let parsed: unknown
  try {
    parsed = JSON.parse(secret)
  } catch {
    // The parser's message would quote the secret: say only what kind of problem it is.
    throw misconfigured('not JSON')
  }
  const shape = SecretShape.safeParse(parsed)
  if (!shape.success) throw misconfigured('expected a JSON array of private JWKs (newest first)')
  const entries = Array.isArray(shape.data) ? shape.data : shape.data.keys
  const keys: SigningKey[] = []
  for (const [index, entry] of entries.entries()) {
    try {
      keys.push(await importSigningKey(entry))
    } catch (err) {
      throw misconfigured(`key #${index}: ${err instanceof AppError ? err.message : 'import failed'}`)
    }
  }
  const signers = new Map<JwsAlgorithm, SigningKey>()
  for (const key of keys) if (!signers.has(key.alg)) signers.set(key.alg, key)
  let jwks: Jwks
  try {
    jwks = buildJwks(keys)
  } catch (err) {
    throw misconfigured(err instanceof AppError ? err.message : 'duplicate kid')
  }
  return {
    signers,
    available: SIGNING_PREFERENCE.filter((alg) => signers.has(alg)),
    jwks,
  }
}

/** The key ring for this isolate's secret value, built once. */
export async function keyRingFor(secret: string | undefined): Promise<KeyRing> {
  if (cached && cached.secret === secret) return cached.ring
  const ring = await loadKeyRing(secret)
  cached = { secret: secret ?? '', ring }
  return ring
}

/** What the auth worker's `sign` RPC answers: a raw signature by the current key of the algorithm. */
export type DocumentSignature =
  | { readonly ok: true; readonly kid: string; readonly alg: JwsAlgorithm; readonly signature: Uint8Array }
  | { readonly ok: false; readonly code: string; readonly message: string }

/**
 * Signs `data` with the current (first) key of `alg` in the ring: the same keys that sign access
 * tokens, so a verifier needs only the public JWKS. Refusals are values (an RPC caller cannot
 * catch an AppError across the binding): no key of that algorithm, or no keys at all.
 */
export async function signDocument(
  secret: string | undefined,
  data: Uint8Array,
  alg: JwsAlgorithm,
): Promise<DocumentSignature> {
  let ring: KeyRing
  try {
    ring = await keyRingFor(secret)
  } catch (err) {
    const message = err instanceof AppError ? err.message : 'the signing keys could not be loaded'
    return { ok: false, code: 'signing_keys_unavailable', message }
  }
  const key = ring.signers.get(alg)
  if (!key) {
    return {
      ok: false,
      code: 'signing_algorithm_unavailable',
      message: `No ${alg} signing key is configured (JWT_SIGNING_KEYS has ${ring.available.join(', ') || 'none'}).`,
    }
  }
  return { ok: true, kid: key.kid, alg, signature: await key.sign(data) }
}
