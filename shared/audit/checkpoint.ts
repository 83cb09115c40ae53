/**
 * Checkpoints of the audit logs: C2SP tlog-checkpoint note bodies, signed as C2SP signed notes with
 * two signature lines under the same key name (the log's origin, as tlog-checkpoint recommends):
 *
 *   <origin>\n<tree size>\n<base64 root hash>\n
 *   \n
 *   — <origin> base64(key ID || Ed25519 signature of the note text)                 (signed-note, type 0x01)
 *   — <origin> base64(key ID || u64 timestamp || ML-DSA-44 signature)                (tlog-cosignature, type 0x06)
 *
 * Key IDs: SHA-256(name || "\n" || type || public key)[:4]. The ML-DSA-44 cosignature signs the
 * `cosigned_message` structure of c2sp.org/tlog-cosignature (label "subtree/v1\n\0", the cosigner
 * name, the timestamp, the log origin, start 0, end = tree size, the root hash). Verifier keys
 * (vkeys) are `<name>+<hex key ID>+base64(type || public key)`.
 *
 * The log signs with its own keys (LOG_SIGNING_KEYS), never the token keys: see docs/audit-log.md.
 */
import { sha256 } from '@noble/hashes/sha2.js'
import { base64Decode, base64Encode, base64urlDecode, bytesToHex, utf8 } from '../crypto/encoding'
import type { PublicJwk, SigningKey } from '../crypto/jwk'
import { mlDsaFor } from '../crypto/post-quantum'

export const SIGNATURE_TYPE_ED25519 = 0x01
export const SIGNATURE_TYPE_ML_DSA_44_COSIGNATURE = 0x06
const COSIGNATURE_LABEL = utf8.encode('subtree/v1\n\0')

export interface TreeHead {
  origin: string
  size: number
  rootHash: Uint8Array
}

/** The note text (body) of a checkpoint, ending in a newline. */
export function checkpointBody(head: TreeHead): string {
  if (!isValidKeyName(head.origin)) throw new RangeError(`invalid origin ${JSON.stringify(head.origin)}`)
  return `${head.origin}\n${head.size}\n${base64Encode(head.rootHash)}\n`
}

/** signed-note key names: non-empty, no Unicode spaces, no plus. */
export function isValidKeyName(name: string): boolean {
  // \s covers the Unicode spaces; control characters are refused by code point.
  return name.length > 0 && !/[\s+]/u.test(name) && ![...name].some((c) => c.charCodeAt(0) < 0x20)
}

/** The raw public key of an Ed25519 (OKP) or ML-DSA-44 (AKP) JWK. */
export function rawPublicKey(jwk: PublicJwk): Uint8Array {
  const value = jwk.kty === 'AKP' ? jwk.pub : jwk.x
  const bytes = base64urlDecode(value)
  if (!bytes) throw new RangeError('public JWK member is not base64url')
  return bytes
}

export function noteKeyId(name: string, type: number, publicKey: Uint8Array): Uint8Array {
  const nameBytes = utf8.encode(name)
  const input = new Uint8Array(nameBytes.length + 2 + publicKey.length)
  input.set(nameBytes)
  input[nameBytes.length] = 0x0a
  input[nameBytes.length + 1] = type
  input.set(publicKey, nameBytes.length + 2)
  return sha256(input).slice(0, 4)
}

/** A verifier key string: `<name>+<hex key ID>+base64(type || public key)`. */
export function verifierKey(name: string, type: number, publicKey: Uint8Array): string {
  const material = new Uint8Array(publicKey.length + 1)
  material[0] = type
  material.set(publicKey, 1)
  return `${name}+${bytesToHex(noteKeyId(name, type, publicKey))}+${base64Encode(material)}`
}

function u64(value: number | bigint): Uint8Array {
  const out = new Uint8Array(8)
  new DataView(out.buffer).setBigUint64(0, BigInt(value))
  return out
}

