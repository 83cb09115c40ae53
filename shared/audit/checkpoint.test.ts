import { ml_dsa44 } from '@noble/post-quantum/ml-dsa.js'
import { describe, expect, it } from 'vitest'
import { base64Decode } from '../crypto/encoding'
import { generateSigningKey } from '../crypto/jwk'
import {
  checkpointBody,
  compareCheckpoints,
  noteKeyId,
  parseCheckpointNote,
  rawPublicKey,
  signCheckpoint,
  verifierKey,
  verifyCheckpointNote,
} from './checkpoint'

const root = Uint8Array.from({ length: 32 }, (_, i) => i)

describe('C2SP signed-note checkpoints', () => {
  it('computes the signed-note spec example verifier key (example.com/foo+530d903a+…)', () => {
    const material = base64Decode('AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k')!
    expect(material[0]).toBe(0x01)
    expect(verifierKey('example.com/foo', 0x01, material.slice(1))).toBe(
      'example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k',
    )
    expect([...noteKeyId('example.com/foo', 0x01, material.slice(1))]).toEqual([0x53, 0x0d, 0x90, 0x3a])
  })

  it('formats the body as origin, size, base64 root, each newline-terminated', () => {
    expect(checkpointBody({ origin: 'example.com/log', size: 0, rootHash: root })).toBe(
      'example.com/log\n0\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n',
    )
    expect(() => checkpointBody({ origin: 'has space', size: 1, rootHash: root })).toThrow()
    expect(() => checkpointBody({ origin: 'a+b', size: 1, rootHash: root })).toThrow()
  })

  it('signs with Ed25519 and an ML-DSA-44 cosignature that verify; any change fails', async () => {
    const ed25519 = await generateSigningKey('EdDSA')
    const mlDsa44 = await generateSigningKey('ML-DSA-44')
    const keys = { ed25519: rawPublicKey(ed25519.publicJwk), mlDsa44: rawPublicKey(mlDsa44.publicJwk) }
    const head = { origin: 'svc.test/audit-log/tenant/x', size: 42, rootHash: root }
    const signed = await signCheckpoint(head, { ed25519, mlDsa44 }, 1_795_000_000)
    const parsed = parseCheckpointNote(signed.note)!
    expect(parsed.signatures).toHaveLength(2)
    expect(parsed.signatures.every((s) => s.name === head.origin)).toBe(true)
    // The cosignature: u64 timestamp then the 2420-byte FIPS 204 signature.
    expect(parsed.signatures[1]!.signature).toHaveLength(8 + ml_dsa44.lengths.signature!)
    expect(await verifyCheckpointNote(signed.note, keys)).toMatchObject({
      size: 42,
      timestamp: 1_795_000_000,
    })

    expect(await verifyCheckpointNote(signed.note.replace('\n42\n', '\n43\n'), keys)).toBeNull()
    const other = await generateSigningKey('EdDSA')
    expect(
      await verifyCheckpointNote(signed.note, { ...keys, ed25519: rawPublicKey(other.publicJwk) }),
    ).toBeNull()
    expect(parseCheckpointNote('not a note')).toBeNull()
  })

  it('compares checkpoints: same size and root is consistent, same size and another root is a fork', () => {
    const a = { origin: 'o', size: 5, rootHash: root }
    expect(compareCheckpoints(a, { ...a })).toEqual({ verdict: 'consistent' })
    expect(compareCheckpoints(a, { ...a, rootHash: new Uint8Array(32) })).toMatchObject({ verdict: 'fork' })
    expect(compareCheckpoints(a, { ...a, size: 9 })).toEqual({ verdict: 'proof_needed', first: 5, second: 9 })
  })
})
