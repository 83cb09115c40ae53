/**
 * An independent Merkle proof verifier for the tests, written from the texts and sharing no code
 * with the product (durable-objects/audit-log/merkle.ts): hashing with WebCrypto (the product uses
 * @noble/hashes), sizes as bigint.
 *
 * - inclusion: RFC 9162 §2.1.3.2, step by step (fn / sn);
 * - consistency: RFC 9162 §2.1.4.2, step by step (fn / sn / fr / sr);
 * - subtree inclusion and consistency (draft-ietf-plants-merkle-tree-certs §4): the proof's node
 *   positions are derived from the draft's recursive definition, then the subtree hash and the
 *   tree hash are recomputed from those positions alone (a different technique from the product's
 *   bit-chaining, so one cannot hide a mistake of the other).
 *
 * Runs in workerd (unit tests) and in Node (end-to-end tests).
 */

export const HASH_BYTES = 32

async function sha256(...parts: Uint8Array[]): Promise<Uint8Array> {
  const input = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    input.set(p, at)
    at += p.length
  }
  return new Uint8Array(await crypto.subtle.digest('SHA-256', input))
}

export function leafHashOf(entry: Uint8Array): Promise<Uint8Array> {
  return sha256(Uint8Array.of(0), entry)
}

function node(left: Uint8Array, right: Uint8Array): Promise<Uint8Array> {
  return sha256(Uint8Array.of(1), left, right)
}

export function emptyRoot(): Promise<Uint8Array> {
  return sha256(new Uint8Array(0))
}

/** RFC 9162 §2.1.1 MTH over the leaf hashes, by its recursive definition (k = largest power of 2 < n). */
export async function treeHashOf(leaves: Uint8Array[]): Promise<Uint8Array> {
  if (leaves.length === 0) return emptyRoot()
  if (leaves.length === 1) return leaves[0]!
  let k = 1
  while (k * 2 < leaves.length) k *= 2
  return node(await treeHashOf(leaves.slice(0, k)), await treeHashOf(leaves.slice(k)))
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i])
}

const lsb = (x: bigint) => (x & 1n) === 1n

/** RFC 9162 §2.1.3.2. Resolves true when the proof verifies. */
export async function verifyInclusionRfc(
  leafIndex: bigint,
  treeSize: bigint,
  hash: Uint8Array,
  path: readonly Uint8Array[],
  rootHash: Uint8Array,
): Promise<boolean> {
  if (leafIndex >= treeSize || leafIndex < 0n) return false
  if (hash.length !== HASH_BYTES || rootHash.length !== HASH_BYTES) return false
  if (path.some((p) => p.length !== HASH_BYTES)) return false
  let fn = leafIndex
  let sn = treeSize - 1n
  let r = hash
  for (const p of path) {
    if (sn === 0n) return false
    if (lsb(fn) || fn === sn) {
      r = await node(p, r)
      if (!lsb(fn)) {
        while (!lsb(fn) && fn !== 0n) {
          fn >>= 1n
          sn >>= 1n
        }
      }
    } else {
      r = await node(r, p)
    }
    fn >>= 1n
    sn >>= 1n
  }
  return sn === 0n && same(r, rootHash)
}

const isPowerOf2 = (x: bigint) => x > 0n && (x & (x - 1n)) === 0n

/** RFC 9162 §2.1.4.2 (with the RFC's preconditions: 0 < first ≤ second). */
export async function verifyConsistencyRfc(
  first: bigint,
  second: bigint,
  firstHash: Uint8Array,
  secondHash: Uint8Array,
  consistencyPath: readonly Uint8Array[],
): Promise<boolean> {
  if (first === 0n || first > second) return false
  // Equal sizes: nothing to prove but that the two heads are the same (whatever their encoding).
  if (first === second) return consistencyPath.length === 0 && same(firstHash, secondHash)
  if ([firstHash, secondHash, ...consistencyPath].some((h) => h.length !== HASH_BYTES)) return false
  // 1.
  if (consistencyPath.length === 0) return false
  // 2.
  const path = isPowerOf2(first) ? [firstHash, ...consistencyPath] : [...consistencyPath]
  // 3.
  let fn = first - 1n
  let sn = second - 1n
  // 4.
  while (lsb(fn)) {
    fn >>= 1n
    sn >>= 1n
  }
  // 5.
  let fr = path[0]!
  let sr = path[0]!
  // 6.
  for (const c of path.slice(1)) {
    if (sn === 0n) return false
    if (lsb(fn) || fn === sn) {
      fr = await node(c, fr)
      sr = await node(c, sr)
      while (!lsb(fn) && fn !== 0n) {
        fn >>= 1n
        sn >>= 1n
      }
    } else {
      sr = await node(sr, c)
    }
    fn >>= 1n
    sn >>= 1n
  }
  // 7.
  return same(fr, firstHash) && same(sr, secondHash) && sn === 0n
}

