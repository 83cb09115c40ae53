/**
 * The relative imports of the tree's TypeScript files, read from their text: what the
 * architecture tests (dependency-direction.test.ts, fakes-independence.test.ts) check. Package
 * imports are not followed; only what crosses between the repository's own folders matters there.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

export const root = resolve(import.meta.dirname, '..')

/** Static imports and re-exports (group 1 = `type ` when type-only, group 2 = the path) and dynamic imports (group 3). */
export const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(?:[^;'"]*?\sfrom\s+)?'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'/g

/** The `.ts`/`.tsx` files under `dir` (relative to the root), node_modules left out. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .filter((f) => !f.includes('node_modules'))
}

export interface SourceImport {
  /** The imported path relative to the root, as written (no extension added). */
  readonly target: string
  readonly typeOnly: boolean
}

/** The relative imports of `text`, written in `file` (relative to the root). */
export function importsIn(file: string, text: string): SourceImport[] {
  return [...text.matchAll(IMPORT)].map((match) => ({
    target: relative(root, resolve(root, dirname(file), (match[2] ?? match[3])!)),
    typeOnly: match[1] !== undefined,
  }))
}

export function importsOf(file: string): SourceImport[] {
  return importsIn(file, readFileSync(join(root, file), 'utf8'))
}
