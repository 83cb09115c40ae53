/**
 * Differential test: ./tokenizer-o200k.ts against gpt-tokenizer (the devDependency its rank table is
 * generated from), token for token, over adversarial and seeded random text; and against tiktoken
 * itself where gpt-tokenizer reads tiktoken's regex the JavaScript way.
 */
import { encode as referenceEncode } from 'gpt-tokenizer/encoding/o200k_base'
import { describe, expect, it } from 'vitest'
import { countTokens, decode, encode } from './tokenizer-o200k'

const PLAIN_TEXT = { disallowedSpecial: new Set<string>() }
const reference = (text: string) => referenceEncode(text, PLAIN_TEXT)

/** What a valid UTF-8 round trip gives back (a lone surrogate becomes U+FFFD). */
const wellFormed = (text: string) =>
  new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(new TextEncoder().encode(text))

const CODE = `import { z } from 'zod'

export const Schema = z.object({ id: z.string().uuid(), count: z.number().int().min(0) })
function merge(a: number[], b: number[]): number[] {
\tconst out: number[] = []
\tfor (let i = 0, j = 0; i < a.length || j < b.length; ) out.push(a[i]! <= (b[j] ?? Infinity) ? a[i++]! : b[j++]!)
\treturn out // ok?
}
    if (x !== null && y >= 10_000) { console.log(\`\${x}/\${y}\`); }
SELECT id, "name" FROM users WHERE created_at > now() - interval '7 days';
{"a":[1,2.5e-3,null,true],"b":{"c":"\\u00e9"}}
<div class="x">&amp;&nbsp;</div>\r\n#!/usr/bin/env bash\nset -euo pipefail\n`

const ADVERSARIAL: readonly string[] = [
  '',
  ' ',
  'hello world',
  'Hello, World! HELLO world.',
  // Whitespace runs: the regex's `\s+(?!\S)` gives all but the last space to the run.
  ' '.repeat(1),
  ' '.repeat(2),
  ' '.repeat(17),
  ' '.repeat(300),
  `a${' '.repeat(300)}b`,
  `${' '.repeat(40)}x${'\t'.repeat(20)}y\n\n\n${' \n'.repeat(30)}`,
  '\r\n\r\n  \r  \n\t\v\f\u00a0\u2028\u2029\u3000\u202f x',
  'end with spaces   ',
  '\n',
  '\n\n\n\n\n',
  // Digits: at most three to a piece.
  '0',
  '1234567890123456789012345678901234567890',
  '3.14159 2,718 1e-10 -42 +7 0x1F 1_000_000',
  '１２３４５ ²³ ½ Ⅻ ٣٤٥ ०१२ 一二三',
  // Contractions, in every case.
  "I'm you're he's we've they'll she'd can't IT'S I'M YOU'RE WE'VE THEY'LL SHE'D CAN'T",
  "it's It'S iT's rock'n'roll 'tis 'twas o'clock ''s 's 'S 'll 'LL 'lL",
  "don't won't shan't y'all ma'am",
  // Scripts, marks, case.
  'お誕生日おめでとう',
  '中文分词测试：这是一个句子。',
  '日本語のテキストとカタカナ、ひらがな。',
  '안녕하세요 세계',
  'Привет, мир! ПРИВЕТ',
  'Γειά σου Κόσμε ς σ Σ',
  'مرحبا بالعالم',
  'שלום עולם',
  'नमस्ते दुनिया',
  'สวัสดีครับ',
  'Straße STRASSE ß ẞ İstanbul ıi',
  'e\u0301 a\u0300\u0301\u0302 n\u0303 1\u20e3',
  'ǅungla ǈ ǋ ʰʲ ーー ـ',
  'ﬁ ﬂ ﬀ Ⅻ ℃ K Å',
  // Emoji: surrogate pairs, ZWJ sequences, flags, skin tones, variation selectors.
  '😀😃😄😁😆😅😂🤣',
  '👩\u200d💻 👨\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈',
  '🇺🇸🇯🇵🇩🇪 👍🏽👍🏿 ❤️ ☺︎ 1️⃣',
  'emoji😀in😀words',
  // Lone surrogates (encoded as U+FFFD, as TextEncoder does).
  '\ud800',
  'a\udc00b\ud83d',
  // Control characters and invisible ones.
  '\u0000\u0001\u001f\u007f',
  'zero\u200bwidth\u200cnon\u200djoiner\u2060',
  // Special-token markers are plain text.
  '<|endoftext|>',
  'before <|endofprompt|> after <|im_start|>user',
  // Long runs: merged byte pair by byte pair.
  'a'.repeat(500),
  'ACGT'.repeat(100),
  'x'.repeat(64) + 'y'.repeat(64),
  '=-'.repeat(200),
  '/'.repeat(100),
  '!?'.repeat(150),
  '😀'.repeat(120),
  'ab'.repeat(250),
  'Ω'.repeat(200),
  'aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZW5jb2RlZCB0ZXh0Cg==',
  'https://example.com/a/b?c=d&e=f#g mailto:x@y.z',
  CODE,
  CODE.repeat(5),
]

