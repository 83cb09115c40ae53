/**
 * o200k_base, the BPE of OpenAI's current chat models, as tiktoken encodes ordinary text (special
 * tokens typed in the text are plain text): the pre-tokenizer's regex splits the text into pieces,
 * a piece that is a token is that token, any other piece is merged byte pair by byte pair, the
 * pair of lowest rank first (tiktoken's `_byte_pair_merge`, leftmost among equal ranks).
 *
 * Why not gpt-tokenizer, which does the same: its rank table is 199,998 JavaScript strings (2.76 MB
 * of the chat worker's minified bundle) and a Map built from them when the module loads: 13 MB of
 * live heap in every isolate that bundles it (chat, code, reasoning), traced by every full
 * collection (bench/NOTES.md, "Chat completions"). Here the table is decoded on first use into
 * typed arrays whose 4.3 MB are outside the JavaScript heap: every token's bytes end to end, each
 * token's offset into them, and an open-addressing hash from a byte string to its rank.
 *
 * The regex is tiktoken's, with two differences from what a JavaScript port writes by default, so
 * that counts match tiktoken (the Rust `regex` crate) rather than JavaScript's reading of it:
 * - whitespace is Unicode's White_Space (Rust's `\s`): it includes NEL (U+0085) and not the byte
 *   order mark U+FEFF, which JavaScript's `\s` has the other way round;
 * - the contractions are matched case-insensitively as Rust does, where `s` also folds to `ſ`
 *   (U+017F, long s).
 * shared/providers/tokenizer-o200k.test.ts holds the cases where gpt-tokenizer counts differently
 * (these two, and tokens that begin with a byte order mark, which gpt-tokenizer never finds).
 */
import { O200K_RANKS_BASE64, O200K_TOKEN_BYTES, O200K_TOKEN_COUNT } from './tokenizer-ranks.generated'

const CONTRACTION = "(?:'(?:[sSſ]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))?"
const WS = '\\p{White_Space}'
const PRE_TOKENIZER = new RegExp(
  [
    `[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+${CONTRACTION}`,
    `[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*${CONTRACTION}`,
    '\\p{N}{1,3}',
    ` ?[^${WS}\\p{L}\\p{N}]+[\\r\\n/]*`,
    `${WS}*[\\r\\n]+`,
    `${WS}+(?!\\P{White_Space})`,
    `${WS}+`,
  ].join('|'),
  'gu',
)

/** No rank: the byte string is not a token. */
const NONE = 0xffffffff

interface RankTable {
  /** Every token's bytes, in rank order. */
  bytes: Uint8Array
  /** Token r is `bytes[offsets[r]] … bytes[offsets[r + 1] - 1]`. */
  offsets: Uint32Array
  /** Open addressing, linear probing: rank + 1 of the token whose bytes hash here, 0 when empty. */
  slots: Uint32Array
  /** The rank of each single byte (every byte is a token). */
  byteRanks: Uint32Array
}

let table: RankTable | undefined

/** The table, decoded on first use (tens of ms once per isolate; an isolate that never counts never pays). */
function rankTable(): RankTable {
  table ??= decodeRankTable()
  return table
}

/**
 * One loop per function: V8 compiles a hot loop on its own (on-stack replacement), and left the
 * optimized code of a function of two loops at the second, which then ran unoptimized for a while.
 */
function decodeRankTable(): RankTable {
  const { bytes, offsets } = decodeTokenBytes(atob(O200K_RANKS_BASE64))
  const byteRanks = new Uint32Array(256)
  for (let rank = 0; rank < 256; rank++) {
    if (offsets[rank + 1]! - offsets[rank]! !== 1) throw new Error(`o200k_base token ${rank} is not one byte`)
    byteRanks[bytes[offsets[rank]!]!] = rank
  }
  return { bytes, offsets, slots: hashTokens(bytes, offsets), byteRanks }
}

/**
 * The stream's format: scripts/generate-tokenizer-ranks.ts. Two varints start every entry
 * (left + 1 and right, or 0 and a length), read inline: a call per varint doubled the time.
 */
