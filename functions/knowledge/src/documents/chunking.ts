/**
 * Splits a document into retrieval chunks on paragraph and sentence boundaries.
 *
 * - A chunk holds at most `maxChars` characters (default 1,000) and is built from whole
 *   sentences; a sentence longer than that is cut at the last whitespace before the limit (or,
 *   failing that, at the limit).
 * - A chunk ends early at a paragraph break (a blank line) once it is at least half full, so
 *   chunks follow the document's own structure.
 * - Consecutive chunks overlap by whole sentences of at most `overlapChars` (default 200), so a
 *   passage cut at a boundary is still found whole in one of them.
 * - Every chunk knows its `[start, end)` offsets in the source, in UTF-16 code units (JavaScript
 *   string indices: `content.slice(start, end) === text`); chunks never start or end in
 *   whitespace.
 */

export interface Chunk {
  ordinal: number
  start: number
  end: number
  text: string
}

export interface ChunkingOptions {
  maxChars?: number
  overlapChars?: number
}

export const CHUNK_MAX_CHARS = 1_000
export const CHUNK_OVERLAP_CHARS = 200

/** A piece of the content that chunks are built from: a sentence or a cut of a long one. */
interface Segment {
  start: number
  end: number
  /** A paragraph break (blank line) comes before this segment. */
  paragraphStart: boolean
}

const SENTENCE_END = /[.!?。！？]+["'”’)\]]*(?=\s)/g
const PARAGRAPH_BREAK = /\n[ \t]*\n\s*/g

function trimmed(content: string, start: number, end: number): [number, number] {
  while (start < end && /\s/.test(content[start]!)) start++
  while (end > start && /\s/.test(content[end - 1]!)) end--
  return [start, end]
}

/** Never splits a surrogate pair: a cut at `at` moves back one unit if it would. */
function safeCut(content: string, at: number): number {
  const code = content.charCodeAt(at - 1)
  return code >= 0xd800 && code <= 0xdbff ? at - 1 : at
}

function cutLong(content: string, start: number, end: number, maxChars: number, out: Segment[], p: boolean) {
  let first = true
  while (end - start > maxChars) {
    const limit = start + maxChars
    let cut = -1
    for (let i = limit; i > start + maxChars / 2; i--) {
      if (/\s/.test(content[i]!)) {
        cut = i
        break
      }
    }
    if (cut === -1) cut = safeCut(content, limit)
    const [s, e] = trimmed(content, start, cut)
    if (e > s) out.push({ start: s, end: e, paragraphStart: first && p })
    first = false
    ;[start] = trimmed(content, cut, end)
  }
  const [s, e] = trimmed(content, start, end)
  if (e > s) out.push({ start: s, end: e, paragraphStart: first && p })
}

function segments(content: string, maxChars: number): Segment[] {
  const out: Segment[] = []
  const paragraphs: [number, number][] = []
  let from = 0
  for (const m of content.matchAll(PARAGRAPH_BREAK)) {
    paragraphs.push([from, m.index])
    from = m.index + m[0].length
  }
  paragraphs.push([from, content.length])
  for (const [pStart, pEnd] of paragraphs) {
    const [ps, pe] = trimmed(content, pStart, pEnd)
    if (pe <= ps) continue
    const paragraph = content.slice(ps, pe)
    let sentenceStart = 0
    let firstInParagraph = true
    const push = (a: number, b: number) => {
      cutLong(content, ps + a, ps + b, maxChars, out, firstInParagraph)
      firstInParagraph = false
    }
    for (const m of paragraph.matchAll(SENTENCE_END)) {
      const end = m.index + m[0].length
      push(sentenceStart, end)
      sentenceStart = end
    }
    if (sentenceStart < paragraph.length) push(sentenceStart, paragraph.length)
  }
  return out
}

export function chunkText(content: string, options: ChunkingOptions = {}): Chunk[] {
  const maxChars = options.maxChars ?? CHUNK_MAX_CHARS
  const overlapChars = Math.min(options.overlapChars ?? CHUNK_OVERLAP_CHARS, Math.floor(maxChars / 2))
  const segs = segments(content, maxChars)
  const chunks: Chunk[] = []
  let i = 0
  while (i < segs.length) {
    const first = i
    let j = i
    // Whole segments while they fit; a paragraph break ends a chunk that is at least half full.
    while (
      j + 1 < segs.length &&
      segs[j + 1]!.end - segs[first]!.start <= maxChars &&
      !(segs[j + 1]!.paragraphStart && segs[j]!.end - segs[first]!.start >= maxChars / 2)
    ) {
      j++
    }
    const start = segs[first]!.start
    const end = segs[j]!.end
    chunks.push({ ordinal: chunks.length, start, end, text: content.slice(start, end) })
    if (j + 1 >= segs.length) break
    // The next chunk starts with the last whole sentences of this one that fit in the overlap
    // (and leave room for the first new sentence), never at this chunk's own first segment, so
    // every chunk moves forward and none lies inside the one before it.
    const fresh = segs[j + 1]!
    let next = j + 1
    while (
      next - 1 > first &&
      end - segs[next - 1]!.start <= overlapChars &&
      fresh.end - segs[next - 1]!.start <= maxChars
    ) {
      next--
    }
    i = next
  }
  return chunks
}
