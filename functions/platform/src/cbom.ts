/**
 * The Cryptographic Bill of Materials (CycloneDX 1.6 JSON) of what runs for one tenant:
 *
 * - `library` components: the packages that implement the algorithms, with the version and the
 *   integrity hash package-lock.json pinned at build time (crypto-libraries.generated.json);
 * - `cryptographic-asset` algorithms: every registry algorithm the product implements or the
 *   tenant's effective policy allows, with its OID (NIST CSOR for FIPS 203/204/205 and the hashes),
 *   primitive, parameter set, nistQuantumSecurityLevel (0 for quantum-vulnerable public-key
 *   algorithms) and the policy's decision for it as properties;
 * - `related-crypto-material`: the live public keys (token keys from the auth worker's JWKS, the
 *   audit logs' checkpoint keys), with kid, algorithm, state and the date the platform log first
 *   recorded the key set; never private material;
 * - `protocol` assets: TLS 1.3 at the edge, JWS/JOSE tokens, C2SP signed-note checkpoints, DSSE.
 * `dependencies[].provides` links each library to the algorithms it implements.
 *
 * The document is deterministic for a given state (no timestamp or random serial number), so its
 * digest, which the attestation names as a subject, can be recomputed from what GET .../cbom serves.
 */
import { base64Decode, bytesToHex } from '../../../shared/crypto/encoding'
import { ALGORITHM_REGISTRY, type AlgorithmEntry } from '../../../shared/crypto-policy'
import { type CryptoPolicy, checkAlgorithm } from '../../../shared/crypto-policy/policy'
import type { CryptoLibraryFacts } from './crypto-library-list'

export interface CbomKey {
  kid: string
  /** JOSE algorithm name (ML-DSA-65, EdDSA, ML-DSA-44, ...). */
  alg: string
  purpose: 'access_tokens' | 'audit_checkpoints'
  state: 'active' | 'deactivated'
  /** When the platform log first recorded the key set holding this key (ISO), if it did. */
  activationDate: string | null
  publicKeyBytes: number
}

export interface CbomInputs {
  application: { name: string; version: string }
  libraries: readonly CryptoLibraryFacts[]
  tenantId: string
  policy: CryptoPolicy
  policyDigest: string
  keys: readonly CbomKey[]
}

/** Algorithms the product implements that are not policy-governed registry entries. */
const UNLISTED_ALGORITHMS = [
  { name: 'SHAKE256', primitive: 'xof', oid: '2.16.840.1.101.3.4.2.12', level: 5, functions: ['digest'] },
  { name: 'Argon2id', primitive: 'kdf', oid: null, level: 0, functions: ['keyderive'] },
] as const

const JOSE_TO_REGISTRY: Record<string, string> = {
  'ML-DSA-44': 'dilithium-2',
  'ML-DSA-65': 'dilithium-3',
  'ML-DSA-87': 'dilithium-5',
  EdDSA: 'ed25519',
}

function primitiveOf(entry: AlgorithmEntry): string {
  if (entry.type === 'kem') return entry.classical ? 'key-agree' : 'kem'
  if (entry.type === 'symmetric') return 'ae'
  return entry.type
}

function functionsOf(entry: AlgorithmEntry): string[] {
  switch (entry.type) {
    case 'kem':
      return entry.classical ? ['keygen', 'keyderive'] : ['keygen', 'encapsulate', 'decapsulate']
    case 'signature':
      return ['keygen', 'sign', 'verify']
    case 'symmetric':
      return ['encrypt', 'decrypt', 'tag']
    case 'hash':
      return ['digest']
    case 'mac':
      return ['tag']
  }
}

function parameterSet(entry: AlgorithmEntry): string | undefined {
  const m = /(\d+)(f)?$/.exec(entry.standardName.replace(/-GCM$/, ''))
  return m ? `${m[1]}${m[2] ?? ''}` : undefined
}

const algorithmRef = (id: string) => `crypto/algorithm/${id}`
const libraryRef = (lib: CryptoLibraryFacts) => `pkg:npm/${lib.name.replace('@', '%40')}@${lib.version}`

