import { describe, expect, it } from 'vitest'
import {
  base64Decode,
  base64Encode,
  base64urlDecode,
  base64urlEncode,
  bytesToHex,
  constantTimeEqual,
  hexToBytes,
  utf8Decode,
} from './encoding'

describe('base64url', () => {
  it('round-trips bytes without padding', () => {
    const bytes = Uint8Array.from([0xfb, 0xff, 0x01, 0x00])
    expect(base64urlEncode(bytes)).toBe('-_8BAA')
    expect(base64urlDecode('-_8BAA')).toEqual(bytes)
    expect(base64urlDecode('')).toEqual(new Uint8Array())
  })

  it('accepts only the canonical unpadded url-safe form', () => {
    for (const bad of ['-_8BAA==', '+/8BAA', '-_8B AA', '-_8BA', '-_8BAB', 'QQ=', 'QR']) {
      expect(base64urlDecode(bad), bad).toBeNull()
    }
    expect(base64urlDecode('QQ')).toEqual(Uint8Array.from([0x41]))
  })
})

describe('base64', () => {
  it('round-trips bytes with padding', () => {
    const bytes = Uint8Array.from([0xfb, 0xff, 0x01, 0x00])
    expect(base64Encode(bytes)).toBe('+/8BAA==')
    expect(base64Decode('+/8BAA==')).toEqual(bytes)
    expect(base64Decode('')).toEqual(new Uint8Array())
  })

  it('encodes inputs larger than one slice of the binary string', () => {
    const bytes = Uint8Array.from({ length: 100_003 }, (_, i) => (i * 7) & 0xff)
    expect(base64Decode(base64Encode(bytes))).toEqual(bytes)
  })

  it('accepts only the canonical padded standard form', () => {
    for (const bad of ['-_8BAA==', '+/8BAA', '+/8B AA==', '+/8BA===', '+/8BAB==', 'QR==', 'Q===', '=QQ=']) {
      expect(base64Decode(bad), bad).toBeNull()
    }
    expect(base64Decode('QQ==')).toEqual(Uint8Array.from([0x41]))
  })
})

describe('utf8Decode', () => {
  it('rejects invalid UTF-8 instead of replacing it', () => {
    expect(utf8Decode(Uint8Array.from([0x68, 0x69]))).toBe('hi')
    expect(utf8Decode(Uint8Array.from([0xc3, 0x28]))).toBeNull()
  })
})

describe('hex', () => {
  it('round-trips and rejects odd or non-hex input', () => {
    expect(bytesToHex(hexToBytes('00ff10'))).toBe('00ff10')
    expect(() => hexToBytes('abc')).toThrow(TypeError)
    expect(() => hexToBytes('zz')).toThrow(TypeError)
  })
})

describe('constantTimeEqual', () => {
  it('compares content and length', () => {
    expect(constantTimeEqual(hexToBytes('0102'), hexToBytes('0102'))).toBe(true)
    expect(constantTimeEqual(hexToBytes('0102'), hexToBytes('0103'))).toBe(false)
    expect(constantTimeEqual(hexToBytes('0102'), hexToBytes('01'))).toBe(false)
    expect(constantTimeEqual(new Uint8Array(), new Uint8Array())).toBe(true)
  })
})
