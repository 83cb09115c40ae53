/**
 * Worker bundles reused across starts. Every `npm start` and every crash or restart test bundled
 * all twelve workers again (~5 s of the ~20 s a start takes), though the sources rarely changed
 * between two starts. A bundle is keyed by the entry and the digest of everything a worker may
 * include: the source folders, the dependency lockfile and the bundler's settings. A build whose
 * inputs reach outside those folders is not kept, so a hit is always what a fresh build would write,
 * byte for byte (the attestation's bundle digests depend on it; scripts/bundle-cache.test.ts).
 *
 * Entries live in node_modules/.cache/svc-bundles (a clean install starts empty). Files are
 * written under temporary names and renamed, and the manifest last, so concurrent starts
 * (the two e2e projects) never read half an entry.
 */
import { createHash } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import path from 'node:path'

/** Everything a worker bundle may include besides node_modules (covered by the lockfile). */
const SOURCE_ROOTS = ['functions', 'durable-objects', 'shared', 'package-lock.json', 'scripts/workers.ts']
/** Bumped when the way bundles are built changes in a way the roots do not show. */
const FORMAT = 'svc-bundles/1'

export interface BundleCache {
  /** Copies a kept bundle to `outfile` (and its source map); false when there is none. */
  restore(entry: string, outfile: string): boolean
  /** Keeps the bundle just built at `outfile`, if every input lies under the source roots. */
  keep(entry: string, outfile: string, inputs: readonly string[]): void
}

function walk(root: string, file: string, hash: ReturnType<typeof createHash>): void {
  const stat = statSync(file, { throwIfNoEntry: false })
  if (!stat) return
  if (stat.isDirectory()) {
    for (const name of readdirSync(file).sort()) {
      if (name === 'node_modules' || name.startsWith('.')) continue
      walk(root, path.join(file, name), hash)
    }
    return
  }
  hash.update(path.relative(root, file)).update('\0').update(readFileSync(file)).update('\0')
}

/** The digest of the source roots as they are now (~10 ms for the whole tree). */
function sourceDigest(root: string, settings: string): string {
  const hash = createHash('sha256').update(FORMAT).update('\0').update(settings).update('\0')
  for (const r of SOURCE_ROOTS) walk(root, path.join(root, r), hash)
  return hash.digest('hex')
}

function writeAtomically(file: string, data: string | Buffer): void {
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
  writeFileSync(temporary, data)
  renameSync(temporary, file)
}

const SOURCE_MAP_COMMENT = /\/\/# sourceMappingURL=[^\n]*\n?$/

/**
 * Opens the cache for the tree as it is now. `settings` names everything else that changes the
 * output (the bundler options); call again after the sources changed (each start calls once).
 */
export function openBundleCache(root: string, settings: string): BundleCache {
  const digest = sourceDigest(root, settings)
  const dir = path.join(root, 'node_modules', '.cache', 'svc-bundles')
  const keyOf = (entry: string) =>
    createHash('sha256').update(digest).update('\0').update(path.relative(root, entry)).digest('hex')
  const inRoots = (file: string) => {
    const relative = path.relative(root, path.resolve(root, file.replace(/^[a-z-]+:/, '')))
    if (relative.split(path.sep).includes('node_modules')) return true
    return SOURCE_ROOTS.some((r) => relative === r || relative.startsWith(`${r}${path.sep}`))
  }

  return {
    restore(entry, outfile) {
      const key = keyOf(entry)
      const manifest = path.join(dir, `${key}.json`)
      if (!existsSync(manifest)) return false
      const kept = JSON.parse(readFileSync(manifest, 'utf8')) as { sources: string[] }
      const code = readFileSync(path.join(dir, `${key}.js`), 'utf8')
      const map = JSON.parse(readFileSync(path.join(dir, `${key}.js.map`), 'utf8')) as { sources: string[] }
      // The map's sources are relative to the bundle's folder, and the bundle names its map.
      const outDir = path.dirname(outfile)
      map.sources = kept.sources.map((s) => path.relative(outDir, s))
      mkdirSync(outDir, { recursive: true })
      writeFileSync(
        outfile,
        code.replace(SOURCE_MAP_COMMENT, `//# sourceMappingURL=${path.basename(outfile)}.map\n`),
      )
      writeFileSync(`${outfile}.map`, JSON.stringify(map, null, 2))
      return true
    },
    keep(entry, outfile, inputs) {
      if (!inputs.every(inRoots)) return
      const key = keyOf(entry)
      mkdirSync(dir, { recursive: true })
      const map = JSON.parse(readFileSync(`${outfile}.map`, 'utf8')) as { sources: string[] }
      const outDir = path.dirname(outfile)
      writeAtomically(path.join(dir, `${key}.js`), readFileSync(outfile))
      writeAtomically(path.join(dir, `${key}.js.map`), readFileSync(`${outfile}.map`))
      writeAtomically(
        path.join(dir, `${key}.json`),
        JSON.stringify({ entry, sources: map.sources.map((s) => path.resolve(outDir, s)) }),
      )
    },
  }
}
