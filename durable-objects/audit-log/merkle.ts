/**
 * RFC 9162 §2.1 Merkle trees: leaf and node hashing, the tree hash of a range, inclusion and
 * consistency proofs (generation and verification), plus the subtree forms of
 * draft-ietf-plants-merkle-tree-certs (an inclusion proof inside a subtree [start, end), and the
 * consistency of a subtree with a whole tree), which reduce to the RFC's proofs for start = 0.
 *
 *   leaf hash = SHA-256(0x00 || entry)        node hash = SHA-256(0x01 || left || right)
 *   MTH({}) = SHA-256("")
 *
 * Generation reads the hashes of perfect subtrees from a `PerfectNodes` reader: the hash of the
 * 2^level leaves starting at index << level. A log stores exactly those (the AuditLog object keeps
 * one row per perfect node, ~2 per leaf), so any proof needs O(log² n) reads at most.
 *
 * Verification follows transparency-dev/merkle's algorithms (RFC 9162 §2.1.3.2 and §2.1.4.2,
 * generalised to subtrees), with sizes as bigint so every size up to 2^64 is exact. The test suite
 * checks both directions against transparency-dev's test data and an independent verifier.
 */
import { sha256 } from '@noble/hashes/sha2.js'

export const HASH_BYTES = 32
export const EMPTY_ROOT: Uint8Array = sha256(new Uint8Array(0))

export function hashLeaf(entry: Uint8Array): Uint8Array {
  const input = new Uint8Array(entry.length + 1)
  input.set(entry, 1)
  return sha256(input)
}

export function hashChildren(left: Uint8Array, right: Uint8Array): Uint8Array {
  const input = new Uint8Array(1 + 2 * HASH_BYTES)
  input[0] = 1
  input.set(left, 1)
  input.set(right, 1 + HASH_BYTES)
  return sha256(input)
}

/** Hashes of perfect subtrees: `node(level, index)` covers leaves [index·2^level, (index+1)·2^level). */
export interface PerfectNodes {
  node(level: number, index: number): Uint8Array
}

/** The largest power of two strictly smaller than n (n ≥ 2): RFC 9162's k. */
export function splitPoint(n: number): number {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && 2 ** Math.round(Math.log2(n)) === n
}

/**
 * Which perfect subtrees a level-by-level append completes: appending leaf `index` completes the
 * nodes (level, index >> level) for every level at which index + 1 is a multiple of 2^level.
 */
export function completedLevels(index: number): number {
  let levels = 0
  let n = index + 1
  while (n % 2 === 0) {
    levels++
    n /= 2
  }
  return levels
}

/** MTH of the leaves [start, end); `start` must be 0 or aligned as in a valid subtree. */
export function rangeHash(nodes: PerfectNodes, start: number, end: number): Uint8Array {
  const n = end - start
  if (n === 0) return EMPTY_ROOT
  if (isPowerOfTwo(n) && start % n === 0) return nodes.node(Math.log2(n), start / n)
  const k = splitPoint(n)
  return hashChildren(rangeHash(nodes, start, start + k), rangeHash(nodes, start + k, end))
}

/** RFC 9162 §2.1.3.1 PATH(index, D[start:end]), hashes from the leaf's level up. */
function inclusionPath(
  nodes: PerfectNodes,
  index: number,
  start: number,
  end: number,
  out: Uint8Array[],
): void {
  const n = end - start
  if (n <= 1) return
  const k = splitPoint(n)
  if (index < start + k) {
    inclusionPath(nodes, index, start, start + k, out)
    out.push(rangeHash(nodes, start + k, end))
  } else {
    inclusionPath(nodes, index, start + k, end, out)
    out.push(rangeHash(nodes, start, start + k))
  }
}

/** The inclusion proof of leaf `index` in the tree of `size` leaves. */
export function inclusionProof(nodes: PerfectNodes, index: number, size: number): Uint8Array[] {
  if (!(index >= 0 && index < size)) throw new RangeError(`index ${index} is not below tree size ${size}`)
  const out: Uint8Array[] = []
  inclusionPath(nodes, index, 0, size, out)
  return out
}

/**
 * SUBPROOF generalised to a subtree: the proof that the subtree [start, end) is consistent with
 * D[lo:hi]; `known` says whether the verifier already holds the hash of [start, end).
 */
function consistencyPath(
  nodes: PerfectNodes,
  start: number,
  end: number,
  lo: number,
  hi: number,
  known: boolean,
  out: Uint8Array[],
): void {
  if (start === lo && end === hi) {
    if (!known) out.push(rangeHash(nodes, lo, hi))
    return
  }
  const k = splitPoint(hi - lo)
  if (end <= lo + k) {
    consistencyPath(nodes, start, end, lo, lo + k, known, out)
    out.push(rangeHash(nodes, lo + k, hi))
  } else if (start >= lo + k) {
    consistencyPath(nodes, start, end, lo + k, hi, known, out)
    out.push(rangeHash(nodes, lo, lo + k))
  } else {
    // Only a subtree starting at lo can straddle the split: its right part is [lo + k, end).
    consistencyPath(nodes, lo + k, end, lo + k, hi, false, out)
    out.push(rangeHash(nodes, lo, lo + k))
  }
}

