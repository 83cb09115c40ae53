/**
 * The tree's one dependency direction (docs/architecture.md): workers import Durable Objects and
 * `shared/`; Durable Objects import `shared/` (and each other); `shared/` imports neither; no
 * worker imports another worker's code (`import type` of its entrypoint or wire types is fine: it
 * is erased at build time). Test files may compose workers and read fixtures and data files.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { IMPORT, importsOf, root, sourceFiles } from './source-imports'

/** `functions/<name>`, `durable-objects`, `shared` or another top-level folder. */
function area(file: string): string {
  const [top, name] = file.split('/')
  return top === 'functions' ? `functions/${name}` : (top ?? '')
}

function crossings(dir: string): string[] {
  const out: string[] = []
  for (const file of sourceFiles(dir)) {
    for (const { target, typeOnly } of importsOf(file)) {
      const from = area(file)
      const to = area(target)
      if (from === to) continue
      const testCode = /\.test\.tsx?$|fixtures\.ts$/.test(file)
      const allowed =
        // Tests compose workers and read fixtures, docs and data files; production code does not.
        testCode ||
        // Another worker's RPC entrypoint or wire types, erased at build time: no code crosses.
        (typeOnly && from.startsWith('functions/') && to.startsWith('functions/')) ||
        (from.startsWith('functions/') && (to === 'durable-objects' || to === 'shared')) ||
        (from === 'durable-objects' && to === 'shared')
      if (!allowed) out.push(`${file} -> ${target}`)
    }
  }
  return out
}

describe('dependency direction between top-level folders', () => {
  it('shared/ imports no worker and no Durable Object', () => {
    expect(crossings('shared')).toEqual([])
  })

  it('Durable Objects import no worker', () => {
    expect(crossings('durable-objects')).toEqual([])
  })

  it("no worker imports another worker's code", () => {
    expect(crossings('functions')).toEqual([])
  })

  it('each folder under functions/ is one worker: its own wrangler config, its entry inside the folder', () => {
    // The areas above are workers only if this holds: the gateway's config is the root wrangler.toml.
    for (const folder of readdirSync(join(root, 'functions'))) {
      const config = folder === 'gateway' ? 'wrangler.toml' : `functions/${folder}/wrangler.toml`
      expect(existsSync(join(root, config)), `${folder}: ${config}`).toBe(true)
      const main = /^main\s*=\s*"([^"]+)"/m.exec(readFileSync(join(root, config), 'utf8'))?.[1] ?? ''
      expect(area(relative(root, resolve(root, dirname(config), main))), config).toBe(`functions/${folder}`)
    }
  })

  it('the rule sees a crossing when there is one', () => {
    expect(area('functions/chat/src/x.ts')).toBe('functions/chat')
    expect(area('shared/http/errors.ts')).toBe('shared')
    const probe =
      "import { x } from '../../functions/chat/src/completions'\nimport type {\n  Y,\n} from '../a'"
    const [value, type] = [...probe.matchAll(IMPORT)]
    expect(value![1]).toBeUndefined()
    expect(area(relative(root, resolve(root, 'shared/http', value![2]!)))).toBe('functions/chat')
    expect(type![1]).toBe('type ')
  })
})

/** Package imports (group 1 = `type ` when type-only, group 2 = the specifier) and dynamic ones (group 3). */
const PACKAGE_IMPORT =
  /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(?:[^;'"]*?\sfrom\s+)?'([^.'][^']*)'|import\(\s*'([^.'][^']*)'/g

/** `@scope/name` or `name` of a bare specifier (`gpt-tokenizer/encoding/o200k_base` → `gpt-tokenizer`). */
function packageName(specifier: string): string {
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!
}

/** Product files (workers, Durable Objects, shared/) that import a devDependency at run time. */
function devDependencyImports(devDependencies: ReadonlySet<string>): string[] {
  const out: string[] = []
  for (const dir of ['functions', 'durable-objects', 'shared']) {
    for (const file of sourceFiles(dir)) {
      if (/\.test\.tsx?$|fixtures\.ts$/.test(file)) continue
      const text = readFileSync(join(root, file), 'utf8')
      for (const match of text.matchAll(PACKAGE_IMPORT)) {
        const name = packageName((match[2] ?? match[3])!)
        if (match[1] === undefined && devDependencies.has(name)) out.push(`${file} -> ${name}`)
      }
    }
  }
  return out
}

describe('product code and devDependencies', () => {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>
    devDependencies: Record<string, string>
  }
  const devDependencies = new Set(Object.keys(manifest.devDependencies))

  it('no worker, Durable Object or shared module imports a devDependency (types aside)', () => {
    expect(devDependencyImports(devDependencies)).toEqual([])
  })

  it('gpt-tokenizer is only the source of the generated rank table (npm run generate:tokenizer-ranks)', () => {
    // shared/providers/tokenizer-o200k.ts counts tokens; gpt-tokenizer's 200k strings stay out of the isolates.
    expect(devDependencies.has('gpt-tokenizer')).toBe(true)
    expect(Object.keys(manifest.dependencies)).not.toContain('gpt-tokenizer')
  })

  it('the rule sees a devDependency import when there is one', () => {
    const probe =
      "import { encode } from 'gpt-tokenizer/encoding/o200k_base'\nimport type { X } from 'vitest'\nconst m = import('@electric-sql/pglite')\nimport { z } from 'zod'\nimport { y } from './local'"
    const found = [...probe.matchAll(PACKAGE_IMPORT)].map((m) => [
      m[1] !== undefined,
      packageName((m[2] ?? m[3])!),
    ])
    expect(found).toEqual([
      [false, 'gpt-tokenizer'],
      [true, 'vitest'],
      [false, '@electric-sql/pglite'],
      [false, 'zod'],
    ])
  })
})