function opaque8(bytes: Uint8Array): Uint8Array {
  if (bytes.length < 1 || bytes.length > 255) throw new RangeError('opaque<1..2^8-1> out of range')
  const out = new Uint8Array(bytes.length + 1)
  out[0] = bytes.length
  out.set(bytes, 1)
  return out
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** tlog-cosignature's `cosigned_message` for a checkpoint (start 0, end = size). */
export function cosignedMessage(cosignerName: string, timestamp: number, head: TreeHead): Uint8Array {
  return concat(
    COSIGNATURE_LABEL,
    opaque8(utf8.encode(cosignerName)),
    u64(timestamp),
    opaque8(utf8.encode(head.origin)),
    u64(0),
    u64(head.size),
    head.rootHash,
  )
}

/** The two keys a log signs checkpoints with. */
export interface CheckpointSigners {
  ed25519: SigningKey
  mlDsa44: SigningKey
}

export interface SignedCheckpoint extends TreeHead {
  /** POSIX seconds of the ML-DSA-44 cosignature. */
  timestamp: number
  /** The whole signed note, as served. */
  note: string
}

/** Signs a checkpoint: the Ed25519 note signature and the ML-DSA-44 cosignature. */
export async function signCheckpoint(
  head: TreeHead,
  signers: CheckpointSigners,
  timestamp: number,
): Promise<SignedCheckpoint> {
  const body = checkpointBody(head)
  const name = head.origin
  const edPublic = rawPublicKey(signers.ed25519.publicJwk)
  const mlPublic = rawPublicKey(signers.mlDsa44.publicJwk)
  const edSignature = await signers.ed25519.sign(utf8.encode(body))
  const mlSignature = await signers.mlDsa44.sign(cosignedMessage(name, timestamp, head))
  const lines = [
    `— ${name} ${base64Encode(concat(noteKeyId(name, SIGNATURE_TYPE_ED25519, edPublic), edSignature))}`,
    `— ${name} ${base64Encode(concat(noteKeyId(name, SIGNATURE_TYPE_ML_DSA_44_COSIGNATURE, mlPublic), u64(timestamp), mlSignature))}`,
  ]
  return { ...head, timestamp, note: `${body}\n${lines.join('\n')}\n` }
}

export interface ParsedNote {
  body: string
  head: TreeHead
  signatures: { name: string; keyId: Uint8Array; signature: Uint8Array }[]
}

/** Parses a signed checkpoint note; null when it is not one. */
export function parseCheckpointNote(note: string): ParsedNote | null {
  const split = note.lastIndexOf('\n\n')
  if (split < 0 || !note.endsWith('\n')) return null
  const body = note.slice(0, split + 1)
  const lines = body.slice(0, -1).split('\n')
  if (lines.length < 3) return null
  const [origin, sizeText, rootText] = lines as [string, string, string]
  if (!/^(0|[1-9][0-9]*)$/.test(sizeText)) return null
  const rootHash = base64Decode(rootText)
  if (rootHash?.length !== 32) return null
  const signatures: ParsedNote['signatures'] = []
  for (const line of note.slice(split + 2, -1).split('\n')) {
    const m = /^\u2014 (\S+) (\S+)$/u.exec(line)
    const bytes = m ? base64Decode(m[2]!) : null
    if (!m || !bytes || bytes.length < 5) return null
    signatures.push({ name: m[1]!, keyId: bytes.slice(0, 4), signature: bytes.slice(4) })
  }
  return { body, head: { origin, size: Number(sizeText), rootHash }, signatures }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i])
}

/**
 * Verifies a checkpoint note against the log's public keys (both must verify): the Ed25519 note
 * signature with WebCrypto, the ML-DSA-44 cosignature with the isolate's ML-DSA (post-quantum.ts).
 * Returns the tree head, or null.
 */
export async function verifyCheckpointNote(
  note: string,
  keys: { ed25519: Uint8Array; mlDsa44: Uint8Array },
): Promise<(TreeHead & { timestamp: number }) | null> {
  const parsed = parseCheckpointNote(note)
  if (!parsed) return null
  const name = parsed.head.origin
  const edId = noteKeyId(name, SIGNATURE_TYPE_ED25519, keys.ed25519)
  const mlId = noteKeyId(name, SIGNATURE_TYPE_ML_DSA_44_COSIGNATURE, keys.mlDsa44)
  const ed = parsed.signatures.find((s) => s.name === name && sameBytes(s.keyId, edId))
  const ml = parsed.signatures.find((s) => s.name === name && sameBytes(s.keyId, mlId))
  if (!ed || !ml || ml.signature.length !== 8 + 2420) return null
  const edKey = await crypto.subtle.importKey('raw', keys.ed25519, { name: 'Ed25519' }, false, ['verify'])
  if (!(await crypto.subtle.verify('Ed25519', edKey, ed.signature, utf8.encode(parsed.body)))) return null
  const timestamp = Number(new DataView(ml.signature.buffer, ml.signature.byteOffset).getBigUint64(0))
  const message = cosignedMessage(name, timestamp, parsed.head)
  const cosigner = await mlDsaFor('ML-DSA-44')
    .verifierFor('ML-DSA-44', keys.mlDsa44)
    .catch(() => null)
  if (!cosigner || !(await cosigner.verify(message, ml.signature.slice(8)))) return null
  return { ...parsed.head, timestamp }
}

export type CheckpointComparison =
  | { verdict: 'consistent' }
  | { verdict: 'fork'; reason: string }
  | { verdict: 'proof_needed'; first: number; second: number }

/**
 * Compares two verified tree heads of the same log, as a monitor or witness does: equal sizes must
 * have equal roots (two different trees of the same size are a fork: the log showed different
 * histories); different sizes are consistent only with a consistency proof between them, checked
 * with `verify` (e.g. merkle.ts `verifyConsistency`) when one is given.
 */
export function compareCheckpoints(
  a: TreeHead,
  b: TreeHead,
  consistency?: {
    proof: readonly Uint8Array[]
    verify: (m: number, n: number, proof: readonly Uint8Array[], r1: Uint8Array, r2: Uint8Array) => void
  },
): CheckpointComparison {
  if (a.origin !== b.origin) return { verdict: 'fork', reason: 'the checkpoints are of different logs' }
  if (a.size === b.size) {
    return sameBytes(a.rootHash, b.rootHash)
      ? { verdict: 'consistent' }
      : { verdict: 'fork', reason: `two different trees of size ${a.size}` }
  }
  const [older, newer] = a.size < b.size ? [a, b] : [b, a]
  if (older.size === 0) return { verdict: 'consistent' }
  if (!consistency) return { verdict: 'proof_needed', first: older.size, second: newer.size }
  try {
    consistency.verify(older.size, newer.size, consistency.proof, older.rootHash, newer.rootHash)
    return { verdict: 'consistent' }
  } catch {
    return { verdict: 'fork', reason: `tree ${older.size} is not a prefix of tree ${newer.size}` }
  }
}
