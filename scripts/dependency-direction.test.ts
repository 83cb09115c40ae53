/**
 * The tree's one dependency direction (docs/architecture.md): workers import Durable Objects and
 * `shared/`; Durable Objects import `shared/` (and each other); `shared/` imports neither; no
 * worker imports another worker's code (`import type` of its entrypoint or wire types is fine: it
 * is erased at build time). Test files may compose workers and read fixtures and data files.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(__dirname, '..')
/** Static imports and re-exports (group 1 = `type ` when type-only, group 2 = the path) and dynamic imports (group 3). */
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(?:[^;'"]*?\sfrom\s+)?'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'/g

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .filter((f) => !f.includes('node_modules'))
}

/** `functions/<name>`, `durable-objects`, `shared` or another top-level folder. */
function area(file: string): string {
  const [top, name] = file.split('/')
  return top === 'functions' ? `functions/${name}` : (top ?? '')
}

function crossings(dir: string): string[] {
  const out: string[] = []
  for (const file of sourceFiles(dir)) {
    const text = readFileSync(join(root, file), 'utf8')
    for (const match of text.matchAll(IMPORT)) {
      const typeOnly = match[1] !== undefined
      const target = relative(root, resolve(root, dirname(file), (match[2] ?? match[3])!))
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
