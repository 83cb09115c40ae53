/**
 * `npm run deploy -- --dry-run`: every worker passes wrangler's own upload validation, and what
 * wrangler would upload is byte for byte the bundle whose digest the platform worker attests.
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

describe.runIf(inject('stack').kind === 'pglite')('npm run deploy -- --dry-run', () => {
  it('validates every worker with wrangler and uploads exactly the attested bundles', {
    timeout: 300_000,
  }, async () => {
    const child = spawn('npx', ['tsx', 'scripts/deploy.ts', '--dry-run'], {
      cwd: ROOT,
      env: { ...process.env, CI: 'true' },
    })
    let output = ''
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString()
    })
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(code, output).toBe(0)

    const names = workerConfigPaths().map((p) => unstable_readConfig({ config: path.join(ROOT, p) }).name!)
    expect(names.length).toBeGreaterThan(5)
    for (const name of names) {
      expect(output).toContain(`checking ${name} (sha256 `)
      const attested = sha256(path.join(ROOT, '.data', 'deploy', name, 'index.js'))
      expect(output).toContain(`checking ${name} (sha256 ${attested.slice(0, 16)}`)
      expect(sha256(path.join(ROOT, '.data', 'deploy-dry-run', name, 'index.js'))).toBe(attested)
    }
    // The platform worker is given the list (wrangler prints the binding, value hidden).
    expect(output).toContain('env.DEPLOYED_BUNDLES')
    expect(output.indexOf('checking svc-metering')).toBeLessThan(output.indexOf('checking svc-chat'))
    expect(output.indexOf('checking svc-platform')).toBeLessThan(output.indexOf('checking svc-gateway'))
  })
})