function decodeTokenBytes(stream: string): { bytes: Uint8Array; offsets: Uint32Array } {
  const bytes = new Uint8Array(O200K_TOKEN_BYTES)
  const offsets = new Uint32Array(O200K_TOKEN_COUNT + 1)
  let at = 0
  let end = 0
  for (let rank = 0; rank < O200K_TOKEN_COUNT; rank++) {
    offsets[rank] = end
    let first = 0
    let second = 0
    let byte: number
    let scale = 1
    do {
      byte = stream.charCodeAt(at++)
      first += (byte & 0x7f) * scale
      scale *= 0x80
    } while (byte >= 0x80)
    scale = 1
    do {
      byte = stream.charCodeAt(at++)
      second += (byte & 0x7f) * scale
      scale *= 0x80
    } while (byte >= 0x80)
    if (first === 0) {
      for (let i = 0; i < second; i++) bytes[end++] = stream.charCodeAt(at++)
    } else {
      // Byte by byte: tokens are short, and copyWithin's call costs more than the copy.
      for (let i = offsets[first - 1]!, stop = offsets[first]!; i < stop; i++) bytes[end++] = bytes[i]!
      for (let i = offsets[second]!, stop = offsets[second + 1]!; i < stop; i++) bytes[end++] = bytes[i]!
    }
  }
  offsets[O200K_TOKEN_COUNT] = end
  if (end !== O200K_TOKEN_BYTES || at !== stream.length) {
    throw new Error(
      'tokenizer-ranks.generated.ts does not decode whole: run npm run generate:tokenizer-ranks',
    )
  }
  return { bytes, offsets }
}

/** Under 40% full, so a byte string that is no token (most lookups of a merge) probes ~2 slots. */
function hashTokens(bytes: Uint8Array, offsets: Uint32Array): Uint32Array {
  const slots = new Uint32Array(2 ** Math.ceil(Math.log2(O200K_TOKEN_COUNT * 2.5)))
  const mask = slots.length - 1
  for (let rank = 0; rank < O200K_TOKEN_COUNT; rank++) {
    let slot = hashBytes(bytes, offsets[rank]!, offsets[rank + 1]!) & mask
    while (slots[slot] !== 0) slot = (slot + 1) & mask
    slots[slot] = rank + 1
  }
  return slots
}

/** FNV-1a, 32 bits. */
function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i]!, 0x01000193)
  return hash >>> 0
}

/** The rank of the token whose bytes are `piece[start … end - 1]`, or NONE. */
function rankOf(t: RankTable, piece: Uint8Array, start: number, end: number): number {
  const { bytes, offsets, slots } = t
  const length = end - start
  const mask = slots.length - 1
  for (let slot = hashBytes(piece, start, end) & mask; ; slot = (slot + 1) & mask) {
    const entry = slots[slot]!
    if (entry === 0) return NONE
    const rank = entry - 1
    const at = offsets[rank]!
    if (offsets[rank + 1]! - at !== length) continue
    let i = 0
    while (i < length && bytes[at + i] === piece[start + i]) i++
    if (i === length) return rank
  }
}

/** UTF-8 of the piece being encoded (reused: pieces are short, and counting allocates nothing per piece). */
let pieceBytes = new Uint8Array(1024)
/** The merge's parts: where each starts in pieceBytes, and the rank of it joined with the next. */
let partStarts = new Uint32Array(1024)
let partRanks = new Uint32Array(1024)

/** Writes `text[start … end - 1]` as UTF-8 into pieceBytes (a lone surrogate as U+FFFD, as TextEncoder does). */
function pieceToUtf8(text: string, start: number, end: number): number {
  if (pieceBytes.length < (end - start) * 3) pieceBytes = new Uint8Array((end - start) * 3)
  const out = pieceBytes
  let n = 0
  for (let i = start; i < end; i++) {
    let code = text.charCodeAt(i)
    if (code < 0x80) {
      out[n++] = code
      continue
    }
    if (code < 0x800) {
      out[n++] = 0xc0 | (code >> 6)
      out[n++] = 0x80 | (code & 0x3f)
      continue
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = i + 1 < end ? text.charCodeAt(i + 1) : 0
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00)
        i++
        out[n++] = 0xf0 | (code >> 18)
        out[n++] = 0x80 | ((code >> 12) & 0x3f)
        out[n++] = 0x80 | ((code >> 6) & 0x3f)
        out[n++] = 0x80 | (code & 0x3f)
        continue
      }
      code = 0xfffd
    }
    out[n++] = 0xe0 | (code >> 12)
    out[n++] = 0x80 | ((code >> 6) & 0x3f)
    out[n++] = 0x80 | (code & 0x3f)
  }
  return n
}

