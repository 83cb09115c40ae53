/**
 * Independent checks of what the trust plane signs, for the Node-side tests, sharing no code with
 * the product:
 *
 * - checkpoints' Ed25519 note signature: sigstore's signed-note checkpoint verifier
 *   (@sigstore/verify, the one that verifies Rekor checkpoints), given the key ID this file
 *   computes from the C2SP signed-note text;
 * - checkpoints' ML-DSA-44 cosignature: the `cosigned_message` rebuilt here from c2sp.org/
 *   tlog-cosignature, verified with liboqs (@oqs/liboqs-js, WebAssembly), a different ML-DSA
 *   implementation from the product's @noble/post-quantum;
 * - DSSE envelopes: the PAE rebuilt here from the DSSE v1 spec, ML-DSA-65 verified with liboqs and
 *   Ed25519 with Node's crypto, against the public JWKS.
 */
import { createHash, createPublicKey, verify as nodeVerify } from 'node:crypto'
import { createRequire } from 'node:module'
import { createMLDSA44, createMLDSA65 } from '@oqs/liboqs-js/sig'

const require = createRequire(import.meta.url)
// sigstore's checkpoint verifier is internal to @sigstore/verify (no "exports" map: the file is reachable).
const { verifyCheckpoint } = require('@sigstore/verify/dist/tlog/checkpoint.js') as {
  verifyCheckpoint(
    entry: { inclusionProof: { checkpoint: { envelope: string } } },
    tlogs: { logID: Buffer; publicKey: unknown; baseURL: string; validFor: { start: Date; end: Date } }[],
  ): { origin: string; logSize: bigint; logHash: Buffer }
}

const sha256 = (...parts: (Buffer | Uint8Array | string)[]) => {
  const h = createHash('sha256')
  for (const p of parts) h.update(p)
  return h.digest()
}

/** C2SP signed-note: key ID = SHA-256(name || "\n" || type || public key)[:4]. */
export function keyId(name: string, type: number, publicKey: Uint8Array): Buffer {
  return sha256(Buffer.from(name, 'utf8'), Buffer.from([0x0a, type]), publicKey).subarray(0, 4)
}

function ed25519Key(raw: Uint8Array) {
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') },
    format: 'jwk',
  })
}

/** The Ed25519 note signature, through sigstore's checkpoint verifier. Returns the head it verified. */
export function verifyNoteWithSigstore(note: string, origin: string, ed25519PublicKey: Uint8Array) {
  const id = keyId(origin, 0x01, ed25519PublicKey)
  return verifyCheckpoint({ inclusionProof: { checkpoint: { envelope: note } } }, [
    {
      logID: Buffer.concat([id, Buffer.alloc(28)]),
      publicKey: ed25519Key(ed25519PublicKey),
      baseURL: origin,
      validFor: { start: new Date(0), end: new Date(8.64e15) },
    },
  ])
}

function u64(value: bigint): Buffer {
  const b = Buffer.alloc(8)
  b.writeBigUInt64BE(value)
  return b
}

const opaque8 = (text: string) => {
  const bytes = Buffer.from(text, 'utf8')
  return Buffer.concat([Buffer.from([bytes.length]), bytes])
}

/** The ML-DSA-44 cosignature line of `note` by `name`, verified with liboqs. */
export async function verifyCosignatureWithLiboqs(note: string, name: string, mlDsa44PublicKey: Uint8Array) {
  const [text, signatures] = [
    note.slice(0, note.lastIndexOf('\n\n') + 1),
    note.slice(note.lastIndexOf('\n\n') + 2),
  ]
  const [origin, size, root] = text.split('\n') as [string, string, string]
  const id = keyId(name, 0x06, mlDsa44PublicKey)
  const line = signatures
    .split('\n')
    .map((l) => /^\u2014 (\S+) (\S+)$/u.exec(l))
    .find((m) => m && m[1] === name && Buffer.from(m[2]!, 'base64').subarray(0, 4).equals(id))
  if (!line) return { verified: false as const, reason: 'no cosignature line with this name and key ID' }
  const bytes = Buffer.from(line[2]!, 'base64')
  const timestamp = bytes.readBigUInt64BE(4)
  const signature = bytes.subarray(12)
  const message = Buffer.concat([
    Buffer.from('subtree/v1\n\0', 'utf8'),
    opaque8(name),
    u64(timestamp),
    opaque8(origin),
    u64(0n),
    u64(BigInt(size)),
    Buffer.from(root, 'base64'),
  ])
  const verifier = await createMLDSA44()
  try {
    return {
      verified: (await verifier.verify(
        new Uint8Array(message),
        new Uint8Array(signature),
        new Uint8Array(mlDsa44PublicKey),
      )) as boolean,
      timestamp,
    }
  } finally {
    verifier.destroy()
  }
}

/** DSSE v1 PAE, from the spec: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body (LEN in bytes, ASCII decimal). */
export function dssePae(payloadType: string, payload: Buffer): Buffer {
  const type = Buffer.from(payloadType, 'utf8')
  return Buffer.concat([
    Buffer.from(`DSSEv1 ${type.length} `, 'utf8'),
    type,
    Buffer.from(` ${payload.length} `, 'utf8'),
    payload,
  ])
}

interface Jwk {
  kty: string
  alg: string
  kid: string
  pub?: string
  x?: string
}

/** Verifies every DSSE signature with the JWKS; returns the algorithms that verified. */
export async function verifyDsseWithJwks(
  envelope: { payloadType: string; payload: string; signatures: { keyid: string; sig: string }[] },
  jwks: { keys: Jwk[] },
): Promise<string[]> {
  const pae = dssePae(envelope.payloadType, Buffer.from(envelope.payload, 'base64'))
  const verified: string[] = []
  for (const { keyid, sig } of envelope.signatures) {
    const jwk = jwks.keys.find((k) => k.kid === keyid)
    if (!jwk) continue
    const signature = Buffer.from(sig, 'base64')
    if (jwk.alg === 'EdDSA' && jwk.x) {
      if (nodeVerify(null, pae, ed25519Key(Buffer.from(jwk.x, 'base64url')), signature))
        verified.push('EdDSA')
    } else if (jwk.alg === 'ML-DSA-65' && jwk.pub) {
      const verifier = await createMLDSA65()
      try {
        if (
          await verifier.verify(
            new Uint8Array(pae),
            new Uint8Array(signature),
            new Uint8Array(Buffer.from(jwk.pub, 'base64url')),
          )
        )
          verified.push('ML-DSA-65')
      } finally {
        verifier.destroy()
      }
    }
  }
  return verified
}
