/**
 * No reference to what no longer exists: every repository path named in README.md, docs/*.md, the
 * code's comments, the text of production code (a public page's, a log line's) and the
 * configuration files (wrangler, shell, CI, deploy) names a file or folder of the tree. A moved or deleted file otherwise leaves readers, and the next change,
 * following a path to nothing.
 *
 * What counts as a path: a word starting with one of the tree's top-level folders (`functions/`,
 * `durable-objects/`, `shared/`, `scripts/`, `test/`, `bench/`, `docs/`, `migrations/`, `deploy/`),
 * not preceded by a path character (so `../shared/x` in an import and URLs are not read). It exists
 * when it is a file or folder, or a module named without its `.ts`/`.tsx`. Written on purpose as
 * patterns, these must match something: globs (`*`, `**`), alternatives (`{turns,runs}.ts`), and
 * placeholders (`functions/<worker>`: one path segment). A benchmark run id (`bench/results/
 * chat-20261124-135626`) names the run's files, which start with it; one with a placeholder
 * (`bench/results/chat-<ts>-logs/`) is where a run writes, uncommitted. Test files' string literals
 * are their fixtures and are not read; their comments are. The tree is what git tracks and what is
 * new and not ignored: what a clone has.
 *
 * The README's structure tree is read too: its entries, indented under their folders.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { root } from './source-imports'
import { sourceText } from './source-text'

const TOP = [
  'functions',
  'durable-objects',
  'shared',
  'scripts',
  'test',
  'bench',
  'docs',
  'migrations',
  'deploy',
]
const MENTION = new RegExp(`(?<![\\w./@$-])((?:${TOP.join('|')})/[\\w./*{}<>,-]*[\\w*}>/])`, 'g')
/** Words that look like paths and are not: the two key modes written as one phrase. */
const NOT_PATHS = new Set(['test/live'])

/**
 * Every file and folder of the tree (relative to the root, folders ending in `/`): what git tracks
 * and what is new and not ignored, as a clone would have it (no build output, data or logs).
 */
function treeEntries(): string[] {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
  })
    .toString()
    .split('\0')
    .filter((f) => f && existsSync(join(root, f)))
  const folders = new Set(
    files.flatMap((f) =>
      f
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => `${parts.slice(0, i + 1).join('/')}/`),
    ),
  )
  return [...new Set(files), ...folders]
}

/** `{a,b}` alternatives expanded. */
function expand(path: string): string[] {
  const m = /\{([^{}]*)\}/.exec(path)
  if (!m) return [path]
  return m[1]!
    .split(',')
    .flatMap((alt) => expand(path.slice(0, m.index) + alt + path.slice(m.index + m[0].length)))
}

function patternOf(path: string): RegExp {
  const source = path
    .replace(/[.+?^$()|[\]\\]/g, '\\$&')
    .replace(/<[^<>/]+>/g, '[^/]+')
    .split(/\*\*\/?/)
    .map((part) => part.replace(/\*/g, '[^/]*'))
    .join('(?:.*/)?')
  return new RegExp(`^${source}/?$`)
}

/** Whether `mention` names something in `entries` (see the rules above). */
function namesSomething(mention: string, entries: ReadonlySet<string>): boolean {
  if (NOT_PATHS.has(mention)) return true
  // Where a benchmark run writes (bench/results/chat-<ts>-logs/: logs are not committed).
  if (/^bench\/results\/[^/]*<[^>]+>/.test(mention)) return true
  return expand(mention).every((path) => {
    if (/[*<]/.test(path)) {
      const pattern = patternOf(path.replace(/\/$/, ''))
      for (const entry of entries) if (pattern.test(entry)) return true
      return false
    }
    const bare = path.replace(/\/$/, '')
    if ([bare, `${bare}/`, `${bare}.ts`, `${bare}.tsx`].some((p) => entries.has(p))) return true
    if (bare.startsWith('bench/results/'))
      for (const entry of entries) if (entry.startsWith(`${bare}.`)) return true
    return false
  })
}

/** The comments of a TypeScript file, and its literal text unless it is a test file. */
function tsText(file: string, text: string): string[] {
  const { comments, strings } = sourceText(text)
  return /\.test\.tsx?$/.test(file) ? comments : [...comments, ...strings]
}