/** The consistency proof from the tree of `size1` leaves to the tree of `size2` (0 < size1 ≤ size2). */
export function consistencyProof(nodes: PerfectNodes, size1: number, size2: number): Uint8Array[] {
  if (!(size1 > 0 && size1 <= size2)) {
    throw new RangeError(`a consistency proof needs 0 < first size ≤ second size (got ${size1}, ${size2})`)
  }
  const out: Uint8Array[] = []
  if (size1 < size2) consistencyPath(nodes, 0, size1, 0, size2, true, out)
  return out
}

/** Whether [start, end) is a subtree: start is 0 or a multiple of the smallest power of two ≥ end − start. */
export function isValidSubtree(start: bigint, end: bigint): boolean {
  if (start > end) return false
  if (start === 0n || start === end) return true
  const length = end - start
  if (length > 1n << 63n) return false
  return start % bitCeil(length) === 0n
}

/** The proof that the subtree [start, end) is consistent with the tree of `size` leaves. */
export function subtreeConsistencyProof(
  nodes: PerfectNodes,
  start: number,
  end: number,
  size: number,
): Uint8Array[] {
  if (!isValidSubtree(BigInt(start), BigInt(end)) || end > size || start === end) {
    throw new RangeError(`[${start}, ${end}) is not a non-empty subtree of a tree of size ${size}`)
  }
  const out: Uint8Array[] = []
  consistencyPath(nodes, start, end, 0, size, true, out)
  return out
}

// ---------------------------------------------------------------- verification (bigint sizes)

export class ProofError extends Error {
  override readonly name = 'ProofError'
}

function bitLen(x: bigint): number {
  let n = 0
  for (let v = x; v > 0n; v >>= 1n) n++
  return n
}

function onesCount(x: bigint): number {
  let n = 0
  for (let v = x; v > 0n; v >>= 1n) if (v & 1n) n++
  return n
}

function trailingZeros(x: bigint): number {
  if (x === 0n) return 64
  let n = 0
  for (let v = x; (v & 1n) === 0n; v >>= 1n) n++
  return n
}

function bitCeil(n: bigint): bigint {
  return n <= 1n ? 1n : 1n << BigInt(bitLen(n - 1n))
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!
  return diff === 0
}

function checkHash(hash: Uint8Array, what: string): void {
  if (hash.length !== HASH_BYTES) throw new ProofError(`${what} is ${hash.length} bytes, not ${HASH_BYTES}`)
}

function matchRoot(calculated: Uint8Array, expected: Uint8Array): void {
  if (!equalBytes(calculated, expected)) throw new ProofError('the proof does not lead to the expected root')
}

/** Splits an inclusion proof of (index, size) into its inner and border lengths. */
function decomposeInclusion(index: bigint, size: bigint): { inner: number; border: number } {
  const inner = bitLen(index ^ (size - 1n))
  return { inner, border: onesCount(index >> BigInt(inner)) }
}

function chainInner(seed: Uint8Array, proof: readonly Uint8Array[], index: bigint): Uint8Array {
  let hash = seed
  proof.forEach((sibling, i) => {
    hash = ((index >> BigInt(i)) & 1n) === 0n ? hashChildren(hash, sibling) : hashChildren(sibling, hash)
  })
  return hash
}

function chainInnerRight(seed: Uint8Array, proof: readonly Uint8Array[], index: bigint): Uint8Array {
  let hash = seed
  proof.forEach((sibling, i) => {
    if (((index >> BigInt(i)) & 1n) === 1n) hash = hashChildren(sibling, hash)
  })
  return hash
}

function chainBorderRight(seed: Uint8Array, proof: readonly Uint8Array[]): Uint8Array {
  let hash = seed
  for (const sibling of proof) hash = hashChildren(sibling, hash)
  return hash
}

/** The root an inclusion proof of `leafHash` at `index` leads to, in a tree of `size` leaves. */
export function rootFromInclusionProof(
  index: bigint,
  size: bigint,
  leafHash: Uint8Array,
  proof: readonly Uint8Array[],
): Uint8Array {
  if (index < 0n || index >= size) throw new ProofError(`index ${index} is not below tree size ${size}`)
  checkHash(leafHash, 'the leaf hash')
  for (const [i, h] of proof.entries()) checkHash(h, `proof hash ${i}`)
  const { inner, border } = decomposeInclusion(index, size)
  if (proof.length !== inner + border) {
    throw new ProofError(`the proof has ${proof.length} hashes; this index and size need ${inner + border}`)
  }
  return chainBorderRight(chainInner(leafHash, proof.slice(0, inner), index), proof.slice(inner))
}

/** Throws ProofError unless `proof` shows leaf `index` (hash `leafHash`) in the tree (`size`, `root`). */
export function verifyInclusion(
  index: bigint | number,
  size: bigint | number,
  leafHash: Uint8Array,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): void {
  matchRoot(rootFromInclusionProof(BigInt(index), BigInt(size), leafHash, proof), root)
}