/** Pieces longer than this (in bytes) are merged with a heap instead of tiktoken's rescans. */
const LONG_PIECE = 128

/**
 * Merges pieceBytes[0 … length - 1] (not itself a token, at least 2 bytes) as tiktoken's
 * `_byte_pair_merge` does; returns the number of tokens, whose starts (and then the piece's end)
 * it leaves in partStarts. tiktoken rescans every pair after each merge, quadratic in the piece's
 * length; so does this for short pieces, where that is fastest.
 */
function mergePiece(t: RankTable, length: number): number {
  if (partStarts.length < length + 1) {
    partStarts = new Uint32Array(length + 1)
    partRanks = new Uint32Array(length + 1)
  }
  if (length > LONG_PIECE) return mergeLongPiece(t, length)
  const starts = partStarts
  const ranks = partRanks
  const piece = pieceBytes
  let parts = length + 1
  /** The rank of parts i, i + 1 joined (NONE when i + 1 is the last part or they are no token). */
  const joinedRank = (i: number) => (i + 3 < parts ? rankOf(t, piece, starts[i]!, starts[i + 3]!) : NONE)
  let minRank = NONE
  let minAt = 0
  for (let i = 0; i < length - 1; i++) {
    const rank = rankOf(t, piece, i, i + 2)
    starts[i] = i
    ranks[i] = rank
    if (rank < minRank) {
      minRank = rank
      minAt = i
    }
  }
  starts[length - 1] = length - 1
  ranks[length - 1] = NONE
  starts[length] = length
  ranks[length] = NONE
  while (minRank !== NONE) {
    const i = minAt
    if (i > 0) ranks[i - 1] = joinedRank(i - 1)
    ranks[i] = joinedRank(i)
    starts.copyWithin(i + 1, i + 2, parts)
    ranks.copyWithin(i + 1, i + 2, parts)
    parts--
    minRank = NONE
    for (let j = 0; j < parts - 1; j++) {
      if (ranks[j]! < minRank) {
        minRank = ranks[j]!
        minAt = j
      }
    }
  }
  return parts - 1
}

/**
 * The same merges in the same order for a long piece (a run of spaces or newlines, which no count
 * slices), in O(n log n): the candidate pairs in a binary heap keyed by (rank, start), the lowest
 * rank first and the leftmost among equal ranks, as tiktoken's scan picks them. A pair is
 * (start, end) of two adjacent parts; one whose parts have changed since is skipped when it comes
 * up (its rank depends only on its bytes, so a pair still adjacent is still right).
 */
function mergeLongPiece(t: RankTable, length: number): number {
  const piece = pieceBytes
  /** Start of the part after the part starting at i (length after the last part). */
  const next = new Int32Array(length + 1)
  /** Start of the part before the part starting at i (-1 for the first part). */
  const previous = new Int32Array(length + 1)
  /** 1 while a part starts at i. */
  const alive = new Uint8Array(length)
  // Each merge adds at most two pairs to the length - 1 first ones.
  const keys = new Float64Array(3 * length)
  const ends = new Int32Array(3 * length)
  let size = 0
  const push = (start: number, end: number) => {
    const rank = rankOf(t, piece, start, end)
    if (rank === NONE) return
    const key = rank * 2 ** 32 + start
    let i = size++
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (keys[parent]! <= key) break
      keys[i] = keys[parent]!
      ends[i] = ends[parent]!
      i = parent
    }
    keys[i] = key
    ends[i] = end
  }
  const popInto = (top: { start: number; end: number }) => {
    top.start = keys[0]! % 2 ** 32
    top.end = ends[0]!
    const key = keys[--size]!
    const end = ends[size]!
    let i = 0
    for (;;) {
      let child = 2 * i + 1
      if (child >= size) break
      if (child + 1 < size && keys[child + 1]! < keys[child]!) child++
      if (keys[child]! >= key) break
      keys[i] = keys[child]!
      ends[i] = ends[child]!
      i = child
    }
    keys[i] = key
    ends[i] = end
  }
  for (let i = 0; i < length; i++) {
    next[i] = i + 1
    previous[i] = i - 1
    alive[i] = 1
  }
  for (let i = 0; i < length - 1; i++) push(i, i + 2)
  const top = { start: 0, end: 0 }
  while (size > 0) {
    popInto(top)
    const { start, end } = top
    const middle = next[start]!
    if (alive[start] === 0 || middle >= length || next[middle] !== end) continue
    alive[middle] = 0
    next[start] = end
    if (end < length) previous[end] = start
    if (previous[start]! >= 0) push(previous[start]!, end)
    if (end < length) push(start, next[end]!)
  }
  let parts = 0
  for (let at = 0; at < length; at = next[at]!) partStarts[parts++] = at
  partStarts[parts] = length
  return parts
}

