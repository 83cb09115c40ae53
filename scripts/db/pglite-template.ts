/**
 * A new embedded database starts as a copy of an empty cluster. Creating a PGlite cluster
 * (initdb inside WASM) takes 3-7 s on this class of machine, opening an existing one under 1 s, and
 * every crash and restart test starts several stacks on new data folders. The empty cluster is
 * made once per PGlite version in node_modules/.cache/svc-pglite and copied (~40 MB, milliseconds);
 * nothing in it is specific to one deployment (the migrations and the seed run after, as before).
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

function versionOf(name: string): string {
  const require = createRequire(import.meta.url)
  const manifest = path.join(path.dirname(require.resolve(name)), '..', 'package.json')
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version
}

/** A folder holds a cluster once initdb wrote PG_VERSION; an empty or missing folder holds none. */
function isEmptyFolder(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0
}

/**
 * Fills `dataDir` with a copy of the empty cluster when it has no cluster yet (missing or empty);
 * `createCluster(dir)` makes one in `dir` and closes it cleanly, called once per PGlite version.
 * A folder that already holds anything is left to PGlite as it is.
 */
export async function startFromTemplate(
  dataDir: string,
  createCluster: (dir: string) => Promise<void>,
  cache = path.join(ROOT, 'node_modules', '.cache', 'svc-pglite'),
): Promise<void> {
  if (!isEmptyFolder(dataDir)) return
  const template = path.join(
    cache,
    `pglite-${versionOf('@electric-sql/pglite')}-pgvector-${versionOf('@electric-sql/pglite-pgvector')}`,
  )
  if (!existsSync(path.join(template, 'PG_VERSION'))) {
    const building = `${template}.${process.pid}.${Date.now()}.tmp`
    mkdirSync(building, { recursive: true })
    await createCluster(building)
    try {
      renameSync(building, template)
    } catch {
      // Another start made it first (a folder cannot be renamed onto a non-empty one): use theirs.
      rmSync(building, { recursive: true, force: true })
    }
  }
  mkdirSync(dataDir, { recursive: true })
  cpSync(template, dataDir, { recursive: true })
}
