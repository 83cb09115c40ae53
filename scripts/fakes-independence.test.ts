/**
 * The fakes of outside providers (test/fakes/, and their e2e wrappers in test/e2e/fakes/) share
 * nothing with the product: no code and no types from functions/, durable-objects/ or shared/,
 * directly or through a helper they import. A fake built from the product's own parser,
 * simulator or encoding agrees with the product's bugs, and a test against it then passes for
 * the wrong reason; a fake speaks the wire format from its own definitions, written from the
 * provider's public documentation. Their tests (`*.test.ts`) may import the product: that is
 * what they test.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { importsIn, importsOf, root, sourceFiles } from './source-imports'

const FAKES = ['test/fakes', 'test/e2e/fakes']
const PRODUCT = /^(functions|durable-objects|shared)\//

/** The file an import names: as written, or with `.ts` / `/index.ts` added (null: not a source file). */
function fileOnDisk(target: string): string | null {
  for (const candidate of [target, `${target}.ts`, `${target}/index.ts`])
    if (/\.tsx?$/.test(candidate) && existsSync(join(root, candidate))) return candidate
  return null
}

interface Tree {
  imports(file: string): { target: string; typeOnly: boolean }[]
  file(target: string): string | null
}
const disk: Tree = { imports: importsOf, file: fileOnDisk }

/**
 * Each path from `file` into the product, as `a -> b -> product file`. Helpers are followed through
 * the code they load; a type-only import of a helper (the e2e harness's `FakeService`) loads none.
 */
function productReach(file: string, tree: Tree = disk, seen = new Set<string>()): string[] {
  if (seen.has(file)) return []
  seen.add(file)
  const out: string[] = []
  for (const { target, typeOnly } of tree.imports(file)) {
    if (PRODUCT.test(target)) out.push(`${file} -> ${target}`)
    else if (!typeOnly) {
      const next = tree.file(target)
      if (next) out.push(...productReach(next, tree, seen).map((chain) => `${file} -> ${chain}`))
    }
  }
  return out
}

const fakeFiles = () => FAKES.flatMap(sourceFiles).filter((f) => !/\.test\.ts$/.test(f))

describe('the fakes share nothing with the product', () => {
  it('no fake imports functions/, durable-objects/ or shared/, even type-only or through a helper', () => {
    expect(fakeFiles().length).toBeGreaterThan(5)
    expect(fakeFiles().flatMap((f) => productReach(f))).toEqual([])
  })

  it('the rule sees an import into the product, a type-only one, and one through a helper', () => {
    const texts: Record<string, string> = {
      'test/fakes/a.ts': "import { b } from './b.ts'\nimport type {\n  W,\n} from '../../shared/x/wire'",
      'test/fakes/b.ts':
        "export { c } from '../support/c'\nimport { a } from './a.ts'\nimport type { H } from '../e2e/h'",
      'test/e2e/h.ts': "import { db } from '../../shared/db/client'",
      'test/support/c.ts': "const m = await import('../../functions/chat/src/m')",
    }
    const tree: Tree = {
      imports: (file) => importsIn(file, texts[file]!),
      file: (target) => [target, `${target}.ts`].find((f) => f in texts) ?? null,
    }
    expect(productReach('test/fakes/a.ts', tree)).toEqual([
      'test/fakes/a.ts -> test/fakes/b.ts -> test/support/c.ts -> functions/chat/src/m',
      'test/fakes/a.ts -> shared/x/wire',
    ])
    expect(fileOnDisk('test/support/zero-bomb')).toBe('test/support/zero-bomb.ts')
    expect(fileOnDisk('shared/nowhere')).toBeNull()
  })
})