/** An SRI integrity value (`sha512-<base64>`) as its algorithm and hex digest; null if malformed. */
export function integrityHash(integrity: string): { alg: string; content: string } | null {
  const m = /^sha(256|384|512)-(.+)$/.exec(integrity)
  if (!m) return null
  const bytes = base64Decode(m[2]!)
  if (!bytes) return null
  return { alg: `SHA-${m[1]}`, content: bytesToHex(bytes) }
}

export function buildCbom(inputs: CbomInputs): Record<string, unknown> {
  const implemented = new Set(inputs.libraries.flatMap((l) => l.implements))
  const entries = ALGORITHM_REGISTRY.filter((entry) => {
    if (implemented.has(entry.standardName)) return true
    return checkAlgorithm(inputs.policy, entry.id, 'request_declared').allowed
  })

  const libraries = inputs.libraries.map((lib) => {
    const hash = integrityHash(lib.integrity)
    const [group, name] = lib.name.startsWith('@') ? lib.name.slice(1).split('/') : [undefined, lib.name]
    return {
      type: 'library',
      'bom-ref': libraryRef(lib),
      ...(group ? { group: `@${group}` } : {}),
      name: name!,
      version: lib.version,
      purl: libraryRef(lib),
      description: lib.role,
      ...(hash ? { hashes: [hash] } : {}),
    }
  })

  const algorithms = entries.map((entry) => {
    const check = checkAlgorithm(inputs.policy, entry.id, 'request_declared')
    const set = parameterSet(entry)
    return {
      type: 'cryptographic-asset',
      'bom-ref': algorithmRef(entry.id),
      name: entry.standardName,
      description: `${entry.reference}; registry id ${entry.id}, ${entry.status}`,
      cryptoProperties: {
        assetType: 'algorithm',
        algorithmProperties: {
          primitive: primitiveOf(entry),
          ...(set ? { parameterSetIdentifier: set } : {}),
          executionEnvironment: 'software-plain-ram',
          implementationPlatform: 'generic',
          certificationLevel: ['none'],
          cryptoFunctions: functionsOf(entry),
          nistQuantumSecurityLevel: entry.securityLevel ?? 0,
        },
        ...(entry.oid ? { oid: entry.oid } : {}),
      },
      properties: [
        { name: 'svc:registry_status', value: entry.status },
        { name: 'svc:implemented', value: String(implemented.has(entry.standardName)) },
        {
          name: 'svc:policy_decision',
          value: check.allowed ? 'allowed' : check.enforced ? 'blocked' : 'logged',
        },
        ...(entry.deprecationDate ? [{ name: 'svc:deprecation_date', value: entry.deprecationDate }] : []),
      ],
    }
  })

  const unlisted = UNLISTED_ALGORITHMS.map((a) => ({
    type: 'cryptographic-asset',
    'bom-ref': algorithmRef(a.name.toLowerCase()),
    name: a.name,
    cryptoProperties: {
      assetType: 'algorithm',
      algorithmProperties: {
        primitive: a.primitive,
        executionEnvironment: 'software-plain-ram',
        implementationPlatform: 'generic',
        certificationLevel: ['none'],
        cryptoFunctions: [...a.functions],
        nistQuantumSecurityLevel: a.level,
      },
      ...(a.oid ? { oid: a.oid } : {}),
    },
    properties: [{ name: 'svc:implemented', value: 'true' }],
  }))

  const keys = inputs.keys.map((key) => {
    const registryId = JOSE_TO_REGISTRY[key.alg]
    return {
      type: 'cryptographic-asset',
      'bom-ref': `crypto/key/${key.purpose}/${key.kid}`,
      name: `${key.purpose === 'access_tokens' ? 'access-token' : 'audit-checkpoint'} signing key ${key.kid}`,
      cryptoProperties: {
        assetType: 'related-crypto-material',
        relatedCryptoMaterialProperties: {
          type: 'public-key',
          id: key.kid,
          state: key.state,
          ...(registryId ? { algorithmRef: algorithmRef(registryId) } : {}),
          ...(key.activationDate ? { activationDate: key.activationDate } : {}),
          size: key.publicKeyBytes * 8,
          format: 'JWK',
        },
      },
      properties: [{ name: 'svc:key_purpose', value: key.purpose }],
    }
  })

  const protocolAlgorithms = (ids: string[]) =>
    ids.filter((id) => entries.some((e) => e.id === id)).map(algorithmRef)
  const protocols = [
    {
      'bom-ref': 'crypto/protocol/tls',
      name: 'TLS 1.3 (terminated at the Cloudflare edge)',
      protocolProperties: {
        type: 'tls',
        version: '1.3',
        cipherSuites: [
          {
            name: 'TLS_AES_256_GCM_SHA384',
            algorithms: protocolAlgorithms(['aes-256-gcm', 'sha-384']),
            identifiers: ['0x13,0x02'],
          },
          {
            name: 'TLS_AES_128_GCM_SHA256',
            algorithms: protocolAlgorithms(['aes-128-gcm', 'sha-256']),
            identifiers: ['0x13,0x01'],
          },
        ],
      },
      description: 'Key exchange offered by the edge: X25519MLKEM768 (hybrid) and X25519',
    },
    {
      'bom-ref': 'crypto/protocol/jws',
      name: 'JWS access tokens (RFC 7515, ML-DSA per RFC 9964, EdDSA)',
      protocolProperties: {
        type: 'other',
        version: 'RFC 7515',
        cryptoRefArray: protocolAlgorithms(['dilithium-3', 'dilithium-5', 'dilithium-2', 'ed25519']),
      },
    },
    {
      'bom-ref': 'crypto/protocol/c2sp-signed-note',
      name: 'C2SP signed-note checkpoints with tlog-cosignature (audit logs)',
      protocolProperties: {
        type: 'other',
        version: 'v1',
        cryptoRefArray: protocolAlgorithms(['ed25519', 'dilithium-2', 'sha-256']),
      },
    },
    {
      'bom-ref': 'crypto/protocol/dsse',
      name: 'DSSE envelopes (attestations, in-toto Statement v1)',
      protocolProperties: {
        type: 'other',
        version: 'v1',
        cryptoRefArray: protocolAlgorithms(['dilithium-3', 'ed25519']),
      },
    },
  ].map((p) => ({
    type: 'cryptographic-asset',
    'bom-ref': p['bom-ref'],
    name: p.name,
    ...('description' in p ? { description: p.description } : {}),
    cryptoProperties: { assetType: 'protocol', protocolProperties: p.protocolProperties },
  }))

  const present = new Set([...entries.map((e) => e.standardName), ...UNLISTED_ALGORITHMS.map((a) => a.name)])
  const refOf = (name: string) => {
    const entry = entries.find((e) => e.standardName === name)
    if (entry) return algorithmRef(entry.id)
    const unlisted = UNLISTED_ALGORITHMS.find((a) => a.name === name)
    return unlisted ? algorithmRef(unlisted.name.toLowerCase()) : null
  }
  const dependencies = inputs.libraries.map((lib) => ({
    ref: libraryRef(lib),
    provides: lib.implements
      .filter((name) => present.has(name))
      .map(refOf)
      .filter((r): r is string => r !== null),
  }))

  return {
    $schema: 'http://cyclonedx.org/schema/bom-1.6.schema.json',
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    version: 1,
    metadata: {
      component: {
        type: 'application',
        'bom-ref': 'svc',
        name: inputs.application.name,
        version: inputs.application.version,
      },
      properties: [
        { name: 'svc:tenant_id', value: inputs.tenantId },
        { name: 'svc:policy_digest', value: inputs.policyDigest },
        { name: 'svc:policy_mode', value: inputs.policy.mode },
      ],
    },
    components: [...libraries, ...algorithms, ...unlisted, ...keys, ...protocols],
    dependencies,
  }
}