/** The characters gpt-tokenizer reads differently from tiktoken (listed below): left out of the random text. */
const DIVERGENT = /[\ufeff\u0085\u017f]/

/** Pieces random text is drawn from: every kind of character the pre-tokenizer tells apart. */
const FRAGMENTS: readonly string[] = [
  ...'abcxyzABCXYZ0123456789',
  ...' \t\n\r\v\f',
  ...'\'"/\\.,;:!?-_()[]{}<>@#$%^&*+=|~`',
  ...'éßİıǅʰー中文日本語한국어Жж١٢٣ⅫΩ',
  '\u0301',
  '\u00a0',
  '\u3000',
  '\u2028',
  '\u200b',
  '😀',
  '👩\u200d💻',
  '🇺🇸',
  '\ud800',
  "'s",
  "'S",
  "'ll",
  "'VE",
  "'re",
  "'d",
  "'M",
  "'t",
  '   ',
  '\n\n',
  '\r\n',
  '1234567',
  'the',
  ' The',
  'ing',
  '<|endoftext|>',
  '//',
  '=>',
]

/** mulberry32: a seeded generator, so a failure names a case that can be run again. */
function seededRandom(seed: number): (below: number) => number {
  let state = seed >>> 0
  return (below) => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (((t ^ (t >>> 14)) >>> 0) % below) >>> 0
  }
}

function randomTexts(seed: number, count: number, maxFragments: number): string[] {
  const random = seededRandom(seed)
  return Array.from({ length: count }, () => {
    let text = ''
    const length = 1 + random(maxFragments)
    for (let i = 0; i < length; i++) text += FRAGMENTS[random(FRAGMENTS.length)]
    return text
  })
}

describe('o200k_base tokens the same as gpt-tokenizer', () => {
  it('encodes adversarial text token for token', () => {
    for (const text of ADVERSARIAL) {
      expect(DIVERGENT.test(text), JSON.stringify(text)).toBe(false)
      expect(encode(text), JSON.stringify(text)).toEqual(reference(text))
    }
  })

  it('encodes 3,000 random texts token for token (seed 28)', () => {
    const texts = [...randomTexts(28, 2_500, 24), ...randomTexts(2028, 500, 200)]
    const differing = texts.filter((text) => encode(text).join() !== reference(text).join())
    expect(differing.map((text) => JSON.stringify(text))).toEqual([])
  })

  it('merges long pieces (over 128 bytes: a heap, not rescans) token for token (seed 128)', () => {
    const random = seededRandom(128)
    const runOf = (alphabet: readonly string[], min: number, spread: number) => {
      let text = ''
      for (let i = min + random(spread); i > 0; i--) text += alphabet[random(alphabet.length)]
      return text
    }
    const letters = ['a', 'b', 'e', 'r', 's', 't', 'th', 'in', 'q', 'z', 'é', '中', '文', '😀']
    const punctuation = [...'!?.-=/*(){}<>"\'']
    const whitespace = [' ', ' ', ' ', '\t', '\n', '\r\n', '\u3000']
    const texts = [
      ' '.repeat(1_000),
      '\n'.repeat(600),
      '\t'.repeat(700),
      ...Array.from({ length: 150 }, () => runOf(letters, 60, 300)),
      ...Array.from({ length: 100 }, () => runOf(punctuation, 130, 300)),
      ...Array.from({ length: 50 }, () => `${runOf(whitespace, 130, 400)}x`),
    ]
    const differing = texts.filter((text) => encode(text).join() !== reference(text).join())
    expect(differing.map((text) => JSON.stringify(text))).toEqual([])
  })

  it('counts what it encodes and decodes back to the text', () => {
    for (const text of [...ADVERSARIAL, ...randomTexts(7, 500, 40)]) {
      const tokens = encode(text)
      expect(countTokens(text), JSON.stringify(text)).toBe(tokens.length)
      expect(decode(tokens), JSON.stringify(text)).toBe(wellFormed(text))
    }
  })
})

