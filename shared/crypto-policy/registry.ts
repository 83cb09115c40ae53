/**
 * The algorithm registry: the spec's three tables (NIST-final, draft, deprecated) exactly, plus the
 * classical, symmetric, hash and MAC algorithms the product itself uses (`source: 'product'`).
 *
 * Field meanings:
 * - `securityLevel`: NIST PQC security category 1-5 (FIPS 203/204/205 §"security strength";
 *   category 1 ≈ AES-128 key search, 2 ≈ SHA-256 collision, 3 ≈ AES-192, 4 ≈ SHA-384 collision,
 *   5 ≈ AES-256). `null` for quantum-vulnerable classical public-key algorithms: Shor's algorithm
 *   breaks them at any key size, so they have no category and the policy governs them through
 *   `allowClassicalFallback` instead of `minimumSecurityLevel`.
 * - `family`: `post_quantum` (ML-KEM, ML-DSA, SLH-DSA, Falcon), `classical` (RSA, ECC: quantum-
 *   vulnerable), `symmetric` (ciphers, hashes, MACs: only Grover-weakened, safe at these sizes).
 * - `status`: `NIST_FINAL` (a final NIST standard), `DRAFT` (pending standardisation),
 *   `DEPRECATED` (migrate to `replacement` by `deprecationDate`).
 *
 * Product decisions (see docs/crypto.md):
 * - ed25519: deprecated like the spec's ecdsa-p256 (same ~128-bit classical strength, same
 *   quantum vulnerability): replacement dilithium-2, 2030-01-01. NIST IR 8547 disallows all ECC
 *   signatures, EdDSA included, after 2035.
 * - x25519 / ecdh-p256 / ecdh-p384: listed so hybrid key exchange (`x25519+kyber-768`) can be named
 *   and checked; deprecated in favour of the ML-KEM level used by the matching IETF hybrid.
 * - chacha20-poly1305: an IETF standard (RFC 8439) that NIST has not approved, so in this
 *   NIST-aligned registry it is deprecated in favour of aes-256-gcm (FIPS 140-3 approved mode).
 */
import { AppError } from '../http/errors'

export const ALGORITHM_TYPES = ['kem', 'signature', 'symmetric', 'hash', 'mac'] as const
export type AlgorithmType = (typeof ALGORITHM_TYPES)[number]

export const LIFECYCLE_STATUSES = ['NIST_FINAL', 'DRAFT', 'DEPRECATED'] as const
export type LifecycleStatus = (typeof LIFECYCLE_STATUSES)[number]

export type SecurityLevel = 1 | 2 | 3 | 4 | 5
export type AlgorithmFamily = 'post_quantum' | 'classical' | 'symmetric'

export interface AlgorithmEntry {
  /** Registry identifier, lower case (e.g. `dilithium-3`). */
  id: string
  /** Name in its standard (e.g. `ML-DSA-65`). */
  standardName: string
  type: AlgorithmType
  status: LifecycleStatus
  securityLevel: SecurityLevel | null
  family: AlgorithmFamily
  /** True for quantum-vulnerable public-key algorithms (RSA, ECC). */
  classical: boolean
  /** True for the algorithms standardised in the NIST PQC process. */
  postQuantum: boolean
  /** The FIPS / SP / RFC that defines it. */
  reference: string
  /** ASN.1 object identifier, when one is assigned. */
  oid: string | null
  replacement: string | null
  deprecationDate: string | null
  /** Other names accepted by lookups (JOSE names, TLS names, draft names). */
  aliases: readonly string[]
  /** `spec` for the spec's tables, `product` for entries this product adds. */
  source: 'spec' | 'product'
}

type EntryInput = Omit<
  AlgorithmEntry,
  'classical' | 'postQuantum' | 'replacement' | 'deprecationDate' | 'aliases'
> & {
  replacement?: string
  deprecationDate?: string
  aliases?: readonly string[]
}

