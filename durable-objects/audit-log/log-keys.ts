import { z } from 'zod'
import {
  rawPublicKey,
  SIGNATURE_TYPE_ED25519,
  SIGNATURE_TYPE_ML_DSA_44_COSIGNATURE,
  verifierKey,
} from '../../shared/audit/checkpoint'
import { canonicalJson, sha256Hex } from '../../shared/crypto/digests'
import { base64Decode, base64Encode } from '../../shared/crypto/encoding'
import { importSigningKey, type SigningKey } from '../../shared/crypto/jwk'
import { AppError } from '../../shared/http/errors'

export interface LogPublicKey {
  kid: string
  alg: 'EdDSA' | 'ML-DSA-44'
  /** signed-note signature type: 0x01 (Ed25519 note signature) or 0x06 (ML-DSA-44 cosignature). */
  signature_type: number
  /** The raw public key, standard base64. */
  public_key: string
  state: 'signing' | 'verify_only'
}

export interface LogKeyRing {
  ed25519: SigningKey
  mlDsa44: SigningKey
  keys: readonly LogPublicKey[]
  /** sha256 of the canonical JSON of `keys`: changes exactly when the key set does. */
  digest: string
}

const SecretShape = z.array(z.unknown()).min(1).max(32)

function unavailable(reason: string): AppError {
  return new AppError(
    503,
    'log_signing_keys_unavailable',
    'Audit log checkpoints cannot be signed right now: the log signing keys are not configured. Entries are still recorded; retry later or contact the operator.',
    { internalMessage: `LOG_SIGNING_KEYS: ${reason}`, headers: { 'retry-after': '30' } },
  )
}

let cached: { secret: string; ring: LogKeyRing } | undefined

/** The key ring of this isolate's secret value, imported once. Throws AppError 503 when unusable. */
export async function logKeyRing(secret: string | undefined): Promise<LogKeyRing> {
  if (cached && cached.secret === secret) return cached.ring
  if (!secret?.trim()) throw unavailable('not set')
  let parsed: unknown
  try {
    parsed = JSON.parse(secret)
  } catch {
    throw unavailable('not JSON')
  }
  const shape = SecretShape.safeParse(parsed)
  if (!shape.success) throw unavailable('expected a JSON array of private JWKs (newest first)')
  const imported: SigningKey[] = []
  for (const [index, jwk] of shape.data.entries()) {
    try {
      imported.push(await importSigningKey(jwk))
    } catch (err) {
      throw unavailable(`key #${index}: ${err instanceof AppError ? err.message : 'import failed'}`)
    }
  }
  const ed25519 = imported.find((k) => k.alg === 'EdDSA')
  const mlDsa44 = imported.find((k) => k.alg === 'ML-DSA-44')
  if (!ed25519 || !mlDsa44) throw unavailable('needs an Ed25519 (EdDSA) key and an ML-DSA-44 key')
  const keys: LogPublicKey[] = imported
    .filter((k) => k.alg === 'EdDSA' || k.alg === 'ML-DSA-44')
    .map((k) => ({
      kid: k.kid,
      alg: k.alg as 'EdDSA' | 'ML-DSA-44',
      signature_type: k.alg === 'EdDSA' ? SIGNATURE_TYPE_ED25519 : SIGNATURE_TYPE_ML_DSA_44_COSIGNATURE,
      public_key: base64Encode(rawPublicKey(k.publicJwk)),
      state: k === ed25519 || k === mlDsa44 ? 'signing' : 'verify_only',
    }))
  const digest = `sha256:${sha256Hex(canonicalJson(keys))}`
  const ring = { ed25519, mlDsa44, keys, digest }
  cached = { secret, ring }
  return ring
}

/** The verifier keys (C2SP vkeys) of one log: its origin is the key name. */
export function logVerifierKeys(ring: LogKeyRing, origin: string): string[] {
  return ring.keys.map((k) =>
    // public_key was written by base64Encode above, so it always decodes.
    verifierKey(origin, k.signature_type, base64Decode(k.public_key)!),
  )
}

/** Default base of the logs' origins when AUDIT_LOG_ORIGIN is unset. */
export const DEFAULT_LOG_ORIGIN = 'svc.localhost/audit-log'

/** A log's origin (checkpoint origin line and key name): one per tenant, one for the platform. */
export function logOrigin(base: string, tenantId: string | null): string {
  return tenantId ? `${base}/tenant/${tenantId}` : `${base}/platform`
}
