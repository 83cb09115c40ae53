/**
 * The Merkle module against all of transparency-dev/merkle's test data (test/fixtures/merkle, 518
 * files: inclusion, consistency, subtree inclusion, subtree consistency, every `wantErr` case),
 * checked twice: by the product's verifiers and by the independent verifier in
 * test/support/independent-merkle.ts. Then the product's proof generation: every happy-path proof
 * in the data is reproduced from the data's reference tree, and every proof generated for trees of
 * up to 70 leaves verifies with the independent verifier.
 */
import { describe, expect, it } from 'vitest'
import * as independent from '../../test/support/independent-merkle'
import {
  consistencyProof,
  EMPTY_ROOT,
  hashChildren,
  hashLeaf,
  inclusionProof,
  type PerfectNodes,
  ProofError,
  rangeHash,
  subtreeConsistencyProof,
  verifyConsistency,
  verifyInclusion,
  verifySubtreeConsistency,
  verifySubtreeInclusion,
} from './merkle'

const files = import.meta.glob('../../test/fixtures/merkle/**/*.json', {
  query: '?raw',
  import: 'default',
  eager: true,
}) as Record<string, string>

interface Vector {
  file: string
  desc: string
  wantErr: boolean
  n: Record<string, bigint>
  b: Record<string, Uint8Array>
  proof: Uint8Array[] | null
}

const SIZE_FIELDS = /"(leafIdx|treeSize|start|end|size|size1|size2)":\s*(\d+)/g

function load(kind: string): Vector[] {
  return Object.entries(files)
    .filter(([path]) => path.includes(`/merkle/${kind}/`))
    .map(([path, text]) => {
      // Sizes go through strings: some exceed 2^53 and must stay exact.
      const raw = JSON.parse(text.replace(SIZE_FIELDS, '"$1":"$2"')) as Record<string, unknown>
      const n: Record<string, bigint> = {}
      const b: Record<string, Uint8Array> = {}
      for (const [key, value] of Object.entries(raw)) {
        if (SIZE_FIELDS.source.includes(key) && typeof value === 'string') n[key] = BigInt(value)
        else if (['root', 'root1', 'root2', 'leafHash'].includes(key))
          b[key] = independent.fromBase64(value as string)
      }
      const proof = (raw.proof as string[] | null)?.map(independent.fromBase64) ?? null
      return {
        file: path.split('/merkle/')[1]!,
        desc: raw.desc as string,
        wantErr: raw.wantErr as boolean,
        n,
        b,
        proof,
      }
    })
}

function outcome(verify: () => void): boolean {
  try {
    verify()
    return true
  } catch (err) {
    if (err instanceof ProofError) return false
    throw err
  }
}

const inclusion = load('inclusion')
const consistency = load('consistency')
const subtreeInclusion = load('subtreeinclusion')
const subtreeConsistency = load('subtreeconsistency')

describe('transparency-dev test data', () => {
  it('is all here (518 files in four sets)', () => {
    expect(Object.keys(files)).toHaveLength(518)
    expect(inclusion.length + consistency.length + subtreeInclusion.length + subtreeConsistency.length).toBe(
      518,
    )
  })

  it.each(inclusion)('inclusion $file', async (v) => {
    const proof = v.proof ?? []
    expect(outcome(() => verifyInclusion(v.n.leafIdx!, v.n.treeSize!, v.b.leafHash!, proof, v.b.root!))).toBe(
      !v.wantErr,
    )
    expect(
      await independent.verifyInclusionRfc(v.n.leafIdx!, v.n.treeSize!, v.b.leafHash!, proof, v.b.root!),
    ).toBe(!v.wantErr)
  })

  it.each(consistency)('consistency $file', async (v) => {
    const proof = v.proof ?? []
    const { size1, size2 } = v.n
    expect(outcome(() => verifyConsistency(size1!, size2!, proof, v.b.root1!, v.b.root2!))).toBe(!v.wantErr)
    expect(await independent.verifyConsistencyRfc(size1!, size2!, v.b.root1!, v.b.root2!, proof)).toBe(
      !v.wantErr,
    )
  })

  it.each(subtreeInclusion)('subtree inclusion $file', async (v) => {
    const proof = v.proof ?? []
    const { leafIdx, start, end } = v.n
    expect(
      outcome(() => verifySubtreeInclusion(leafIdx!, start!, end!, v.b.leafHash!, proof, v.b.root!)),
    ).toBe(!v.wantErr)
    expect(
      await independent.verifySubtreeInclusion(leafIdx!, start!, end!, v.b.leafHash!, v.proof, v.b.root!),
    ).toBe(!v.wantErr)
  })

  it.each(subtreeConsistency)('subtree consistency $file', async (v) => {
    const proof = v.proof ?? []
    const { start, end, size } = v.n
    expect(outcome(() => verifySubtreeConsistency(start!, end!, size!, proof, v.b.root1!, v.b.root2!))).toBe(
      !v.wantErr,
    )
    expect(
      await independent.verifySubtreeConsistency(start!, end!, size!, v.proof, v.b.root1!, v.b.root2!),
    ).toBe(!v.wantErr)
  })
})