function entry(input: EntryInput): AlgorithmEntry {
  return Object.freeze({
    ...input,
    classical: input.family === 'classical',
    postQuantum: input.family === 'post_quantum',
    replacement: input.replacement ?? null,
    deprecationDate: input.deprecationDate ?? null,
    aliases: Object.freeze([...(input.aliases ?? [])]),
  })
}

const NIST_ALG = '2.16.840.1.101.3.4'
const QUANTUM_MIGRATION_DATE = '2030-01-01'

export const ALGORITHM_REGISTRY: readonly AlgorithmEntry[] = Object.freeze([
  // Spec: NIST-final
  ...(
    [
      ['kyber-512', 'ML-KEM-512', 1, `${NIST_ALG}.4.1`],
      ['kyber-768', 'ML-KEM-768', 3, `${NIST_ALG}.4.2`],
      ['kyber-1024', 'ML-KEM-1024', 5, `${NIST_ALG}.4.3`],
    ] as const
  ).map(([id, standardName, securityLevel, oid]) =>
    entry({
      id,
      standardName,
      type: 'kem',
      status: 'NIST_FINAL',
      securityLevel,
      family: 'post_quantum',
      reference: 'FIPS 203',
      oid,
      source: 'spec',
    }),
  ),
  ...(
    [
      ['dilithium-2', 'ML-DSA-44', 2, `${NIST_ALG}.3.17`],
      ['dilithium-3', 'ML-DSA-65', 3, `${NIST_ALG}.3.18`],
      ['dilithium-5', 'ML-DSA-87', 5, `${NIST_ALG}.3.19`],
    ] as const
  ).map(([id, standardName, securityLevel, oid]) =>
    entry({
      id,
      standardName,
      type: 'signature',
      status: 'NIST_FINAL',
      securityLevel,
      family: 'post_quantum',
      reference: 'FIPS 204',
      oid,
      source: 'spec',
    }),
  ),
  ...(
    [
      ['sphincs-shake-128f-simple', 'SLH-DSA-SHAKE-128f', 1, `${NIST_ALG}.3.27`],
      ['sphincs-shake-256f-simple', 'SLH-DSA-SHAKE-256f', 5, `${NIST_ALG}.3.31`],
    ] as const
  ).map(([id, standardName, securityLevel, oid]) =>
    entry({
      id,
      standardName,
      type: 'signature',
      status: 'NIST_FINAL',
      securityLevel,
      family: 'post_quantum',
      reference: 'FIPS 205',
      oid,
      source: 'spec',
    }),
  ),
  // Spec: draft (pending standardization). FN-DSA is the name FIPS 206 will give Falcon.
  ...(
    [
      ['falcon-512', 'Falcon-512', 1, 'FN-DSA-512'],
      ['falcon-1024', 'Falcon-1024', 5, 'FN-DSA-1024'],
    ] as const
  ).map(([id, standardName, securityLevel, alias]) =>
    entry({
      id,
      standardName,
      type: 'signature',
      status: 'DRAFT',
      securityLevel,
      family: 'post_quantum',
      reference: 'FIPS 206 (draft, FN-DSA)',
      oid: null,
      aliases: [alias],
      source: 'spec',
    }),
  ),
  // Spec: deprecated
  entry({
    id: 'rsa-2048',
    standardName: 'RSA-2048',
    type: 'signature',
    status: 'DEPRECATED',
    securityLevel: null,
    family: 'classical',
    reference: 'FIPS 186-5',
    oid: '1.2.840.113549.1.1.1',
    replacement: 'dilithium-2',
    deprecationDate: QUANTUM_MIGRATION_DATE,
    source: 'spec',
  }),
  entry({
    id: 'rsa-4096',
    standardName: 'RSA-4096',
    type: 'signature',
    status: 'DEPRECATED',
    securityLevel: null,
    family: 'classical',
    reference: 'FIPS 186-5',
    oid: '1.2.840.113549.1.1.1',
    replacement: 'dilithium-3',
    deprecationDate: QUANTUM_MIGRATION_DATE,
    source: 'spec',
  }),
  entry({
    id: 'ecdsa-p256',
    standardName: 'ECDSA P-256',
    type: 'signature',
    status: 'DEPRECATED',
    securityLevel: null,
    family: 'classical',
    reference: 'FIPS 186-5',
    oid: '1.2.840.10045.4.3.2',
    replacement: 'dilithium-2',
    deprecationDate: QUANTUM_MIGRATION_DATE,
    aliases: ['ES256'],
    source: 'spec',
  }),
  entry({
    id: 'ecdsa-p384',
    standardName: 'ECDSA P-384',
    type: 'signature',
    status: 'DEPRECATED',
    securityLevel: null,
    family: 'classical',
    reference: 'FIPS 186-5',
    oid: '1.2.840.10045.4.3.3',
    replacement: 'dilithium-3',
    deprecationDate: QUANTUM_MIGRATION_DATE,
    aliases: ['ES384'],
    source: 'spec',
  }),
  // Product: classical algorithms the product uses or names in hybrids
  entry({
    id: 'ed25519',
    standardName: 'Ed25519',
    type: 'signature',
    status: 'DEPRECATED',
    securityLevel: null,
    family: 'classical',
    reference: 'FIPS 186-5; RFC 8032',
    oid: '1.3.101.112',
    replacement: 'dilithium-2',
    deprecationDate: QUANTUM_MIGRATION_DATE,
    aliases: ['EdDSA'],
    source: 'product',
  }),
  entry({
    id: 'x25519',
    standardName: 'X25519',
    type: 'kem',
    status: 'DEPRECATED',
    securityLevel: null,
    family: 'classical',
    reference: 'RFC 7748; SP 800-186',
    oid: '1.3.101.110',
    replacement: 'kyber-768',
    deprecationDate: QUANTUM_MIGRATION_DATE,
    source: 'product',
  }),
  entry({
    id: 'ecdh-p256',
    standardName: 'ECDH P-256',
    type: 'kem',
    status: 'DEPRECATED',
    securityLevel: null,
    family: 'classical',
    reference: 'SP 800-56A Rev. 3',
    oid: '1.2.840.10045.3.1.7',
    replacement: 'kyber-768',
    deprecationDate: QUANTUM_MIGRATION_DATE,
    aliases: ['secp256r1'],
    source: 'product',
  }),
  entry({
    id: 'ecdh-p384',
    standardName: 'ECDH P-384',
    type: 'kem',
    status: 'DEPRECATED',
    securityLevel: null,
    family: 'classical',
    reference: 'SP 800-56A Rev. 3',
    oid: '1.3.132.0.34',
    replacement: 'kyber-1024',
    deprecationDate: QUANTUM_MIGRATION_DATE,
    aliases: ['secp384r1'],
    source: 'product',
  }),
  // Product: symmetric ciphers, hashes and MACs
  entry({
    id: 'aes-256-gcm',
    standardName: 'AES-256-GCM',
    type: 'symmetric',
    status: 'NIST_FINAL',
    securityLevel: 5,
    family: 'symmetric',
    reference: 'FIPS 197; SP 800-38D',
    oid: `${NIST_ALG}.1.46`,
    source: 'product',
  }),
  entry({
    id: 'aes-128-gcm',
    standardName: 'AES-128-GCM',
    type: 'symmetric',
    status: 'NIST_FINAL',
    securityLevel: 1,
    family: 'symmetric',
    reference: 'FIPS 197; SP 800-38D',
    oid: `${NIST_ALG}.1.6`,
    source: 'product',
  }),
  entry({
    id: 'chacha20-poly1305',
    standardName: 'ChaCha20-Poly1305',
    type: 'symmetric',
    status: 'DEPRECATED',
    securityLevel: 5,
    family: 'symmetric',
    reference: 'RFC 8439 (not NIST-approved)',
    oid: '1.2.840.113549.1.9.16.3.18',
    replacement: 'aes-256-gcm',
    deprecationDate: QUANTUM_MIGRATION_DATE,
    source: 'product',
  }),
  ...(
    [
      ['sha-256', 'SHA-256', 2, 'FIPS 180-4', `${NIST_ALG}.2.1`],
      ['sha-384', 'SHA-384', 4, 'FIPS 180-4', `${NIST_ALG}.2.2`],
      ['sha-512', 'SHA-512', 5, 'FIPS 180-4', `${NIST_ALG}.2.3`],
      ['sha3-256', 'SHA3-256', 2, 'FIPS 202', `${NIST_ALG}.2.8`],
      ['sha3-512', 'SHA3-512', 5, 'FIPS 202', `${NIST_ALG}.2.10`],
    ] as const
  ).map(([id, standardName, securityLevel, reference, oid]) =>
    entry({
      id,
      standardName,
      type: 'hash',
      status: 'NIST_FINAL',
      securityLevel,
      family: 'symmetric',
      reference,
      oid,
      source: 'product',
    }),
  ),
  // With a 256-bit key, forging needs a key search (Grover ≈ 2^128), like AES-256: category 5.
  entry({
    id: 'hmac-sha-256',
    standardName: 'HMAC-SHA-256',
    type: 'mac',
    status: 'NIST_FINAL',
    securityLevel: 5,
    family: 'symmetric',
    reference: 'FIPS 198-1',
    oid: '1.2.840.113549.2.9',
    aliases: ['HS256'],
    source: 'product',
  }),
])

