/**
 * The tree's one dependency direction (docs/architecture.md): workers import Durable Objects and
 * `shared/`; Durable Objects import `shared/` (and each other); `shared/` imports neither; no
 * worker imports another worker's code (`import type` of its entrypoint or wire types is fine: it
 * is erased at build time). Test files may compose workers and read fixtures and data files.
 */
import { relative, resolve } from 'node:path'
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
