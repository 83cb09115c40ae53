/** Unified diffs of two texts, as the CLI's write_file tool reports its changes (file.delta). */

/** Marks a last line without a newline, so it differs from the same line with one. */
const NO_EOL = '\u0000'

function lines(text: string): string[] {
  if (text === '') return []
  const parts = text.split('\n')
  if (parts.at(-1) === '') parts.pop()
  else parts[parts.length - 1] += NO_EOL
  return parts
}

/**
 * A unified diff of two texts (line-based, 3 lines of context), as `diff -u` prints it. Large
 * files (over 4,000 lines on either side) are diffed as a whole replacement.
 */
export function unifiedDiff(before: string | null, after: string | null, file: string): string {
  const a = before === null ? [] : lines(before)
  const b = after === null ? [] : lines(after)
  const header = `--- ${before === null ? '/dev/null' : `a/${file}`}\n+++ ${after === null ? '/dev/null' : `b/${file}`}\n`
  type Op = { kind: ' ' | '-' | '+'; line: string }
  let ops: Op[]
  if (a.length > 4000 || b.length > 4000) {
    ops = [
      ...a.map((line) => ({ kind: '-' as const, line })),
      ...b.map((line) => ({ kind: '+' as const, line })),
    ]
  } else {
    const lcs = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1))
    for (let i = a.length - 1; i >= 0; i--)
      for (let j = b.length - 1; j >= 0; j--)
        lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!)
    ops = []
    let i = 0
    let j = 0
    while (i < a.length || j < b.length) {
      if (i < a.length && j < b.length && a[i] === b[j]) {
        ops.push({ kind: ' ', line: a[i]! })
        i++
        j++
      } else if (i < a.length && (j === b.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
        ops.push({ kind: '-', line: a[i]! })
        i++
      } else {
        ops.push({ kind: '+', line: b[j]! })
        j++
      }
    }
  }
  const changed = ops.map((op, index) => (op.kind === ' ' ? -1 : index)).filter((index) => index >= 0)
  if (changed.length === 0) return ''
  let out = header
  let start = 0
  while (start < changed.length) {
    let end = start
    while (end + 1 < changed.length && changed[end + 1]! - changed[end]! <= 7) end++
    const from = Math.max(0, changed[start]! - 3)
    const to = Math.min(ops.length, changed[end]! + 4)
    let aStart = 0
    let bStart = 0
    for (const op of ops.slice(0, from)) {
      if (op.kind !== '+') aStart++
      if (op.kind !== '-') bStart++
    }
    const hunk = ops.slice(from, to)
    const aLen = hunk.filter((op) => op.kind !== '+').length
    const bLen = hunk.filter((op) => op.kind !== '-').length
    const range = (startLine: number, length: number) =>
      length === 1 ? `${startLine + 1}` : `${length === 0 ? startLine : startLine + 1},${length}`
    out += `@@ -${range(aStart, aLen)} +${range(bStart, bLen)} @@\n`
    for (const op of hunk) {
      out += op.line.endsWith(NO_EOL)
        ? `${op.kind}${op.line.slice(0, -1)}\n\\ No newline at end of file\n`
        : `${op.kind}${op.line}\n`
    }
    start = end + 1
  }
  return out
}
