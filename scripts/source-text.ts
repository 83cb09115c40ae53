/**
 * The comments and the literal text (strings, template text, regular expressions left out) of a
 * TypeScript file, read by a small lexer: what scripts/repository-paths.test.ts looks for paths in.
 * TypeScript's own parser does the same five times slower over the tree; this reads what the
 * tree's code is written with (no JSX text, which the tree's .tsx files keep to markup).
 */

export interface SourceText {
  readonly comments: string[]
  readonly strings: string[]
}

/** Characters after which a `/` starts a regular expression, not a division. */
const BEFORE_REGEX = new Set([...'(,=:[!&|?{};+-*%<>~^'])
const REGEX_KEYWORDS = /(?:^|[^\w$])(?:return|typeof|case|do|else|in|of|void|yield|await)$/

export function sourceText(text: string): SourceText {
  const comments: string[] = []
  const strings: string[] = []
  /** Brace depth of each template expression (`${ … }`) we are inside. */
  const templates: number[] = []
  let depth = 0
  let last = '' // the last significant character outside comments
  let i = 0
  const n = text.length

  /** Reads template text from i (just after ` or }) to the next ` or ${. */
  const templateText = () => {
    let out = ''
    while (i < n) {
      const c = text[i]!
      if (c === '\\') {
        out += text.slice(i, i + 2)
        i += 2
      } else if (c === '`') {
        i++
        strings.push(out)
        last = '`'
        return
      } else if (c === '$' && text[i + 1] === '{') {
        i += 2
        strings.push(out)
        templates.push(depth)
        depth++
        last = '{'
        return
      } else {
        out += c
        i++
      }
    }
    strings.push(out)
  }

  while (i < n) {
    const c = text[i]!
    const next = text[i + 1]
    if (c === '/' && next === '/') {
      const end = text.indexOf('\n', i)
      const stop = end < 0 ? n : end
      comments.push(text.slice(i, stop))
      i = stop
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2)
      const stop = end < 0 ? n : end + 2
      comments.push(text.slice(i, stop))
      i = stop
    } else if (c === "'" || c === '"') {
      let j = i + 1
      let out = ''
      while (j < n && text[j] !== c && text[j] !== '\n') {
        if (text[j] === '\\') {
          out += text.slice(j, j + 2)
          j += 2
        } else out += text[j++]
      }
      strings.push(out)
      i = j + 1
      last = c
    } else if (c === '`') {
      i++
      templateText()
    } else if (c === '}' && templates.length > 0 && templates[templates.length - 1] === depth - 1) {
      templates.pop()
      depth--
      i++
      templateText()
    } else if (
      c === '/' &&
      (last === '' ||
        BEFORE_REGEX.has(last) ||
        REGEX_KEYWORDS.test(text.slice(Math.max(0, i - 12), i).trimEnd()))
    ) {
      // A regular expression: to the closing / outside a character class, then its flags.
      let j = i + 1
      let inClass = false
      while (j < n && text[j] !== '\n') {
        const d = text[j]!
        if (d === '\\') j++
        else if (d === '[') inClass = true
        else if (d === ']') inClass = false
        else if (d === '/' && !inClass) break
        j++
      }
      i = j + 1
      while (i < n && /[a-z]/.test(text[i]!)) i++
      last = '/'
    } else {
      if (c === '{') depth++
      else if (c === '}') depth--
      if (!/\s/.test(c)) last = c
      i++
    }
  }
  return { comments, strings }
}
