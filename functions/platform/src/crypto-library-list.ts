/**
 * The libraries that implement the product's cryptography, and what each implements. Their exact
 * versions and integrity hashes come from package-lock.json at build time
 * (scripts/crypto-libraries.ts writes crypto-libraries.generated.json).
 */
export interface CryptoLibrary {
  /** npm package name. */
  name: string
  /** What it does for the product. */
  role: string
  /** Algorithms (standard names) it implements in this product. */
  implements: readonly string[]
}

export const CRYPTO_LIBRARIES: readonly CryptoLibrary[] = [
  {
    name: 'workerd',
    role: "The Workers runtime's WebCrypto (BoringSSL): ML-DSA signing and verification (tokens, receipts, attestations, checkpoint cosignatures) and ML-KEM, with the webcrypto_modern_algorithms compatibility flag every worker sets; Ed25519, SHA-256/384/512, HMAC, the CSPRNG",
    implements: [
      'ML-DSA-44',
      'ML-DSA-65',
      'ML-DSA-87',
      'ML-KEM-768',
      'Ed25519',
      'SHA-256',
      'SHA-384',
      'SHA-512',
      'HMAC-SHA-256',
    ],
  },
  {
    name: '@noble/post-quantum',
    role: 'ML-DSA and ML-KEM in JavaScript, used only where the runtime has no native implementation (a runtime without the flag; the Node scripts that generate signing keys); the SLH-DSA self-test',
    implements: ['ML-DSA-44', 'ML-DSA-65', 'ML-DSA-87', 'ML-KEM-768', 'SLH-DSA-SHAKE-128f'],
  },
  {
    name: '@noble/hashes',
    role: "SHA-256 of the audit logs' Merkle trees and key IDs, SHAKE256, Argon2id password hashing",
    implements: ['SHA-256', 'SHAKE256', 'Argon2id'],
  },
  {
    name: 'jose',
    role: 'JOSE: JWK thumbprints (kid), EdDSA JWS interoperability, base64url',
    implements: [],
  },
]

export interface CryptoLibraryFacts extends CryptoLibrary {
  version: string
  /** Subresource-integrity string from the lockfile (e.g. sha512-…). */
  integrity: string
}

interface Lockfile {
  name?: string
  version?: string
  packages: Record<string, { version?: string; integrity?: string }>
}

/** What the build embeds: the application and its cryptographic libraries as the lockfile pins them. */
export interface BuildFacts {
  application: { name: string; version: string }
  libraries: CryptoLibraryFacts[]
}

export function buildFacts(lock: Lockfile): BuildFacts {
  return {
    application: { name: lock.name ?? 'svc', version: lock.version ?? '0.0.0' },
    libraries: cryptoLibraryFacts(lock),
  }
}

export function cryptoLibraryFacts(lock: Lockfile): CryptoLibraryFacts[] {
  return CRYPTO_LIBRARIES.map((library) => {
    const entry = lock.packages[`node_modules/${library.name}`]
    if (!entry?.version || !entry.integrity) throw new Error(`package-lock.json does not pin ${library.name}`)
    return { ...library, version: entry.version, integrity: entry.integrity }
  })
}
