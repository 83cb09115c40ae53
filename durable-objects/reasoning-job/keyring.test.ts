import { describe, expect, it } from 'vitest'
import { AppError } from '../../shared/http/errors'
import { generateKeyringEntry, keyringFromSecret } from './keyring'

const unavailable = (detail: string) =>
  new AppError(503, 'keys_unavailable', 'no keys', { internalMessage: detail })

async function refusal(secret: string | undefined): Promise<string> {
  const err = await keyringFromSecret(secret, 'TEST_KEYS', 'aes-gcm', unavailable).catch((e: unknown) => e)
  expect(err).toBeInstanceOf(AppError)
  return (err as AppError).internalMessage ?? ''
}

describe('keyringFromSecret', () => {
  it('imports every listed key; the first protects new material', async () => {
    const secret = JSON.stringify([generateKeyringEntry('new'), generateKeyringEntry('old')])
    const ring = await keyringFromSecret(secret, 'TEST_KEYS', 'aes-gcm', unavailable)
    expect(ring.firstKid).toBe('new')
    expect([...ring.keys.keys()]).toEqual(['new', 'old'])
    const iv = new Uint8Array(12)
    const sealed = await crypto.subtle.encrypt(
      { name: 'AES-GCM', iv },
      ring.keys.get('old')!,
      new Uint8Array([1, 2]),
    )
    const opened = await crypto.subtle.decrypt({ name: 'AES-GCM', iv }, ring.keys.get('old')!, sealed)
    expect([...new Uint8Array(opened)]).toEqual([1, 2])
    // The same secret for HKDF is a different keyring (keys imported for another use).
    const hkdf = await keyringFromSecret(secret, 'TEST_KEYS', 'hkdf', unavailable)
    expect(hkdf.keys.get('new')!.algorithm.name).toBe('HKDF')
  })

  it('refuses a missing, non-JSON or malformed secret, naming the variable', async () => {
    expect(await refusal(undefined)).toBe('TEST_KEYS is not set')
    expect(await refusal('{')).toBe('TEST_KEYS is not JSON')
    expect(await refusal('[]')).toMatch(/^TEST_KEYS: /)
    expect(await refusal(JSON.stringify([{ kid: 'a', key: 'short' }]))).toContain('32 bytes in base64url')
    // 43 base64url characters whose last one sets unused bits: not a canonical 32-byte key.
    expect(await refusal(JSON.stringify([{ kid: 'a', key: `${'A'.repeat(42)}B` }]))).toContain(
      'key a is not 32 bytes',
    )
  })
})