function bitCeil(n: bigint): bigint {
  let c = 1n
  while (c < n) c <<= 1n
  return c
}

/** The draft's definition: [start, end) is a subtree when start is a multiple of BIT_CEIL(end − start). */
export function isSubtree(start: bigint, end: bigint): boolean {
  if (start > end) return false
  if (start === end) return true
  return start % bitCeil(end - start) === 0n
}

function largestPowerOf2Below(n: bigint): bigint {
  let k = 1n
  while (k * 2n < n) k *= 2n
  return k
}

export async function verifySubtreeInclusion(
  index: bigint,
  start: bigint,
  end: bigint,
  leafHash: Uint8Array,
  proof: readonly Uint8Array[] | null,
  subtreeHash: Uint8Array,
): Promise<boolean> {
  if (start >= end || !isSubtree(start, end) || index < start || index >= end) return false
  return verifyInclusionRfc(index - start, end - start, leafHash, proof ?? [], subtreeHash)
}

type Range = readonly [bigint, bigint]

/** Positions of the hashes in SUBTREE_PROOF(start, end, D[lo:hi]) per the recursive definition. */
function proofRanges(start: bigint, end: bigint, lo: bigint, hi: bigint, known: boolean, out: Range[]): void {
  if (start === lo && end === hi) {
    if (!known) out.push([lo, hi])
    return
  }
  const k = largestPowerOf2Below(hi - lo)
  if (end <= lo + k) {
    proofRanges(start, end, lo, lo + k, known, out)
    out.push([lo + k, hi])
  } else if (start >= lo + k) {
    proofRanges(start, end, lo + k, hi, known, out)
    out.push([lo, lo + k])
  } else {
    proofRanges(lo + k, end, lo + k, hi, false, out)
    out.push([lo, lo + k])
  }
}

class Unknown extends Error {}

export async function verifySubtreeConsistency(
  start: bigint,
  end: bigint,
  size: bigint,
  proof: readonly Uint8Array[] | null,
  subtreeHash: Uint8Array,
  treeHash: Uint8Array,
): Promise<boolean> {
  const hashes = proof ?? []
  if (!isSubtree(start, end) || end > size) return false
  if (start === end) return hashes.length === 0 && same(subtreeHash, await emptyRoot())
  // The whole tree: nothing to prove but that the two hashes are the same.
  if (start === 0n && end === size) return hashes.length === 0 && same(subtreeHash, treeHash)
  if ([subtreeHash, ...hashes].some((h) => h.length !== HASH_BYTES)) return false
  if (treeHash.length !== HASH_BYTES) return false
  const ranges: Range[] = []
  proofRanges(start, end, 0n, size, true, ranges)
  if (ranges.length !== hashes.length) return false
  const given = new Map(ranges.map(([a, b], i) => [`${a},${b}`, hashes[i]!]))
  let usedSubtree = false
  const evaluate = async (a: bigint, b: bigint, withSubtree: boolean): Promise<Uint8Array> => {
    const known = given.get(`${a},${b}`)
    if (known) return known
    if (withSubtree && a === start && b === end) {
      usedSubtree = true
      return subtreeHash
    }
    if (b - a === 1n) throw new Unknown()
    const k = largestPowerOf2Below(b - a)
    return node(await evaluate(a, a + k, withSubtree), await evaluate(a + k, b, withSubtree))
  }
  try {
    if (!same(await evaluate(0n, size, true), treeHash)) return false
  } catch (err) {
    if (err instanceof Unknown) return false
    throw err
  }
  try {
    // When the proof also covers the subtree's own range, it must rebuild the given subtree hash.
    return same(await evaluate(start, end, false), subtreeHash)
  } catch (err) {
    if (err instanceof Unknown) return usedSubtree
    throw err
  }
}

/** Decodes standard base64 (the test data's encoding) without any product helper. */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text)
  return Uint8Array.from(binary, (c) => c.charCodeAt(0))
}