const BY_NAME: ReadonlyMap<string, AlgorithmEntry> = (() => {
  const map = new Map<string, AlgorithmEntry>()
  for (const e of ALGORITHM_REGISTRY) {
    for (const name of [e.id, e.standardName, ...e.aliases]) {
      const key = name.toLowerCase()
      const existing = map.get(key)
      if (existing && existing !== e)
        throw new Error(`registry name clash: ${name} (${existing.id}, ${e.id})`)
      map.set(key, e)
    }
  }
  return map
})()

/** Looks an algorithm up by id, standard name or alias, ignoring case (`ML-DSA-65` → dilithium-3). */
export function findAlgorithm(name: string): AlgorithmEntry | undefined {
  return BY_NAME.get(name.trim().toLowerCase())
}

/** Like `findAlgorithm`, but an unknown name is AppError 400 `unknown_algorithm`. */
export function getAlgorithm(name: string, param = 'algorithm'): AlgorithmEntry {
  const found = findAlgorithm(name)
  if (!found) {
    throw new AppError(
      400,
      'unknown_algorithm',
      `Unknown algorithm "${name}". Known algorithms: ${ALGORITHM_REGISTRY.map((e) => e.id).join(', ')} (standard names such as ML-DSA-65 work too).`,
      { param },
    )
  }
  return found
}