/** The README's structure tree: each entry with the folders it is indented under. */
function structureTree(readme: string): string[] {
  const block = /## Structure\s*\n```\n([\s\S]*?)```/.exec(readme)?.[1] ?? ''
  const parents: { indent: number; path: string }[] = []
  const out: string[] = []
  for (const line of block.split('\n')) {
    const m = /^( *)([^\s#]\S*)/.exec(line)
    if (!m) continue
    const indent = m[1]!.length
    while (parents.length > 0 && parents[parents.length - 1]!.indent >= indent) parents.pop()
    const path = `${parents[parents.length - 1]?.path ?? ''}${m[2]}`
    out.push(path)
    if (path.endsWith('/')) parents.push({ indent, path })
  }
  return out
}

interface Mention {
  readonly file: string
  readonly path: string
}

function mentions(entries: readonly string[]): Mention[] {
  const sources = entries.filter(
    (p) => /\.tsx?$/.test(p) && !p.endsWith('.d.ts') && !p.endsWith('.generated.ts'),
  )
  const docs = ['README.md', ...entries.filter((p) => /^docs\/[^/]+\.md$/.test(p))]
  // Configuration read whole: wrangler configs, shell scripts, CI, deployment files.
  const configs = entries.filter((p) => /\.(toml|sh|ya?ml)$/.test(p) || p === '.ci/run')
  const out: Mention[] = []
  for (const file of [...sources, ...docs, ...configs]) {
    const text = readFileSync(join(root, file), 'utf8')
    const parts = /\.tsx?$/.test(file) ? tsText(file, text) : [text]
    for (const part of parts) for (const m of part.matchAll(MENTION)) out.push({ file, path: m[1]! })
  }
  return out
}

describe('every path the docs and comments name exists', () => {
  it('README.md, docs/*.md, comments and product text', () => {
    const entries = new Set(treeEntries())
    const found = mentions([...entries])
    expect(found.length).toBeGreaterThan(500)
    const stale = found.filter((m) => !namesSomething(m.path, entries)).map((m) => `${m.file}: ${m.path}`)
    expect([...new Set(stale)]).toEqual([])
  })

  it("README's structure tree", () => {
    const entries = new Set(treeEntries())
    const tree = structureTree(readFileSync(join(root, 'README.md'), 'utf8'))
    expect(tree).toContain('functions/console/')
    expect(tree.filter((p) => !namesSomething(p, entries))).toEqual([])
  })

  it('the rules: files, modules, folders, globs, alternatives, placeholders, run ids; a missing one is seen', () => {
    const entries = new Set([
      'shared/',
      'shared/http/',
      'shared/http/errors.ts',
      'functions/',
      'functions/chat/',
      'functions/chat/src/turns.ts',
      'functions/chat/src/runs.ts',
      'bench/results/chat-1.jsonl',
    ])
    for (const ok of [
      'shared/http/errors.ts',
      'shared/http/errors',
      'shared/http/',
      'functions/<worker>',
      'functions/*/src/turns.ts',
      'functions/**/*.ts',
      'functions/chat/src/{turns,runs}.ts',
      'bench/results/chat-1',
      'bench/results/chat-<ts>-logs/',
      'test/live',
    ])
      expect(namesSomething(ok, entries), ok).toBe(true)
    for (const missing of [
      'shared/http/gone.ts',
      'functions/chat/src/{turns,gone}.ts',
      'functions/*/src/gone.ts',
    ])
      expect(namesSomething(missing, entries), missing).toBe(false)
    const text = "/** see shared/http/errors.ts and `docs/x.md`. */\nconst url = 'https://h/shared/no'\n"
    const read = tsText('f.ts', text).flatMap((t) => [...t.matchAll(MENTION)].map((m) => m[1]))
    expect(read).toEqual(['shared/http/errors.ts', 'docs/x.md'])
    expect(
      structureTree('## Structure\n```\nfunctions/   # x\n  chat/      # y\n    src/a.ts\nshared/\n```\n'),
    ).toEqual(['functions/', 'functions/chat/', 'functions/chat/src/a.ts', 'shared/'])
  })
})
