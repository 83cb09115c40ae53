import { describe, expect, it } from 'vitest'
import { AppError } from '../http/errors'
import { ALGORITHM_REGISTRY, filterAlgorithms, findAlgorithm, getAlgorithm } from './registry'

// The spec's three registry tables, copied verbatim.
const SPEC_NIST_FINAL = [
  ['kyber-512', 'ML-KEM-512', 'kem', 1],
  ['kyber-768', 'ML-KEM-768', 'kem', 3],
  ['kyber-1024', 'ML-KEM-1024', 'kem', 5],
  ['dilithium-2', 'ML-DSA-44', 'signature', 2],
  ['dilithium-3', 'ML-DSA-65', 'signature', 3],
  ['dilithium-5', 'ML-DSA-87', 'signature', 5],
  ['sphincs-shake-128f-simple', 'SLH-DSA-SHAKE-128f', 'signature', 1],
  ['sphincs-shake-256f-simple', 'SLH-DSA-SHAKE-256f', 'signature', 5],
] as const
const SPEC_DRAFT = [
  ['falcon-512', 'signature', 1],
  ['falcon-1024', 'signature', 5],
] as const
const SPEC_DEPRECATED = [
  ['rsa-2048', 'dilithium-2', '2030-01-01'],
  ['rsa-4096', 'dilithium-3', '2030-01-01'],
  ['ecdsa-p256', 'dilithium-2', '2030-01-01'],
  ['ecdsa-p384', 'dilithium-3', '2030-01-01'],
] as const

const PRODUCT_IDS = [
  'ed25519',
  'x25519',
  'ecdh-p256',
  'ecdh-p384',
  'aes-256-gcm',
  'aes-128-gcm',
  'chacha20-poly1305',
  'sha-256',
  'sha-384',
  'sha-512',
  'sha3-256',
  'sha3-512',
  'hmac-sha-256',
]

describe('registry contents', () => {
  it.each(SPEC_NIST_FINAL)('%s is NIST-final %s, %s, level %i', (id, standardName, type, level) => {
    expect(findAlgorithm(id)).toMatchObject({
      id,
      standardName,
      type,
      securityLevel: level,
      status: 'NIST_FINAL',
      family: 'post_quantum',
      postQuantum: true,
      classical: false,
      source: 'spec',
    })
  })

  it.each(SPEC_DRAFT)('%s is a draft %s at level %i', (id, type, level) => {
    expect(findAlgorithm(id)).toMatchObject({
      id,
      type,
      securityLevel: level,
      status: 'DRAFT',
      postQuantum: true,
      source: 'spec',
    })
  })

  it.each(SPEC_DEPRECATED)('%s is deprecated, replaced by %s from %s', (id, replacement, date) => {
    expect(findAlgorithm(id)).toMatchObject({
      id,
      status: 'DEPRECATED',
      replacement,
      deprecationDate: date,
      classical: true,
      securityLevel: null,
      source: 'spec',
    })
  })

  it('holds exactly the spec entries plus the documented product entries', () => {
    const specIds = [...SPEC_NIST_FINAL, ...SPEC_DRAFT, ...SPEC_DEPRECATED].map((row) => row[0])
    expect(ALGORITHM_REGISTRY.filter((e) => e.source === 'spec').map((e) => e.id)).toEqual(specIds)
    expect(ALGORITHM_REGISTRY.filter((e) => e.source === 'product').map((e) => e.id)).toEqual(PRODUCT_IDS)
  })

  it('gives Ed25519 the lifecycle of ecdsa-p256 (classical, deprecated for dilithium-2 from 2030)', () => {
    expect(findAlgorithm('ed25519')).toMatchObject({
      type: 'signature',
      status: 'DEPRECATED',
      replacement: 'dilithium-2',
      deprecationDate: '2030-01-01',
      classical: true,
      oid: '1.3.101.112',
    })
  })

  it('is internally consistent', () => {
    for (const e of ALGORITHM_REGISTRY) {
      expect(e.id).toBe(e.id.toLowerCase())
      expect(e.classical, e.id).toBe(e.securityLevel === null)
      if (e.status === 'DEPRECATED') {
        const replacement = findAlgorithm(e.replacement ?? '')
        expect(replacement?.status, `${e.id} -> ${e.replacement}`).toBe('NIST_FINAL')
        expect(replacement?.type, e.id).toBe(e.type)
        expect(e.deprecationDate).toMatch(/^\d{4}-\d{2}-\d{2}$/)
      } else {
        expect(e.replacement, e.id).toBeNull()
      }
      if (e.oid !== null) expect(e.oid).toMatch(/^\d+(\.\d+)+$/)
    }
    expect(findAlgorithm('kyber-768')?.oid).toBe('2.16.840.1.101.3.4.4.2')
    expect(findAlgorithm('dilithium-3')?.oid).toBe('2.16.840.1.101.3.4.3.18')
    expect(findAlgorithm('sphincs-shake-256f-simple')?.oid).toBe('2.16.840.1.101.3.4.3.31')
  })
})