function parseFilter<T extends string>(
  raw: string | null | undefined,
  allowed: readonly T[],
  param: string,
  normalise: (value: string) => string,
): T | undefined {
  if (raw === undefined || raw === null || raw.trim() === '') return undefined
  const value = normalise(raw.trim())
  const match = allowed.find((a) => a === value)
  if (!match) {
    throw new AppError(
      400,
      'invalid_algorithm_filter',
      `${param} must be one of ${allowed.join(', ')} (got "${raw}").`,
      { param },
    )
  }
  return match
}

/**
 * The registry filtered by `?status=&type=` (either may be absent). Values are matched
 * case-insensitively (`nist_final`, `NIST-FINAL`, `Signature` all work); anything else is
 * AppError 400 `invalid_algorithm_filter` naming the allowed values.
 */
export function filterAlgorithms(query: { status?: string | null; type?: string | null }): AlgorithmEntry[] {
  const status = parseFilter(query.status, LIFECYCLE_STATUSES, 'status', (v) =>
    v.toUpperCase().replaceAll('-', '_'),
  )
  const type = parseFilter(query.type, ALGORITHM_TYPES, 'type', (v) => v.toLowerCase())
  return ALGORITHM_REGISTRY.filter((e) => (!status || e.status === status) && (!type || e.type === type))
}
