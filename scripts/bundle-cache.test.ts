/**
 * The worker bundle cache: a kept bundle is what a fresh build writes at the same place, byte for
 * byte (the attestation digests the bundles), any change under the source roots misses, and a
 * build reaching outside them is not kept. Runs the real bundler on a small tree of its own.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openBundleCache } from './bundle-cache.ts'
import { bundleWorker } from './workers.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'svc-bundle-cache-'))
const out = mkdtempSync(path.join(os.tmpdir(), 'svc-bundle-out-'))
afterAll(() => {
  rmSync(root, { recursive: true, force: true })
  rmSync(out, { recursive: true, force: true })
})

function write(file: string, text: string): string {
  const full = path.join(root, file)
  mkdirSync(path.dirname(full), { recursive: true })
  writeFileSync(full, text)
  return full
}

write('package-lock.json', '{"lockfileVersion":3}')
write('shared/greeting.ts', "export const greeting = (name: string) => 'hello, ' + name\n")
const entry = write(
  'functions/hello/src/index.ts',
  "import { greeting } from '../../../shared/greeting'\nexport default { fetch: () => new Response(greeting('edge')) }\n",
)
const settings = 'test'

describe('worker bundle cache', () => {
  it('restores what a fresh build writes at that path, byte for byte, with a map that names the same sources', async () => {
    const cache = openBundleCache(root, settings)
    expect(cache.restore(entry, path.join(out, 'a/index.js'))).toBe(false)
    await bundleWorker(entry, path.join(out, 'a/index.js'), { cache })

    // A different folder depth and file name than the kept build's.
    const restored = path.join(out, 'b/deeper/worker.js')
    expect(openBundleCache(root, settings).restore(entry, restored)).toBe(true)
    const fresh = path.join(out, 'c/deeper/worker.js')
    await bundleWorker(entry, fresh)
    expect(readFileSync(restored)).toEqual(readFileSync(fresh))
    expect(readFileSync(restored, 'utf8')).toContain('hello, ')
    const sources = (file: string) =>
      (JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] }).sources.map((s) =>
        path.resolve(path.dirname(file), s),
      )
    expect(sources(restored)).toEqual(sources(fresh))
    expect(sources(restored)).toContain(path.join(root, 'shared/greeting.ts'))
  }, 60_000) // two esbuild builds of a worker: seconds on a loaded 2-core machine

  it('misses once anything under the source roots changed, or the settings did', async () => {
    await bundleWorker(entry, path.join(out, 'd/index.js'), { cache: openBundleCache(root, settings) })
    expect(openBundleCache(root, settings).restore(entry, path.join(out, 'e/index.js'))).toBe(true)
    expect(openBundleCache(root, 'other bundler').restore(entry, path.join(out, 'e/index.js'))).toBe(false)

    write('shared/greeting.ts', "export const greeting = (name: string) => 'bonjour, ' + name\n")
    const cache = openBundleCache(root, settings)
    expect(cache.restore(entry, path.join(out, 'f/index.js'))).toBe(false)
    await bundleWorker(entry, path.join(out, 'f/index.js'), { cache })
    expect(readFileSync(path.join(out, 'f/index.js'), 'utf8')).toContain('bonjour, ')

    // A file the bundle does not even include still counts: the roots are hashed whole.
    write('functions/unrelated.ts', 'export {}\n')
    expect(openBundleCache(root, settings).restore(entry, path.join(out, 'g/index.js'))).toBe(false)
  })

  it('does not keep a build that includes files outside the source roots', async () => {
    write('bench/helper.ts', 'export const bench = 42\n')
    const outside = write(
      'functions/bench-user/src/index.ts',
      "import { bench } from '../../../bench/helper'\nexport default { fetch: () => new Response(String(bench)) }\n",
    )
    await bundleWorker(outside, path.join(out, 'h/index.js'), { cache: openBundleCache(root, settings) })
    expect(openBundleCache(root, settings).restore(outside, path.join(out, 'i/index.js'))).toBe(false)
  })
})
