/**
 * The deterministic embedding of test mode (`svc_sk_test_` keys), model `svc-test-embedding`:
 * feature hashing of words (lower-cased, a few English suffixes stripped) and of their character
 * trigrams into signed buckets, scaled to unit length. It captures shared words, word forms,
 * typos and parts of identifiers, not meaning: it lets the whole vector path run offline and
 * reproducibly, and is documented as such; meaning needs a real model (docs/retrieval.md). The
 * fake of OpenAI's embeddings API (test/fakes/openai-embeddings.ts) has vectors of its own.
 */

export const TEST_EMBEDDING_MODEL = 'svc-test-embedding'
export const TEST_EMBEDDING_DIMENSIONS = 256

/** 32-bit FNV-1a of a string's UTF-16 units. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

function stem(word: string): string {
  for (const suffix of ['ations', 'ation', 'ings', 'ing', 'edly', 'ed', 'ies', 'es', 'ly', 's']) {
    if (word.length > suffix.length + 2 && word.endsWith(suffix)) return word.slice(0, -suffix.length)
  }
  return word
}

function add(vector: Float64Array, feature: string, weight: number): void {
  const hash = fnv1a(feature)
  vector[hash % vector.length]! += hash & 0x80000000 ? -weight : weight
}

export function testEmbedding(text: string, dimensions = TEST_EMBEDDING_DIMENSIONS): number[] {
  const vector = new Float64Array(dimensions)
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
  for (const word of words) {
    const stemmed = stem(word)
    add(vector, `w:${stemmed}`, 1)
    const padded = `^${stemmed}$`
    for (let i = 0; i + 3 <= padded.length; i++) add(vector, `t:${padded.slice(i, i + 3)}`, 0.35)
  }
  let norm = 0
  for (const x of vector) norm += x * x
  norm = Math.sqrt(norm)
  // Text without a letter or digit embeds to one fixed unit vector, not to zeros.
  if (norm === 0) return Array.from(vector, (_, i) => (i === 0 ? 1 : 0))
  return Array.from(vector, (x) => Math.fround(x / norm))
}