/** Inclusion of leaf `index` in the subtree [start, end) whose hash is `root`. */
export function verifySubtreeInclusion(
  index: bigint | number,
  start: bigint | number,
  end: bigint | number,
  leafHash: Uint8Array,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): void {
  const [i, s, e] = [BigInt(index), BigInt(start), BigInt(end)]
  if (!isValidSubtree(s, e)) throw new ProofError(`[${s}, ${e}) is not a valid subtree`)
  if (i < s || i >= e) throw new ProofError(`index ${i} is outside the subtree [${s}, ${e})`)
  matchRoot(rootFromInclusionProof(i - s, e - s, leafHash, proof), root)
}

function rootFromSubtreeConsistency(
  start: bigint,
  end: bigint,
  size: bigint,
  proof: readonly Uint8Array[],
  subRoot: Uint8Array,
): Uint8Array {
  if (end === size) {
    // The subtree is on the right border: its ancestors' left siblings lead to the root.
    const level = bitLen((end - 1n) ^ start)
    const want = onesCount(start >> BigInt(level))
    if (proof.length !== want) throw new ProofError(`the proof has ${proof.length} hashes; it needs ${want}`)
    return chainBorderRight(subRoot, proof)
  }
  const { inner: forkLevel, border } = decomposeInclusion(end - 1n, size)
  const shift = trailingZeros(end - start)
  const inner = forkLevel - shift
  let seed = proof[0]!
  let first = 1
  if (end - start === 1n << BigInt(shift)) {
    // A perfect subtree: its own hash is the seed and is not repeated in the proof.
    seed = subRoot
    first = 0
  }
  if (proof.length !== first + inner + border) {
    throw new ProofError(`the proof has ${proof.length} hashes; it needs ${first + inner + border}`)
  }
  const rest = proof.slice(first)
  const mask = (end - 1n) >> BigInt(shift)
  if (first === 1) {
    // The proof's nodes inside the subtree must rebuild the subtree's own hash.
    const height = bitLen((end - 1n) ^ start)
    const fork = bitLen((end - 1n) ^ (size - 1n))
    const subInner = Math.min(height, fork) - shift
    const subBorder = Math.max(0, border - onesCount((end - 1n) >> BigInt(height)))
    let hash1 = chainInnerRight(seed, rest.slice(0, subInner), mask)
    hash1 = chainBorderRight(hash1, rest.slice(inner, inner + subBorder))
    matchRoot(hash1, subRoot)
  }
  return chainBorderRight(chainInner(seed, rest.slice(0, inner), mask), rest.slice(inner))
}

/** Throws ProofError unless `proof` shows the tree (size1, root1) is a prefix of (size2, root2). */
export function verifyConsistency(
  size1: bigint | number,
  size2: bigint | number,
  proof: readonly Uint8Array[],
  root1: Uint8Array,
  root2: Uint8Array,
): void {
  const [m, n] = [BigInt(size1), BigInt(size2)]
  for (const [i, h] of proof.entries()) checkHash(h, `proof hash ${i}`)
  if (n < m) throw new ProofError(`the second size (${n}) is smaller than the first (${m})`)
  if (m === 0n) throw new ProofError('a consistency proof from an empty tree proves nothing')
  if (m === n) {
    if (proof.length > 0) throw new ProofError('equal sizes need an empty proof')
    matchRoot(root1, root2)
    return
  }
  if (proof.length === 0) throw new ProofError('the proof is empty')
  matchRoot(rootFromSubtreeConsistency(0n, m, n, proof, root1), root2)
}

/** Throws ProofError unless the subtree [start, end) with hash `subRoot` is consistent with (size, root). */
export function verifySubtreeConsistency(
  start: bigint | number,
  end: bigint | number,
  size: bigint | number,
  proof: readonly Uint8Array[],
  subRoot: Uint8Array,
  root: Uint8Array,
): void {
  const [s, e, n] = [BigInt(start), BigInt(end), BigInt(size)]
  for (const [i, h] of proof.entries()) checkHash(h, `proof hash ${i}`)
  if (!isValidSubtree(s, e)) throw new ProofError(`[${s}, ${e}) is not a valid subtree`)
  if (e > n) throw new ProofError(`the subtree ends at ${e}, beyond the tree size ${n}`)
  if (s === e) {
    if (proof.length > 0) throw new ProofError('an empty subtree needs an empty proof')
    if (!equalBytes(subRoot, EMPTY_ROOT)) throw new ProofError('an empty subtree has the empty root')
    return
  }
  if (s === 0n && e === n) {
    if (proof.length > 0) throw new ProofError('the whole tree needs an empty proof')
    matchRoot(subRoot, root)
    return
  }
  if (proof.length === 0) throw new ProofError('the proof is empty')
  matchRoot(rootFromSubtreeConsistency(s, e, n, proof, subRoot), root)
}
