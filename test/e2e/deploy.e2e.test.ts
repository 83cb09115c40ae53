/**
 * `npm run deploy -- --dry-run`: every worker passes wrangler's own upload validation, and what
 * wrangler would upload is byte for byte the bundle whose digest the platform worker attests.
 * Without PUBLIC_BASE_URL it refuses before building anything.
 * Runs once, on PGlite (vitest.config.ts): it builds, it does not need the database.
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, inject, it } from 'vitest'
import { unstable_readConfig } from 'wrangler'
import { ROOT, workerConfigPaths } from '../../scripts/workers.ts'

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex')

/** `npm run deploy -- --dry-run` with `env` over this process's environment (undefined: unset). */
async function dryRun(
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; output: string }> {
  const merged: NodeJS.ProcessEnv = { ...process.env, CI: 'true', ...env }
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete merged[k]
  const child = spawn('npx', ['tsx', 'scripts/deploy.ts', '--dry-run'], { cwd: ROOT, env: merged })
  let output = ''
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString()
  })
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString()
  })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, output }
}

describe.runIf(inject('stack').kind === 'pglite')('npm run deploy -- --dry-run', () => {
  it('refuses to deploy without PUBLIC_BASE_URL, before building anything', { timeout: 60_000 }, async () => {
    const { code, output } = await dryRun({ PUBLIC_BASE_URL: undefined })
    expect(code, output).toBe(1)
    expect(output).toContain('PUBLIC_BASE_URL is not set')
    expect(output).not.toContain('checking ')
    const insecure = await dryRun({ PUBLIC_BASE_URL: 'http://api.example.test' })
    expect(insecure.code, insecure.output).toBe(1)
    expect(insecure.output).toContain('must be an absolute https URL')
  })

  it('validates every worker with wrangler and uploads exactly the attested bundles', {
    timeout: 300_000,
  }, async () => {
    const { code, output } = await dryRun({ PUBLIC_BASE_URL: 'https://api.example.test' })
    expect(code, output).toBe(0)
    expect(output).toContain('PUBLIC_BASE_URL https://api.example.test (from the environment)')

    const names = workerConfigPaths().map((p) => unstable_readConfig({ config: path.join(ROOT, p) }).name!)
    expect(names.length).toBeGreaterThan(5)
    for (const name of names) {
      expect(output).toContain(`checking ${name} (sha256 `)
      const attested = sha256(path.join(ROOT, '.data', 'deploy', name, 'index.js'))
      expect(output).toContain(`checking ${name} (sha256 ${attested.slice(0, 16)}`)
      expect(sha256(path.join(ROOT, '.data', 'deploy-dry-run', name, 'index.js'))).toBe(attested)
    }
    // The platform worker is given the list (wrangler prints the binding, value hidden), the
    // gateway its public base URL.
    expect(output).toContain('env.DEPLOYED_BUNDLES')
    expect(output).toContain('env.PUBLIC_BASE_URL')
    expect(output.indexOf('checking svc-metering')).toBeLessThan(output.indexOf('checking svc-chat'))
    expect(output.indexOf('checking svc-platform')).toBeLessThan(output.indexOf('checking svc-gateway'))
  })
})