/** Calls `emit` with each token of the text, or only counts them when there is no `emit`. */
function encodeOrdinary(text: string, emit?: (rank: number) => void): number {
  const t = rankTable()
  let count = 0
  PRE_TOKENIZER.lastIndex = 0
  for (let match = PRE_TOKENIZER.exec(text); match !== null; match = PRE_TOKENIZER.exec(text)) {
    const length = pieceToUtf8(text, match.index, match.index + match[0].length)
    const whole = length === 1 ? t.byteRanks[pieceBytes[0]!]! : rankOf(t, pieceBytes, 0, length)
    if (whole !== NONE) {
      count++
      emit?.(whole)
      continue
    }
    const tokens = mergePiece(t, length)
    count += tokens
    if (emit) for (let i = 0; i < tokens; i++) emit(rankOf(t, pieceBytes, partStarts[i]!, partStarts[i + 1]!))
  }
  return count
}

/** The number of o200k_base tokens of the text (special-token markers count as plain text). */
export function countTokens(text: string): number {
  return text.length === 0 ? 0 : encodeOrdinary(text)
}

/** The o200k_base tokens of the text (special-token markers encoded as plain text). */
export function encode(text: string): number[] {
  const tokens: number[] = []
  if (text.length > 0) encodeOrdinary(text, (rank) => tokens.push(rank))
  return tokens
}

/** `ignoreBOM`: a text's leading U+FEFF is text (the default would drop it). */
const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true })

/**
 * The text of the tokens. Bytes that are not whole UTF-8 (tokens cut inside a character) decode
 * to U+FFFD, unless `incompleteEnd` is 'drop': then a character left incomplete at the end is left
 * out, as when the tokens are the first n of a text.
 */
export function decode(
  tokens: readonly number[],
  options: { incompleteEnd?: 'replace' | 'drop' } = {},
): string {
  const { bytes, offsets } = rankTable()
  let length = 0
  for (const token of tokens) {
    if (!Number.isInteger(token) || token < 0 || token >= O200K_TOKEN_COUNT) {
      throw new RangeError(`${token} is not an o200k_base token (0 to ${O200K_TOKEN_COUNT - 1})`)
    }
    length += offsets[token + 1]! - offsets[token]!
  }
  const out = new Uint8Array(length)
  let at = 0
  for (const token of tokens) {
    out.set(bytes.subarray(offsets[token]!, offsets[token + 1]!), at)
    at += offsets[token + 1]! - offsets[token]!
  }
  const end = options.incompleteEnd === 'drop' ? completeUtf8Length(out) : out.length
  return utf8.decode(end === out.length ? out : out.subarray(0, end))
}

/** The length of `bytes` without a UTF-8 sequence that its last bytes begin but do not finish. */
function completeUtf8Length(bytes: Uint8Array): number {
  // A sequence is at most 4 bytes: look back over at most 3 continuation bytes for its lead.
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!
    if ((byte & 0xc0) === 0x80) continue
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return needed > back ? bytes.length - back : bytes.length
  }
  return bytes.length
}
