/**
 * `npm run deploy [-- --dry-run]`: deploys every worker to Cloudflare with the exact bundles whose
 * digests the platform worker attests. Each worker is bundled once here (the same esbuild build
 * `npm start` runs), hashed, and uploaded as is (`wrangler deploy --no-bundle`); the platform
 * worker gets the list as DEPLOYED_BUNDLES, so the attestation's `worker:<name>` subjects name
 * the uploaded code. Order (scripts/deploy-plan.ts): every worker after the workers it binds, the
 * gateway last. Every digest is known before the first upload, so the order does not depend on it.
 *
 * `--bootstrap` is for a fresh account, where no worker exists yet: each cycle in the bindings is
 * broken by uploading a worker without its bindings to missing scripts first, then again whole.
 * `--dry-run` builds and asks wrangler to validate each upload without publishing
 * (`wrangler deploy --dry-run`), writing wrangler's output under .data/deploy-dry-run/.
 *
 * PUBLIC_BASE_URL is required (from the environment, given to the gateway as a var, or the
 * gateway's wrangler.toml `[vars]`): without it nothing is built or uploaded (exit 1).
 */
import { spawnSync } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { unstable_readConfig } from 'wrangler'
import { writeCryptoLibraries } from './crypto-libraries.ts'
import { deploymentPublicBaseUrl, planDeploy, readConfigBindings, withoutBindings } from './deploy-plan.ts'
import { type BundleDigest, bundleDigest, bundleWorker, ROOT, workerConfigPaths } from './workers.ts'

const ATTESTING = 'svc-platform'
const LAST = 'svc-gateway'

const dryRun = process.argv.includes('--dry-run')
const bootstrap = process.argv.includes('--bootstrap')
const buildDir = path.join(ROOT, '.data', 'deploy')

let publicBaseUrl: ReturnType<typeof deploymentPublicBaseUrl>
try {
  const gateway = unstable_readConfig({ config: path.join(ROOT, 'wrangler.toml') })
  if (gateway.name !== LAST) throw new Error(`wrangler.toml names ${gateway.name}, not ${LAST}`)
  publicBaseUrl = deploymentPublicBaseUrl(process.env, gateway.vars)
} catch (err) {
  console.error(`npm run deploy: ${err instanceof Error ? err.message : String(err)}`)
  process.exit(1)
}
console.log(`PUBLIC_BASE_URL ${publicBaseUrl.url} (from the ${publicBaseUrl.from})`)

writeCryptoLibraries()
const workers: { name: string; configPath: string; bundle: string; digest: BundleDigest }[] = []
for (const configPath of workerConfigPaths()) {
  const config = unstable_readConfig({ config: path.join(ROOT, configPath) })
  if (!config.name || !config.main) throw new Error(`${configPath}: name and main are required`)
  const bundle = path.join(buildDir, config.name, 'index.js')
  await bundleWorker(config.main, bundle)
  workers.push({ name: config.name, configPath, bundle, digest: bundleDigest(config.name, bundle) })
}
const deployedBundles = JSON.stringify(workers.map((w) => w.digest))
const steps = planDeploy(
  workers.map((w) => readConfigBindings(path.join(ROOT, w.configPath))),
  { bootstrap, last: LAST },
)

for (const step of steps) {
  const worker = workers.find((w) => w.name === step.name)!
  let configPath = worker.configPath
  if (step.omit.length > 0) {
    // Beside the original, so the paths it names resolve the same way.
    configPath = path.join(path.dirname(worker.configPath), '.wrangler.bootstrap.toml')
    writeFileSync(
      path.join(ROOT, configPath),
      withoutBindings(readFileSync(path.join(ROOT, worker.configPath), 'utf8'), step.omit),
    )
  }
  const args = ['wrangler', 'deploy', '-c', configPath, '--no-bundle', worker.bundle]
  if (worker.name === ATTESTING) args.push('--var', `DEPLOYED_BUNDLES:${deployedBundles}`)
  if (worker.name === LAST && publicBaseUrl.from === 'environment')
    args.push('--var', `PUBLIC_BASE_URL:${publicBaseUrl.url}`)
  if (dryRun) args.push('--dry-run', '--outdir', path.join(ROOT, '.data', 'deploy-dry-run', worker.name))
  console.log(
    `${dryRun ? 'checking' : 'deploying'} ${worker.name} (sha256 ${worker.digest.sha256.slice(0, 16)}…)` +
      (step.omit.length > 0 ? ` without ${step.omit.join(', ')} until their workers exist` : ''),
  )
  const result = spawnSync('npx', args, { cwd: ROOT, stdio: 'inherit' })
  if (configPath !== worker.configPath) rmSync(path.join(ROOT, configPath))
  if (result.status !== 0) {
    console.error(`wrangler deploy failed for ${worker.name} (exit ${result.status})`)
    process.exit(result.status ?? 1)
  }
}
