import { describe, expect, it } from 'vitest'
import { CHUNK_MAX_CHARS, chunkText } from './chunking'

/** A deterministic pseudo-random source, so every run checks the same documents. */
function random(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

function documentOf(seed: number): string {
  const next = random(seed)
  const words = ['alpha', 'beta', 'gamma', 'delta', 'key', 'rotation', 'ticket-42', 'naïve', '😀', 'déjà']
  const paragraphs: string[] = []
  for (let p = 0; p < 1 + Math.floor(next() * 8); p++) {
    const sentences: string[] = []
    for (let s = 0; s < 1 + Math.floor(next() * 12); s++) {
      const length = next() < 0.05 ? 400 : 3 + Math.floor(next() * 30)
      const w = Array.from({ length }, () => words[Math.floor(next() * words.length)])
      sentences.push(`${w.join(next() < 0.02 ? '' : ' ')}${['.', '!', '?', '.'][Math.floor(next() * 4)]}`)
    }
    paragraphs.push(sentences.join(next() < 0.2 ? '\n' : ' '))
  }
  return paragraphs.join(next() < 0.5 ? '\n\n' : '\n  \n')
}

describe('chunkText', () => {
  it('keeps offsets exact, covers every word, bounds size and overlap, over many documents', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const content = documentOf(seed)
      const chunks = chunkText(content, { maxChars: 300, overlapChars: 80 })
      expect(chunks.length, `seed ${seed}`).toBeGreaterThan(0)
      const covered = new Uint8Array(content.length)
      chunks.forEach((chunk, i) => {
        expect(chunk.ordinal).toBe(i)
        expect(content.slice(chunk.start, chunk.end)).toBe(chunk.text)
        expect(chunk.text.length, `seed ${seed}`).toBeLessThanOrEqual(300)
        expect(chunk.text).toBe(chunk.text.trim())
        // A cut never splits a surrogate pair.
        expect(chunk.text).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/)
        covered.fill(1, chunk.start, chunk.end)
        if (i > 0) {
          const previous = chunks[i - 1]!
          expect(chunk.start, `seed ${seed}`).toBeGreaterThan(previous.start)
          expect(chunk.end).toBeGreaterThan(previous.end)
          expect(Math.max(0, previous.end - chunk.start), `seed ${seed}`).toBeLessThanOrEqual(80)
        }
      })
      const uncovered: number[] = []
      for (let i = 0; i < content.length; i++)
        if (covered[i] === 0 && !/\s/.test(content[i]!)) uncovered.push(i)
      expect(uncovered, `seed ${seed}`).toEqual([])
    }
  })

  it('breaks at sentence ends and overlaps by whole sentences', () => {
    const sentence = (n: number) => `Sentence number ${n} says something about topic ${n}.`
    const content = Array.from({ length: 40 }, (_, n) => sentence(n)).join(' ')
    const chunks = chunkText(content)
    expect(chunks.length).toBeGreaterThan(1)
    for (const chunk of chunks) {
      expect(chunk.text).toMatch(/^Sentence number \d+/)
      expect(chunk.text).toMatch(/topic \d+\.$/)
      expect(chunk.text.length).toBeLessThanOrEqual(CHUNK_MAX_CHARS)
    }
    const last = (t: string) => t.slice(t.lastIndexOf('Sentence'))
    expect(chunks[1]!.text).toContain(last(chunks[0]!.text))
  })

  it('ends a chunk at a paragraph break once it is half full', () => {
    const paragraph = (n: number) => `${'Words in this paragraph. '.repeat(24)}End of ${n}.`
    const content = [paragraph(1), paragraph(2), paragraph(3)].join('\n\n')
    const chunks = chunkText(content)
    expect(chunks.map((c) => c.text.endsWith('.'))).toEqual(chunks.map(() => true))
    expect(chunks[0]!.text.endsWith('End of 1.')).toBe(true)
  })

  it('gives a short document one chunk and empty or blank content none', () => {
    expect(chunkText('  Just one line.\n')).toEqual([
      { ordinal: 0, start: 2, end: 16, text: 'Just one line.' },
    ])
    expect(chunkText('')).toEqual([])
    expect(chunkText(' \n\n\t ')).toEqual([])
  })

  it('cuts a run without whitespace at the limit', () => {
    const content = 'x'.repeat(2_500)
    const chunks = chunkText(content)
    expect(chunks.map((c) => [c.start, c.end])).toEqual([
      [0, 1000],
      [1000, 2000],
      [2000, 2500],
    ])
  })
})