describe('lookup', () => {
  it('finds by id, standard name or alias, ignoring case and spaces', () => {
    expect(findAlgorithm('ML-DSA-65')?.id).toBe('dilithium-3')
    expect(findAlgorithm('ml-kem-1024')?.id).toBe('kyber-1024')
    expect(findAlgorithm(' DILITHIUM-5 ')?.id).toBe('dilithium-5')
    expect(findAlgorithm('SLH-DSA-SHAKE-128f')?.id).toBe('sphincs-shake-128f-simple')
    expect(findAlgorithm('EdDSA')?.id).toBe('ed25519')
    expect(findAlgorithm('ES384')?.id).toBe('ecdsa-p384')
    expect(findAlgorithm('FN-DSA-1024')?.id).toBe('falcon-1024')
    expect(findAlgorithm('kyber-999')).toBeUndefined()
  })

  it('getAlgorithm answers an unknown name with a 400 that lists the known ids', () => {
    const error = (() => {
      try {
        getAlgorithm('kyber-999')
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ status: 400, code: 'unknown_algorithm', param: 'algorithm' })
    expect((error as AppError).message).toContain('kyber-999')
    expect((error as AppError).message).toContain('dilithium-3')
  })
})

describe('filterAlgorithms (?status=&type=)', () => {
  it('returns everything without filters', () => {
    expect(filterAlgorithms({})).toHaveLength(ALGORITHM_REGISTRY.length)
    expect(filterAlgorithms({ status: '', type: null })).toHaveLength(ALGORITHM_REGISTRY.length)
  })

  it('filters by status, case-insensitively', () => {
    for (const status of ['NIST_FINAL', 'nist_final', 'Nist-Final']) {
      const found = filterAlgorithms({ status })
      expect(found.every((e) => e.status === 'NIST_FINAL')).toBe(true)
      expect(found.map((e) => e.id)).toEqual(expect.arrayContaining(SPEC_NIST_FINAL.map((r) => r[0])))
    }
    expect(filterAlgorithms({ status: 'draft' }).map((e) => e.id)).toEqual(['falcon-512', 'falcon-1024'])
    expect(filterAlgorithms({ status: 'DEPRECATED' }).map((e) => e.id)).toEqual(
      expect.arrayContaining(SPEC_DEPRECATED.map((r) => r[0])),
    )
  })

  it('filters by type and by both', () => {
    expect(filterAlgorithms({ type: 'KEM' }).every((e) => e.type === 'kem')).toBe(true)
    expect(filterAlgorithms({ status: 'NIST_FINAL', type: 'signature' }).map((e) => e.id)).toEqual([
      'dilithium-2',
      'dilithium-3',
      'dilithium-5',
      'sphincs-shake-128f-simple',
      'sphincs-shake-256f-simple',
    ])
    expect(filterAlgorithms({ type: 'hash' }).map((e) => e.id)).toEqual([
      'sha-256',
      'sha-384',
      'sha-512',
      'sha3-256',
      'sha3-512',
    ])
  })

  it('rejects unknown filter values with a 400 naming the allowed ones', () => {
    expect(() => filterAlgorithms({ status: 'final' })).toThrow(
      expect.objectContaining({
        status: 400,
        code: 'invalid_algorithm_filter',
        param: 'status',
        message: 'status must be one of NIST_FINAL, DRAFT, DEPRECATED (got "final").',
      }),
    )
    expect(() => filterAlgorithms({ type: 'cipher' })).toThrow(
      expect.objectContaining({
        param: 'type',
        message: 'type must be one of kem, signature, symmetric, hash, mac (got "cipher").',
      }),
    )
  })
})
