/**
 * docs/architecture.md's table of Durable Object classes says which worker hosts each class and
 * which workers bind it; the wrangler configs are what deploys. The two agree, so a binding added
 * or removed in a config is added to or removed from the table in the same change.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { root } from './source-imports'

const CONFIGS = [
  'wrangler.toml',
  ...[
    'auth',
    'chat',
    'code',
    'knowledge',
    'mcp',
    'metering',
    'models',
    'platform',
    'reasoning',
    'telemetry',
  ].map((family) => `functions/${family}/wrangler.toml`),
]

interface Placement {
  host: string | null
  boundBy: string[]
}

/** Class → hosting worker (a binding without `script_name`) and the other workers that bind it. */
function placementsInConfigs(configs: readonly string[]): Record<string, Placement> {
  const out: Record<string, Placement> = {}
  for (const text of configs) {
    const worker = /^name\s*=\s*"([^"]+)"/m.exec(text)?.[1]
    if (!worker) throw new Error('a wrangler config without a top-level name')
    for (const block of text.split(/^\[\[durable_objects\.bindings\]\]\s*$/m).slice(1)) {
      const body = block.split(/^\[/m)[0]!
      const className = /^class_name\s*=\s*"([^"]+)"/m.exec(body)?.[1]
      if (!className) continue
      out[className] ??= { host: null, boundBy: [] }
      const place = out[className]
      if (/^script_name\s*=/m.test(body)) place.boundBy.push(worker)
      else place.host = worker
    }
  }
  for (const place of Object.values(out)) place.boundBy.sort()
  return out
}

/** The table's rows: class, the `svc-*` worker it names as host, the `svc-*` workers of its last column. */
function placementsInTable(markdown: string): Record<string, Placement> {
  const out: Record<string, Placement> = {}
  for (const line of markdown.split('\n')) {
    const cells = /^\| `(\w+)` \| (.*) \| (.*) \|$/.exec(line)
    if (!cells) continue
    const workers = (cell: string) =>
      // A `script_name = "svc-x"` in the cell says where the class lives, not who binds it.
      [...cell.replace(/script_name = "[^"]*"/g, '').matchAll(/`(svc-[\w-]+)`/g)].map((m) => m[1]!)
    const host = workers(cells[2]!)[0] ?? null
    out[cells[1]!] = {
      host,
      boundBy: workers(cells[3]!)
        .filter((w) => w !== host)
        .sort(),
    }
  }
  return out
}

describe("docs/architecture.md's Durable Object table", () => {
  it('names the host and the binding workers of every class, as the wrangler configs do', () => {
    const fromConfigs = placementsInConfigs(CONFIGS.map((f) => readFileSync(join(root, f), 'utf8')))
    const fromTable = placementsInTable(readFileSync(join(root, 'docs/architecture.md'), 'utf8'))
    expect(Object.keys(fromConfigs).length).toBeGreaterThanOrEqual(4)
    expect(fromTable).toEqual(fromConfigs)
  })

  it('reads hosts, bindings and table cells as meant', () => {
    const host =
      'name = "svc-a"\n[[durable_objects.bindings]]\nname = "X"\nclass_name = "Thing"\n[[migrations]]\ntag = "v1"\n'
    const user =
      'name = "svc-b"\n[[durable_objects.bindings]]\nname = "X"\nclass_name = "Thing"\nscript_name = "svc-a"\n'
    expect(placementsInConfigs([host, user])).toEqual({ Thing: { host: 'svc-a', boundBy: ['svc-b'] } })
    const table = '| `Thing` | `svc-a` (`functions/a`) | `svc-b` (`script_name = "svc-a"`) |\n'
    expect(placementsInTable(table)).toEqual({ Thing: { host: 'svc-a', boundBy: ['svc-b'] } })
  })
})
