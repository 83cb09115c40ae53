/**
 * `npm run deploy [-- --dry-run]`: deploys every worker to Cloudflare with the exact bundles whose
 * digests the platform worker attests. Each worker is bundled once here (the same esbuild build
 * `npm start` runs), hashed, and uploaded as is (`wrangler deploy --no-bundle`); the platform
 * worker gets the list as DEPLOYED_BUNDLES, so the attestation's `worker:<name>` subjects name
 * the uploaded code. Order: the metering worker first (it hosts the RateLimiter others bind), the
 * families, the platform worker (its variable needs every digest), the gateway last.
 *
 * `--dry-run` builds and asks wrangler to validate each upload without publishing
 * (`wrangler deploy --dry-run`), writing wrangler's output under .data/deploy-dry-run/.
 */
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { unstable_readConfig } from 'wrangler'
import { writeCryptoLibraries } from './crypto-libraries.ts'
import { type BundleDigest, bundleDigest, bundleWorker, ROOT, workerConfigPaths } from './workers.ts'

const FIRST = 'svc-metering'
const BEFORE_LAST = 'svc-platform'
const LAST = 'svc-gateway'

const dryRun = process.argv.includes('--dry-run')
const buildDir = path.join(ROOT, '.data', 'deploy')

writeCryptoLibraries()
const workers: { name: string; configPath: string; bundle: string; digest: BundleDigest }[] = []
for (const configPath of workerConfigPaths()) {
  const config = unstable_readConfig({ config: path.join(ROOT, configPath) })
  if (!config.name || !config.main) throw new Error(`${configPath}: name and main are required`)
  const bundle = path.join(buildDir, config.name, 'index.js')
  await bundleWorker(config.main, bundle)
  workers.push({ name: config.name, configPath, bundle, digest: bundleDigest(config.name, bundle) })
}
const rank = (name: string) => (name === FIRST ? 0 : name === BEFORE_LAST ? 2 : name === LAST ? 3 : 1)
workers.sort((a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name))
const deployedBundles = JSON.stringify(workers.map((w) => w.digest))

for (const worker of workers) {
  const args = ['wrangler', 'deploy', '-c', worker.configPath, '--no-bundle', worker.bundle]
  if (worker.name === BEFORE_LAST) args.push('--var', `DEPLOYED_BUNDLES:${deployedBundles}`)
  if (dryRun) args.push('--dry-run', '--outdir', path.join(ROOT, '.data', 'deploy-dry-run', worker.name))
  console.log(
    `${dryRun ? 'checking' : 'deploying'} ${worker.name} (sha256 ${worker.digest.sha256.slice(0, 16)}…)`,
  )
  const result = spawnSync('npx', args, { cwd: ROOT, stdio: 'inherit' })
  if (result.status !== 0) {
    console.error(`wrangler deploy failed for ${worker.name} (exit ${result.status})`)
    process.exit(result.status ?? 1)
  }
}
