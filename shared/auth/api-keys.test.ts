import { describe, expect, it } from 'vitest'
import {
  API_KEY_PREFIX,
  apiKeyMode,
  apiKeySuffix,
  base62,
  digestsEqual,
  generateApiKey,
  hashApiKey,
} from './api-keys'

describe('API keys', () => {
  it('generates keys of each mode with its prefix and 43 base62 characters (256 random bits)', () => {
    for (const mode of ['live', 'test'] as const) {
      const key = generateApiKey(mode)
      expect(key).toMatch(new RegExp(`^${API_KEY_PREFIX[mode]}[0-9A-Za-z]{43}$`))
      expect(apiKeyMode(key)).toBe(mode)
    }
    const many = new Set(Array.from({ length: 200 }, () => generateApiKey('live')))
    expect(many.size).toBe(200)
  })

  it('recognises only keys shaped like ours', () => {
    const body = 'A'.repeat(43)
    expect(apiKeyMode(`svc_sk_live_${body}`)).toBe('live')
    expect(apiKeyMode(`svc_sk_test_${body}`)).toBe('test')
    for (const candidate of [
      `svc_sk_prod_${body}`,
      `sk-${body}`,
      `svc_sa_${body}`,
      `svc_sk_live_${'A'.repeat(39)}`,
      `svc_sk_live_${'A'.repeat(65)}`,
      `svc_sk_live_${'A'.repeat(42)}-`,
      `svc_sk_live_${body} `,
      `Bearer svc_sk_live_${body}`,
      '',
    ]) {
      expect(apiKeyMode(candidate), candidate).toBeNull()
    }
  })

  it('stores the hex SHA-256 of the whole key and shows its last four characters', async () => {
    const key = `svc_sk_test_${'0'.repeat(39)}abcd`
    expect(await hashApiKey(key)).toBe('444e3369266e3df7273b7bab3749a1141f69a83e3658841261d207563e56b831')
    expect(apiKeySuffix(key)).toBe('abcd')
    expect(await hashApiKey(`svc_sk_live_${'0'.repeat(39)}abcd`)).not.toBe(await hashApiKey(key))
  })

  it('encodes 32 bytes as 43 base62 characters, left-padded', () => {
    expect(base62(new Uint8Array(32))).toBe('0'.repeat(43))
    expect(base62(new Uint8Array(32).fill(0xff))).toBe('yhjskwdA6OZ1AL1YmHWZWm8LLG7HjnuCA2j5rOw8Xp1')
    const one = new Uint8Array(32)
    one[31] = 1
    expect(base62(one)).toBe(`${'0'.repeat(42)}1`)
  })

  it('compares digests exactly, and never equal across lengths', () => {
    const a = 'ab'.repeat(32)
    expect(digestsEqual(a, a)).toBe(true)
    expect(digestsEqual(a, `${a.slice(0, -1)}c`)).toBe(false)
    expect(digestsEqual(`c${a.slice(1)}`, a)).toBe(false)
    expect(digestsEqual(a, a.slice(0, -2))).toBe(false)
  })
})
