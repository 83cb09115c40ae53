import { describe, expect, it } from 'vitest'
import { canonicalJson, sha256Hex, sha384Hex } from './digests'

describe('canonicalJson', () => {
  it('sorts keys at every depth, keeps array order, drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: 'x' }, u: undefined })).toBe(
      '{"a":{"c":"x","d":[3,{"y":null,"z":true}]},"b":1}',
    )
    expect(canonicalJson([undefined, Number.NaN, 'é'])).toBe('[null,null,"é"]')
  })

  it('orders keys by UTF-16 code unit, as RFC 8785 does', () => {
    // RFC 8785 §3.2.3's ordering example, reduced: "\u20ac" (€) sorts before "\ud83d\ude00" (😀) and after "1".
    expect(canonicalJson({ '😀': 3, '€': 2, '1': 1 })).toBe('{"1":1,"€":2,"😀":3}')
  })
})

describe('digests', () => {
  it('hex SHA-256 and SHA-384 of strings (as UTF-8) and of bytes', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    expect(sha256Hex(new TextEncoder().encode('abc'))).toBe(sha256Hex('abc'))
    expect(sha384Hex('abc')).toBe(
      'cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7',
    )
  })
})