/** An in-memory tree: every perfect node, level by level. */
function memoryTree(entries: readonly Uint8Array[]): PerfectNodes & { size: number } {
  const levels: Uint8Array[][] = [entries.map(hashLeaf)]
  for (let level = 0; levels[level]!.length > 1; level++) {
    const below = levels[level]!
    const above: Uint8Array[] = []
    for (let i = 0; i + 1 < below.length; i += 2) above.push(hashChildren(below[i]!, below[i + 1]!))
    levels.push(above)
  }
  return {
    size: entries.length,
    node(level, index) {
      const hash = levels[level]?.[index]
      if (!hash) throw new Error(`no node (${level}, ${index})`)
      return hash
    },
  }
}

const hex = (s: string) => Uint8Array.from(s.match(/../g) ?? [], (h) => Number.parseInt(h, 16))
// transparency-dev/merkle testonly.LeafInputs(): the tree all happy paths are taken from.
const REFERENCE_LEAVES = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
].map(hex)

describe('proof generation', () => {
  const reference = memoryTree(REFERENCE_LEAVES)
  const happy = (set: Vector[]) => set.filter((v) => v.desc === 'happy path' && v.proof !== null)

  it('reproduces every happy-path proof of the test data from the reference tree', () => {
    let checked = 0
    for (const v of happy(inclusion)) {
      if (v.n.treeSize! > 8n) continue
      expect(inclusionProof(reference, Number(v.n.leafIdx), Number(v.n.treeSize)), v.file).toEqual(v.proof)
      expect(rangeHash(reference, 0, Number(v.n.treeSize)), v.file).toEqual(v.b.root)
      checked++
    }
    for (const v of happy(consistency)) {
      expect(consistencyProof(reference, Number(v.n.size1), Number(v.n.size2)), v.file).toEqual(v.proof)
      checked++
    }
    for (const v of happy(subtreeConsistency)) {
      const { start, end, size } = v.n
      expect(subtreeConsistencyProof(reference, Number(start), Number(end), Number(size)), v.file).toEqual(
        v.proof,
      )
      expect(rangeHash(reference, Number(start), Number(end)), v.file).toEqual(v.b.root1)
      checked++
    }
    expect(checked).toBeGreaterThanOrEqual(12)
  })

  it('every inclusion and consistency proof of trees up to 70 leaves verifies independently', async () => {
    const leaves = Array.from({ length: 70 }, (_, i) => new TextEncoder().encode(`entry ${i}`))
    const tree = memoryTree(leaves)
    const roots = [EMPTY_ROOT, ...leaves.map((_, i) => rangeHash(tree, 0, i + 1))]
    for (let size = 1; size <= 70; size++) {
      for (let index = 0; index < size; index++) {
        const proof = inclusionProof(tree, index, size)
        const leaf = await independent.leafHashOf(leaves[index]!)
        expect(
          await independent.verifyInclusionRfc(BigInt(index), BigInt(size), leaf, proof, roots[size]!),
        ).toBe(true)
      }
      for (let first = 1; first <= size; first++) {
        const proof = consistencyProof(tree, first, size)
        expect(
          await independent.verifyConsistencyRfc(
            BigInt(first),
            BigInt(size),
            roots[first]!,
            roots[size]!,
            proof,
          ),
        ).toBe(true)
        expect(outcome(() => verifyConsistency(first, size, proof, roots[first]!, roots[size]!))).toBe(true)
      }
    }
  })

  it('a proof against another tree of the same size fails', async () => {
    const a = memoryTree(['a', 'b', 'c', 'd', 'e'].map((s) => new TextEncoder().encode(s)))
    const b = memoryTree(['a', 'b', 'X', 'd', 'e'].map((s) => new TextEncoder().encode(s)))
    const proof = consistencyProof(a, 3, 5)
    expect(outcome(() => verifyConsistency(3, 5, proof, rangeHash(a, 0, 3), rangeHash(b, 0, 5)))).toBe(false)
    expect(
      await independent.verifyConsistencyRfc(3n, 5n, rangeHash(a, 0, 3), rangeHash(b, 0, 5), proof),
    ).toBe(false)
  })
})