/**
 * Where gpt-tokenizer and tiktoken disagree, the tokens are tiktoken's (tiktoken 1.0.22 for
 * JavaScript, the WebAssembly build of OpenAI's Rust core, `encode_ordinary`), because OpenAI's
 * API counts with tiktoken:
 * - the byte order mark U+FEFF. gpt-tokenizer looks a byte string up by decoding it with a
 *   TextDecoder that drops a leading BOM, so it never finds a token that begins with one
 *   (`\ufeff` alone is token 5574) and merges the BOM's bytes into two tokens instead. And
 *   JavaScript's `\s` has U+FEFF, which Unicode's White_Space (Rust's `\s`) has not, so in
 *   `x \ufeffy` the pieces differ too;
 * - NEL (U+0085) is White_Space, and not in JavaScript's `\s`: gpt-tokenizer gives the spaces
 *   before a NEL to a piece of their own instead of one whitespace run;
 * - `(?i:'s|…)` in Rust folds `s` to `ſ` (U+017F, long s) too, so `I'ſ` ends a word as `I's`
 *   would; gpt-tokenizer writes `[sS]`.
 */
const TIKTOKEN_WHERE_GPT_TOKENIZER_DIFFERS: readonly {
  text: string
  tiktoken: number[]
  gptTokenizer: number[]
}[] = [
  { text: '\ufeffhello', tiktoken: [5574, 24912], gptTokenizer: [5416, 123, 24912] },
  { text: '\ufeff\ufeff x', tiktoken: [135153, 1215], gptTokenizer: [5416, 123, 5416, 123, 1215] },
  { text: 'x \ufeffy', tiktoken: [87, 71280, 88], gptTokenizer: [87, 220, 5416, 123, 88] },
  {
    text: '\ufeff{"a": 1}',
    tiktoken: [5574, 10848, 64, 1243, 220, 16, 92],
    gptTokenizer: [5416, 123, 10848, 64, 1243, 220, 16, 92],
  },
  { text: '  \u0085\n', tiktoken: [256, 126, 227, 198], gptTokenizer: [220, 1322, 227, 198] },
  { text: " I'ſ", tiktoken: [3413, 70067], gptTokenizer: [357, 6, 70067] },
  { text: " I'ſ fine", tiktoken: [3413, 70067, 8975], gptTokenizer: [357, 6, 70067, 8975] },
]

/** Texts with those characters where both agree (tiktoken 1.0.22 gives the same tokens). */
const SAME_IN_BOTH: readonly string[] = ['a\u0085b', 'line one\u0085line two', '\u0085 ok', "I'ſ", "Let'ſ"]

describe('o200k_base tokens as tiktoken encodes them', () => {
  for (const { text, tiktoken, gptTokenizer } of TIKTOKEN_WHERE_GPT_TOKENIZER_DIFFERS) {
    it(`${JSON.stringify(text)}: tiktoken's tokens, not gpt-tokenizer's`, () => {
      expect(encode(text)).toEqual(tiktoken)
      expect(reference(text)).toEqual(gptTokenizer)
      expect(countTokens(text)).toBe(tiktoken.length)
      expect(decode(tiktoken)).toBe(text)
    })
  }

  it('agrees with both where the difference does not change a piece', () => {
    for (const text of SAME_IN_BOTH) expect(encode(text), JSON.stringify(text)).toEqual(reference(text))
  })
})

describe('decode', () => {
  // '🫠' (U+1FAE0) is more than one token: a prefix of its tokens is an incomplete character.
  const melting = '🫠'

  it('replaces an incomplete character with U+FFFD, or leaves it out when asked', () => {
    const tokens = encode(`ok ${melting}`)
    const cut = tokens.slice(0, -1)
    expect(decode(cut)).toMatch(/\uFFFD$/)
    expect(decode(cut, { incompleteEnd: 'drop' })).toBe('ok ')
    expect(decode(tokens, { incompleteEnd: 'drop' })).toBe(`ok ${melting}`)
  })

  it('refuses a number that is no token', () => {
    expect(() => decode([200_000])).toThrow(/200000 is not an o200k_base token/)
    expect(() => decode([-1])).toThrow(RangeError)
    expect(() => decode([1.5])).toThrow(RangeError)
  })
})
