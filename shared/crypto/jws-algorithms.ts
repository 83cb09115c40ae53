/**
 * The JWS algorithms this product signs and verifies, with their fixed sizes.
 *
 * - `ML-DSA-44` / `ML-DSA-65` / `ML-DSA-87`: RFC 9964 (JOSE/COSE ML-DSA), pure ML-DSA with the empty
 *   context string, signature = the raw FIPS 204 bytes. Computed by the runtime's WebCrypto where
 *   it has ML-DSA (workerd with `webcrypto_modern_algorithms`), else by @noble/post-quantum
 *   (post-quantum.ts).
 * - `EdDSA`: Ed25519 (RFC 8037), the classical alternative, through workerd's WebCrypto.
 *
 * Everything else (`none`, HS*, RS*, PS*, ES*) is refused by construction: only these names exist.
 */
import { ML_DSA_ALGORITHMS, type MlDsaAlgorithm } from './post-quantum'
import type { SelfTestedAlgorithm } from './self-test'

export { ML_DSA_ALGORITHMS, type MlDsaAlgorithm }

export const JWS_ALGORITHMS = [...ML_DSA_ALGORITHMS, 'EdDSA'] as const
export type JwsAlgorithm = (typeof JWS_ALGORITHMS)[number]

/** The self-test group that must pass before each JWS algorithm is first used. */
export const SELF_TEST_GROUP: Readonly<Record<JwsAlgorithm, SelfTestedAlgorithm>> = {
  'ML-DSA-44': 'ML-DSA-44',
  'ML-DSA-65': 'ML-DSA-65',
  'ML-DSA-87': 'ML-DSA-87',
  EdDSA: 'Ed25519',
}

/** Signature length in bytes (FIPS 204 Table 2; RFC 8032 for Ed25519). */
export const SIGNATURE_BYTES: Readonly<Record<JwsAlgorithm, number>> = {
  'ML-DSA-44': 2420,
  'ML-DSA-65': 3309,
  'ML-DSA-87': 4627,
  EdDSA: 64,
}

/** Public key length in bytes. */
export const PUBLIC_KEY_BYTES: Readonly<Record<JwsAlgorithm, number>> = {
  'ML-DSA-44': 1312,
  'ML-DSA-65': 1952,
  'ML-DSA-87': 2592,
  EdDSA: 32,
}

/** Private key length in bytes as carried in a JWK: the ML-DSA seed ξ (`priv`), the Ed25519 seed (`d`). */
export const PRIVATE_KEY_BYTES = 32

export function isJwsAlgorithm(value: unknown): value is JwsAlgorithm {
  return typeof value === 'string' && (JWS_ALGORITHMS as readonly string[]).includes(value)
}

export function isMlDsaAlgorithm(value: unknown): value is MlDsaAlgorithm {
  return typeof value === 'string' && (ML_DSA_ALGORITHMS as readonly string[]).includes(value)
}
