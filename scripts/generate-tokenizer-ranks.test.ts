/** The committed o200k_base rank table is what gpt-tokenizer's ranks generate today (run in Node). */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { encodeRanks, generate, RANKS_FILE } from './generate-tokenizer-ranks.ts'

describe('generated tokenizer ranks', () => {
  it(`${RANKS_FILE} is up to date (npm run generate:tokenizer-ranks)`, () => {
    expect(readFileSync(RANKS_FILE, 'utf8')).toBe(generate())
  }, 60_000)

  it('writes a token as two lower ranks when it has such a split, else as its bytes', () => {
    const tokens = ['a', 'b', 'ab', 'ba', 'aba', 'xyz'].map((t) => new TextEncoder().encode(t))
    const { stream, totalBytes } = encodeRanks(tokens)
    expect(totalBytes).toBe(12)
    // a, b: bytes; ab: a|b (left rank + 1, right rank); ba: b|a; aba: a|ba (before ab|a, as short); xyz: bytes.
    expect([...stream]).toEqual([0, 1, 97, 0, 1, 98, 1, 1, 2, 0, 1, 3, 0, 3, 120, 121, 122])
  })

  it('refuses a table with a token twice', () => {
    const tokens = ['a', 'a'].map((t) => new TextEncoder().encode(t))
    expect(() => encodeRanks(tokens)).toThrow(/token 1 repeats token 0/)
  })
})
