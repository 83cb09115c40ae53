/**
 * The deployable workers, read from their wrangler configs (the single source of truth for
 * names, entry points, compatibility settings and bindings), and their esbuild bundles.
 */
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, version as esbuildVersion, type Plugin } from 'esbuild'
import { type BundleCache, openBundleCache } from './bundle-cache.ts'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

export function workerConfigPaths(): string[] {
  const families = readdirSync(path.join(ROOT, 'functions'))
    .map((dir) => path.join('functions', dir, 'wrangler.toml'))
    .filter((p) => existsSync(path.join(ROOT, p)))
    .sort()
  return ['wrangler.toml', ...families]
}

let validatorsWritten: Promise<void> | null = null

/**
 * `import js from './x.client?script'`: the browser script `x.client.ts`, bundled on its own for
 * browsers (IIFE, minified) and imported as its text. The console serves its client scripts so
 * (functions/console/src/assets.ts); they are type-checked with tsconfig.client.json.
 */
const browserScripts = (inputs: Set<string>): Plugin => ({
  name: 'browser-scripts',
  setup(builder) {
    builder.onResolve({ filter: /\?script$/ }, (args) => ({
      path: path.resolve(args.resolveDir, `${args.path.slice(0, -'?script'.length)}.ts`),
      namespace: 'browser-script',
    }))
    builder.onLoad({ filter: /.*/, namespace: 'browser-script' }, async (args) => {
      const script = await bundleBrowserScript(args.path)
      for (const file of script.inputs) inputs.add(file)
      return { contents: script.text, loader: 'text', watchFiles: script.inputs }
    })
  },
})

/** A browser script (`x.client.ts`) bundled for browsers: IIFE, minified; its text and its input files. */
export async function bundleBrowserScript(file: string): Promise<{ text: string; inputs: string[] }> {
  const result = await build({
    entryPoints: [file],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
  })
  return { text: result.outputFiles[0]!.text, inputs: Object.keys(result.metafile?.inputs ?? {}) }
}

/** Bundles a worker entry for workerd (ESM, Workers conditions, node: and cloudflare: external). */
export async function bundleWorker(
  entry: string,
  outfile: string,
  options: { minify?: boolean; cache?: BundleCache } = {},
): Promise<void> {
  await validatorsUpToDate()
  const cache = options.minify ? undefined : options.cache
  if (cache?.restore(entry, outfile)) return
  const scriptInputs = new Set<string>()
  const result = await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2023',
    conditions: ['workerd', 'worker', 'browser', 'import', 'default'],
    mainFields: ['module', 'main'],
    external: ['cloudflare:*', 'node:*'],
    sourcemap: 'linked',
    minify: options.minify ?? false,
    logLevel: 'warning',
    legalComments: 'none',
    metafile: true,
    plugins: [rawText, browserScripts(scriptInputs)],
  })
  cache?.keep(entry, outfile, [...Object.keys(result.metafile.inputs), ...scriptInputs])
}

/** Build time: the validators generated from the zod schemas are brought up to date first. */
function validatorsUpToDate(): Promise<void> {
  validatorsWritten ??= import('./generate-validators.ts').then((m) => m.writeValidators(console.log))
  return validatorsWritten
}

/**
 * The bundle cache for worker bundles built now (scripts/bundle-cache.ts): opened after the
 * generated validators are written, since they are among the sources.
 */
export async function workerBundleCache(): Promise<BundleCache> {
  await validatorsUpToDate()
  return openBundleCache(ROOT, `esbuild ${esbuildVersion}`)
}

/** `import text from 'file?raw'`: the file's text as a string module (as Vite does in the tests). */
const rawText: Plugin = {
  name: 'raw-text',
  setup(build) {
    build.onResolve({ filter: /\?raw$/ }, async (args) => {
      const resolved = await build.resolve(args.path.slice(0, -'?raw'.length), {
        kind: 'import-statement',
        resolveDir: args.resolveDir,
      })
      if (resolved.errors.length > 0) return { errors: resolved.errors }
      return { path: resolved.path, namespace: 'raw-text' }
    })
    build.onLoad({ filter: /.*/, namespace: 'raw-text' }, async (args) => ({
      contents: await readFile(args.path, 'utf8'),
      loader: 'text',
    }))
  },
}

/** One deployed worker's code as the attestation names it: the SHA-256 of the module uploaded. */
export interface BundleDigest {
  worker: string
  sha256: string
  bytes: number
}

/** The digest of a bundled worker's main module (what `wrangler deploy --no-bundle` uploads). */
export function bundleDigest(worker: string, file: string): BundleDigest {
  const code = readFileSync(file)
  return { worker, sha256: createHash('sha256').update(code).digest('hex'), bytes: code.length }
}
