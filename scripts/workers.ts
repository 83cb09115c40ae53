/**
 * The deployable workers, read from their wrangler configs (the single source of truth for
 * names, entry points, compatibility settings and bindings), and their esbuild bundles.
 */
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

export interface WorkerConfig {
  /** Path of the wrangler config, relative to the repository root. */
  configPath: string
  name: string
  /** Absolute path of the TypeScript entry (`main`). */
  main: string
}

export function workerConfigPaths(): string[] {
  const families = readdirSync(path.join(ROOT, 'functions'))
    .map((dir) => path.join('functions', dir, 'wrangler.toml'))
    .filter((p) => existsSync(path.join(ROOT, p)))
    .sort()
  return ['wrangler.toml', ...families]
}

/** Bundles a worker entry for workerd (ESM, Workers conditions, node: and cloudflare: external). */
export async function bundleWorker(
  entry: string,
  outfile: string,
  options: { minify?: boolean } = {},
): Promise<void> {
  await build({
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
  })
}
