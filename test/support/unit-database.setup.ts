/**
 * Global setup of the `unit-db` project: starts unit-database.ts in its own Node process (this
 * project's module loader resolves packages for workerd, not Node) and hands its connection to
 * the tests as the DATABASE_URL and DATABASE_WS_PROXY bindings (vitest.config.ts).
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import type { DatabaseEnv } from '../../shared/db/client.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    unitDatabase: Required<DatabaseEnv>
  }
}

const ROOT = path.resolve(import.meta.dirname, '../..')

export default async function setup(project: TestProject) {
  const child = spawn(path.join(ROOT, 'node_modules/.bin/tsx'), ['test/support/unit-database.ts'], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const env = await new Promise<Required<DatabaseEnv>>((resolve, reject) => {
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const line = output.split('\n', 2)
      if (line.length === 2) resolve(JSON.parse(line[0]!) as Required<DatabaseEnv>)
    })
    child.once('exit', (code) => reject(new Error(`the unit-test database exited with ${code}`)))
  })
  project.provide('unitDatabase', env)
  return async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.stdin.end()
    await exited
  }
}
